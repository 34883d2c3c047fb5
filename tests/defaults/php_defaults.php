<?php
// php-memcached's side of cli/tests/defaults_live.rs, at its default placement.
//
//   php php_defaults.php [--binary] write|read HOST:PORT:WEIGHT...
//
// `new Memcached()` with no option set (checked: OPT_DISTRIBUTION is DISTRIBUTION_MODULA and
// OPT_HASH is HASH_DEFAULT, libmemcached's defaults), then addServer(host, port, weight) in the
// order given. With --binary, one option: OPT_BINARY_PROTOCOL (the wire, not placement), under
// which php-memcached takes keys with bytes >= 0x80; on the text protocol, its default, its key
// check refuses them ("A BAD KEY WAS PROVIDED/CHARACTERS OUT OF RANGE").
// stdin: one key per line, `KEYHEX VALUEHEX` (write) or `KEYHEX` (read); stdout, one line per key
// in the same order: `KEYHEX ok`, `KEYHEX hit VALUEHEX`, `KEYHEX miss` or `KEYHEX error MESSAGE`.
// Values are PHP strings: stored raw, flags 0 (type string).
declare(strict_types=1);
error_reporting(E_ALL);

$args = array_slice($argv, 1);
$binary = ($args[0] ?? '') === '--binary';
if ($binary) {
    array_shift($args);
}
if (count($args) < 2 || !in_array($args[0], ['write', 'read'], true)) {
    fwrite(STDERR, "usage: php php_defaults.php [--binary] write|read HOST:PORT:WEIGHT...\n");
    exit(2);
}
$mode = array_shift($args);
$m = new Memcached();
if ($m->getOption(Memcached::OPT_DISTRIBUTION) !== Memcached::DISTRIBUTION_MODULA
    || $m->getOption(Memcached::OPT_HASH) !== Memcached::HASH_DEFAULT) {
    fwrite(STDERR, "php-memcached's defaults are not modula / one-at-a-time here\n");
    exit(2);
}
if ($binary && !$m->setOption(Memcached::OPT_BINARY_PROTOCOL, true)) {
    fwrite(STDERR, "setOption(OPT_BINARY_PROTOCOL): " . $m->getResultMessage() . "\n");
    exit(2);
}
foreach ($args as $spec) {
    [$host, $port, $weight] = explode(':', $spec);
    if (!$m->addServer($host, (int)$port, (int)$weight)) {
        fwrite(STDERR, "addServer($spec): " . $m->getResultMessage() . "\n");
        exit(2);
    }
}
$in = fopen('php://stdin', 'rb');
while (($line = fgets($in)) !== false) {
    $f = explode(' ', rtrim($line, "\n"));
    $key = hex2bin($f[0]);
    if ($mode === 'write') {
        $ok = $m->set($key, hex2bin($f[1]));
        echo $f[0], $ok ? ' ok' : ' error ' . $m->getResultMessage(), "\n";
        continue;
    }
    $v = $m->get($key);
    if ($m->getResultCode() === Memcached::RES_NOTFOUND) {
        echo $f[0], " miss\n";
    } elseif ($m->getResultCode() !== Memcached::RES_SUCCESS) {
        echo $f[0], ' error ', $m->getResultMessage(), "\n";
    } elseif (!is_string($v)) {
        echo $f[0], ' error not a string: ', get_debug_type($v), "\n";
    } else {
        echo $f[0], ' hit ', bin2hex($v), "\n";
    }
}

<?php
// php-memcached's side of cli/tests/detect_live.rs: write keys as the peer places them.
//
//     php php_detect.php default|ketama HOST:PORT:WEIGHT...
//
// default: `new Memcached()` with no option (libmemcached's modula, one-at-a-time);
// ketama: setOption(OPT_LIBKETAMA_COMPATIBLE, true) (ketama weighted, md5). stdin: one key per
// line; each is set to a string, an int or an array in turn (flags as php-memcached stores
// them). Prints `ok N`; any failure exits 1.
[$_, $mode] = $argv;
$m = new Memcached();
if ($mode === 'ketama' && !$m->setOption(Memcached::OPT_LIBKETAMA_COMPATIBLE, true)) {
    fwrite(STDERR, "setOption(OPT_LIBKETAMA_COMPATIBLE) failed\n");
    exit(1);
}
foreach (array_slice($argv, 2) as $spec) {
    [$host, $port, $weight] = explode(':', $spec);
    $m->addServer($host, (int)$port, (int)$weight);
}
$n = 0;
while (($line = fgets(STDIN)) !== false) {
    $key = rtrim($line, "\r\n");
    $value = [$key, $n, [$n, 'x']][$n % 3];
    if (!$m->set($key, $value)) {
        fwrite(STDERR, "set $key: " . $m->getResultMessage() . "\n");
        exit(1);
    }
    $n++;
}
echo "ok $n\n";

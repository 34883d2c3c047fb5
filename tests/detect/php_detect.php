<?php
// php-memcached's side of cli/tests/detect_live.rs: write keys as the peer places them, or
// read back the keys memshard wrote.
//
//     [DETECT_ACTION=read] php php_detect.php default|ketama HOST:PORT:WEIGHT...
//
// default: `new Memcached()` with no option (libmemcached's modula, one-at-a-time);
// ketama: setOption(OPT_LIBKETAMA_COMPATIBLE, true) (ketama weighted, md5). stdin: one key per
// line. Writing (the default): each key is set to a string, an int or an array in turn (flags
// as php-memcached stores them). DETECT_ACTION=read: the Nth key (from 0) must hold the key
// itself as a string, the int N or the int 2^32+N in turn, each of exactly that type; the
// first miss or wrong value is printed on stderr. Prints `ok N`; any failure exits 1.
[$_, $mode] = $argv;
$read = getenv('DETECT_ACTION') === 'read';
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
    if ($read) {
        $want = [$key, $n, 4294967296 + $n][$n % 3];
        $got = $m->get($key);
        if ($got !== $want) {
            fwrite(STDERR, "get $key: " . var_export($got, true) . " ("
                . $m->getResultMessage() . "), want " . var_export($want, true) . "\n");
            exit(1);
        }
    } else {
        $value = [$key, $n, [$n, 'x']][$n % 3];
        if (!$m->set($key, $value)) {
            fwrite(STDERR, "set $key: " . $m->getResultMessage() . "\n");
            exit(1);
        }
    }
    $n++;
}
echo "ok $n\n";

<?php
// php_route.php --servers FILE [--hash OPT]  < keys  ->  KEY<TAB>ADDR per key, from php-memcached's getServerByKey().
// No option is set except, with --hash, Memcached::OPT_HASH (OPT = a Memcached::HASH_* constant name, or a
// libmemcached hashkit_hash_algorithm_t number for the algorithms php-memcached has no constant for).
// So OPT_DISTRIBUTION stays at its default, DISTRIBUTION_MODULA. Then addServers([[host, port, weight], ...])
// (IPv6 hosts without brackets). No server is contacted.
$opts = getopt("", ["servers:", "hash:"]);
$addr = []; $list = [];
foreach (file($opts["servers"], FILE_IGNORE_NEW_LINES) as $line) {
    $line = trim($line);
    if ($line === "" || $line[0] === "#") continue;
    $t = preg_split('/\s+/', $line);
    $w = isset($t[1]) ? (int)$t[1] : 1;
    if ($t[0][0] === "[") {
        $end = strpos($t[0], "]");
        $host = substr($t[0], 1, $end - 1); $port = (int)substr($t[0], $end + 2);
    } else {
        $p = strrpos($t[0], ":");
        $host = substr($t[0], 0, $p); $port = (int)substr($t[0], $p + 1);
    }
    $list[] = [$host, $port, $w];
    $addr["$host\0$port"] = $t[0];
}
$m = new Memcached();
if ($m->getOption(Memcached::OPT_DISTRIBUTION) !== Memcached::DISTRIBUTION_MODULA) { fwrite(STDERR, "default distribution is not modula\n"); exit(2); }
if (isset($opts["hash"])) {
    $h = ctype_digit($opts["hash"]) ? (int)$opts["hash"] : constant("Memcached::" . $opts["hash"]);
    if (!$m->setOption(Memcached::OPT_HASH, $h) || $m->getOption(Memcached::OPT_HASH) !== $h) {
        fwrite(STDERR, "setOption(OPT_HASH, {$opts['hash']}) failed\n"); exit(2);
    }
}
if (!$m->addServers($list)) { fwrite(STDERR, "addServers failed: " . $m->getResultMessage() . "\n"); exit(2); }
$in = fopen("php://stdin", "rb");
while (($line = fgets($in)) !== false) {
    $key = rtrim($line, "\n");
    $s = $m->getServerByKey($key);
    if ($s === false) { fwrite(STDERR, "getServerByKey failed for $key: " . $m->getResultMessage() . "\n"); exit(3); }
    echo $key, "\t", $addr[$s["host"] . "\0" . $s["port"]], "\n";
}

<?php
// php_route.php --servers FILE  < keys   ->  KEY<TAB>ADDR per key, from php-memcached's getServerByKey().
// Memcached::OPT_LIBKETAMA_COMPATIBLE=true is set first, then addServers([[host, port, weight], ...]).
// IPv6 hosts are handed over without brackets. No server is contacted.
$opts = getopt("", ["servers:"]);
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
if (!$m->setOption(Memcached::OPT_LIBKETAMA_COMPATIBLE, true)) { fwrite(STDERR, "setOption failed\n"); exit(2); }
if (!$m->addServers($list)) { fwrite(STDERR, "addServers failed: " . $m->getResultMessage() . "\n"); exit(2); }
$in = fopen("php://stdin", "rb");
while (($line = fgets($in)) !== false) {
    $key = rtrim($line, "\n");
    $s = $m->getServerByKey($key);
    if ($s === false) { fwrite(STDERR, "getServerByKey failed for $key: " . $m->getResultMessage() . "\n"); exit(3); }
    echo $key, "\t", $addr[$s["host"] . "\0" . $s["port"]], "\n";
}

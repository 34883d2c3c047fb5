<?php
// php-memcached side of tests/interop_live.rs.
//
//   php php_driver.php set SERVERS IN OUT   IN: HEXKEY<TAB>HEXVALUE lines; each pair is set();
//                                           OUT: the hex keys whose set failed.
//   php php_driver.php get SERVERS IN OUT   IN: HEXKEY lines (anything after a TAB is ignored);
//                                           getMulti(); OUT: HEXKEY<TAB>HEXVALUE per hit.
//
// SERVERS: "HOST PORT WEIGHT" lines. Each client is `new Memcached()`, then
// setOption(OPT_LIBKETAMA_COMPATIBLE, true), then addServers([[host, port, weight], ...])
// (see compat-vectors/php-memcached/README.md).
//
// php-memcached refuses keys with bytes >= 0x80 on the text protocol ("A BAD KEY WAS
// PROVIDED/CHARACTERS OUT OF RANGE": its ASCII key check uses isgraph()), so UTF-8 keys go
// through a second, otherwise identical client with OPT_BINARY_PROTOCOL on. Placement does not
// depend on the protocol.
[, $mode, $serversPath, $inPath, $outPath] = $argv;
$list = [];
foreach (file($serversPath, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) as $line) {
    $t = preg_split('/\s+/', trim($line));
    $list[] = [$t[0], (int)$t[1], (int)$t[2]];
}
function client(array $list, bool $binary): Memcached {
    $m = new Memcached();
    if (!$m->setOption(Memcached::OPT_LIBKETAMA_COMPATIBLE, true)) {
        fwrite(STDERR, "setOption(OPT_LIBKETAMA_COMPATIBLE) failed\n");
        exit(2);
    }
    if ($binary && !$m->setOption(Memcached::OPT_BINARY_PROTOCOL, true)) {
        fwrite(STDERR, "setOption(OPT_BINARY_PROTOCOL) failed\n");
        exit(2);
    }
    if (!$m->addServers($list)) {
        fwrite(STDERR, "addServers failed: " . $m->getResultMessage() . "\n");
        exit(2);
    }
    return $m;
}
$text = client($list, false);
$binary = client($list, true);
$pick = fn(string $k): Memcached => preg_match('/[\x80-\xff]/', $k) ? $binary : $text;

$pairs = [];
foreach (file($inPath, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) as $line) {
    $t = explode("\t", $line);
    $pairs[] = [hex2bin($t[0]), isset($t[1]) ? hex2bin($t[1]) : ""];
}
$out = fopen($outPath, "wb");
if ($mode === "set") {
    foreach ($pairs as [$k, $v]) {
        $m = $pick($k);
        if (!$m->set($k, $v)) {
            fwrite(STDERR, "set " . bin2hex($k) . ": " . $m->getResultMessage() . "\n");
            fwrite($out, bin2hex($k) . "\n");
        }
    }
} elseif ($mode === "get") {
    $groups = [[], []];
    foreach ($pairs as [$k, $_]) {
        $groups[$pick($k) === $binary ? 1 : 0][] = $k;
    }
    foreach ([[$text, $groups[0]], [$binary, $groups[1]]] as [$m, $keys]) {
        if (!$keys) continue;
        $got = $m->getMulti($keys);
        if ($got === false) {
            fwrite(STDERR, "getMulti failed: " . $m->getResultMessage() . "\n");
            exit(3);
        }
        foreach ($got as $k => $v) {
            // integer-like keys become int array keys in PHP; every key here has a prefix
            if (!is_string($v)) {
                fwrite(STDERR, "value of $k is " . gettype($v) . ", not a string\n");
                exit(3);
            }
            fwrite($out, bin2hex((string)$k) . "\t" . bin2hex($v) . "\n");
        }
    }
} else {
    fwrite(STDERR, "unknown mode $mode\n");
    exit(2);
}
fclose($out);

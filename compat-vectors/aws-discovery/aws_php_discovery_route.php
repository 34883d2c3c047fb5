<?php
// Drives the AWS ElastiCache Cluster Client for PHP (php-memcached fork + the AWS libmemcached fork) in
// DYNAMIC client mode. Run with ONLY that extension loaded:
//   php -n -d extension=/path/to/memcached.so aws_php_discovery_route.php modula|ketama CFG_HOST CFG_PORT LIBDIR [--set]
//       < keys > out.tsv
// Set-up (options before addServer, as the AWS README's dynamic-mode example does):
//   $m = new Memcached();
//   $m->setOption(Memcached::OPT_CLIENT_MODE, Memcached::DYNAMIC_CLIENT_MODE);
//   ketama only: $m->setOption(Memcached::OPT_LIBKETAMA_COMPATIBLE, true);
//   $m->addServer(CFG_HOST, CFG_PORT);   // libmemcached sends "config get cluster " to it and adds the nodes
// Prints per key line "KEY<TAB>host:port" from getServerByKey(KEY) (fields: host = the node's HOSTNAME field of
// the discovery reply, "localhost" when that field is empty; port; weight, always 0). The caller maps it to the
// node's IP. getServerByKey (memcached_server_by_key -> memcached_generate_hash) needs no live node.
// stderr: the loaded libmemcached (from /proc/self/maps, must be under LIBDIR), the options, getServerList().
// --set: afterwards stores every key (set(KEY) and setByKey(KEY, "probe:<n>"), see below) so that the caller
// can see which memcached process, i.e. which IP:port, received it.
if ($argc < 5) { fwrite(STDERR, "usage: modula|ketama CFG_HOST CFG_PORT LIBDIR [--set]\n"); exit(2); }
list(, $mode, $cfgHost, $cfgPort, $libdir) = $argv;
$doSet = ($argc > 5 && $argv[5] === '--set');

$ext = array_values(array_filter(get_loaded_extensions(), function ($e) { return stripos($e, 'memcache') !== false; }));
if ($ext !== ['memcached']) { fwrite(STDERR, "unexpected extensions: " . implode(',', $ext) . "\n"); exit(2); }
$maps = file_get_contents('/proc/self/maps');
preg_match_all('~\s(/\S*libmemcached\.so[^\s]*)~', $maps, $mm);
$libs = array_values(array_unique($mm[1]));
foreach ($libs as $l) {
    if (strpos(realpath($l), realpath($libdir) . '/') !== 0) { fwrite(STDERR, "wrong libmemcached loaded: $l\n"); exit(2); }
}
if (!$libs) { fwrite(STDERR, "no libmemcached mapped\n"); exit(2); }
fwrite(STDERR, "libmemcached: " . implode(' ', $libs) . "\n");

$m = new Memcached();
if (!$m->setOption(Memcached::OPT_CLIENT_MODE, Memcached::DYNAMIC_CLIENT_MODE)) { fwrite(STDERR, "OPT_CLIENT_MODE failed\n"); exit(2); }
if ($mode === 'ketama') {
    if (!$m->setOption(Memcached::OPT_LIBKETAMA_COMPATIBLE, true)) { fwrite(STDERR, "OPT_LIBKETAMA_COMPATIBLE failed\n"); exit(2); }
} elseif ($mode !== 'modula') {
    fwrite(STDERR, "mode $mode\n"); exit(2);
}
if (!$m->addServer($cfgHost, (int)$cfgPort)) {
    fwrite(STDERR, "DISCOVERY-FAILED addServer: " . $m->getResultCode() . " " . $m->getResultMessage() . "\n"); exit(3);
}
fwrite(STDERR, sprintf("options: client_mode=%d distribution=%d hash=%d libketama_compatible=%d\n",
    $m->getOption(Memcached::OPT_CLIENT_MODE), $m->getOption(Memcached::OPT_DISTRIBUTION),
    $m->getOption(Memcached::OPT_HASH), (int)$m->getOption(Memcached::OPT_LIBKETAMA_COMPATIBLE)));
$list = $m->getServerList();
if (!$list) { fwrite(STDERR, "DISCOVERY-FAILED: empty server list\n"); exit(3); }
foreach ($list as $s) {
    fwrite(STDERR, "server " . json_encode($s) . "\n");
}

$keys = [];
while (($line = fgets(STDIN)) !== false) {
    $keys[] = rtrim($line, "\n");
}
$shown = false;
$out = '';
foreach ($keys as $k) {
    $s = $m->getServerByKey($k);
    if ($s === false) { fwrite(STDERR, "getServerByKey failed for " . json_encode($k) . ": " . $m->getResultMessage() . "\n"); exit(1); }
    if (!$shown) { fwrite(STDERR, "getServerByKey fields: " . json_encode($s) . "\n"); $shown = true; }
    $out .= $k . "\t" . $s['host'] . ':' . $s['port'] . "\n";
}
echo $out;
if ($doSet) {
    // 1) set(KEY) as an application would. The PHP extension itself refuses (BAD KEY, nothing sent) keys with
    //    a byte that is not isgraph() in text-protocol mode (s_memc_valid_key_ascii), i.e. every non-ASCII key.
    // 2) setByKey(KEY, "probe:<n>", "1") (n = 0-based line number) for EVERY key: libmemcached routes a by-key call by its
    //    server key (memcached_send -> memcached_generate_hash_with_redistribution(group_key)), exactly as
    //    set(KEY) routes by KEY (memcached_set = memcached_send(key, key, ...)); the extension does not check the
    //    server key, so the probe shows where KEY goes even for the keys that set() refuses.
    $stored = 0; $refused = 0;
    foreach ($keys as $i => $k) {
        if ($m->set($k, "1")) {
            $stored++;
        } elseif ($m->getResultCode() == Memcached::RES_BAD_KEY_PROVIDED) {
            $refused++;
        } else {
            fwrite(STDERR, "set failed: " . json_encode($k) . " " . $m->getResultMessage() . "\n"); exit(4);
        }
        if (!$m->setByKey($k, "probe:$i", "1")) {
            fwrite(STDERR, "setByKey failed: " . json_encode($k) . " " . $m->getResultMessage() . "\n"); exit(4);
        }
    }
    fwrite(STDERR, "set: $stored stored, $refused refused by the client (BAD KEY); setByKey: " . count($keys) . " stored\n");
}

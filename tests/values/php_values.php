<?php
// php-memcached's side of cli/tests/values_live.rs.
//
//   php php_values.php write HOST:PORT        store the matrix (keys php:<case>), print each value
//   php php_values.php read HOST:PORT KEY...  get each key, print what php-memcached got
//   php php_values.php incr HOST:PORT KEY     increment KEY by 1, then get it
//
// One JSON object per line, in memshard's `get --json` convention: {"key","type","value"} with
// type string (valid UTF-8) / bytes (lowercase hex) / int / float (a JSON number, or "Infinity",
// "-Infinity", "NaN") / bool / null / json, plus "class" (get_debug_type). `write` adds
// "peer_reads_back" when php-memcached's own get returns something else than it stored.
// Settings: the Debian defaults (serializer php from memcached.ini, FastLZ, threshold 2000,
// factor 1.3) unless a case says otherwise.
declare(strict_types=1);
error_reporting(E_ALL);

function usage(): never
{
    fwrite(STDERR, "usage: php php_values.php write|read|incr HOST:PORT [KEY...]\n");
    exit(2);
}
if ($argc < 3) {
    usage();
}
[$mode, $addr] = [$argv[1], $argv[2]];
[$host, $port] = explode(':', $addr, 2) + [1 => ''];
if ($port === '' || !ctype_digit($port)) {
    usage();
}

function client(array $opts = []): Memcached
{
    global $host, $port;
    $m = new Memcached();
    $m->addServer($host, (int) $port);
    foreach ($opts as $k => $v) {
        if (!$m->setOption($k, $v)) {
            fwrite(STDERR, "setOption($k) refused\n");
            exit(1);
        }
    }
    return $m;
}

// The first n bytes of "line 000000: the quick brown fox jumps over the lazy dog\n" ...
// (compressible, as value-vectors/php-memcached/generate.php's text()).
function text(int $n): string
{
    $s = '';
    for ($i = 0; strlen($s) < $n; $i++) {
        $s .= sprintf("line %06d: the quick brown fox jumps over the lazy dog\n", $i);
    }
    return substr($s, 0, $n);
}

/** @return array<string, mixed> type and value in the CLI's convention, and the PHP class */
function render(mixed $v): array
{
    $r = ['class' => get_debug_type($v)];
    if (is_string($v)) {
        return $r + (preg_match('//u', $v) === 1
            ? ['type' => 'string', 'value' => $v]
            : ['type' => 'bytes', 'value' => bin2hex($v)]);
    }
    if (is_int($v)) {
        return $r + ['type' => 'int', 'value' => $v];
    }
    if (is_float($v)) {
        if (is_nan($v)) {
            return $r + ['type' => 'float', 'value' => 'NaN'];
        }
        if (is_infinite($v)) {
            return $r + ['type' => 'float', 'value' => $v > 0 ? 'Infinity' : '-Infinity'];
        }
        return $r + ['type' => 'float', 'value' => $v];
    }
    if (is_bool($v)) {
        return $r + ['type' => 'bool', 'value' => $v];
    }
    if ($v === null) {
        return $r + ['type' => 'null', 'value' => null];
    }
    // arrays (lists as JSON arrays, others as objects) and stdClass (JSON maps)
    return $r + ['type' => 'json', 'value' => $v];
}

function out(array $line): void
{
    // serialize_precision -1 (PHP's default): the shortest text that reads back as the same
    // double; PRESERVE_ZERO_FRACTION keeps 2.0 and -0.0 floats.
    $json = json_encode($line, JSON_PRESERVE_ZERO_FRACTION | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
    if ($json === false) {
        fwrite(STDERR, 'json_encode: ' . json_last_error_msg() . "\n");
        exit(1);
    }
    echo $json, "\n";
}

// One client per distinct settings; every client reads with the defaults.
$zlib = [Memcached::OPT_COMPRESSION_TYPE => Memcached::COMPRESSION_ZLIB];
$igbinary = [Memcached::OPT_SERIALIZER => Memcached::SERIALIZER_IGBINARY];
$msgpack = [Memcached::OPT_SERIALIZER => Memcached::SERIALIZER_MSGPACK];
$json = [Memcached::OPT_SERIALIZER => Memcached::SERIALIZER_JSON];
$list = [1, 'two', true, null];
$map = ['a' => 1, 'b' => 'two', 'c' => [1, 2]];

if ($mode === 'write') {
    $cases = [
        ['str_ascii', 'hello world', []],
        ['str_utf8', "h\u{e9}llo w\u{f6}rld \u{2713} \u{65e5}\u{672c}\u{8a9e} \u{1f680}", []],
        ['str_empty', '', []],
        ['bytes', "\x00\xff\x80\xfe\x7f", []],
        // memcached.compression_threshold 2000: compressed from 2000 bytes on (php_memcached.c:1083)
        ['str_1999', text(1999), []],
        ['str_2000', text(2000), []],
        ['str_2001', text(2001), []],
        ['str_2000_zlib', text(2000), $zlib],
        ['str_100k', text(100000), []],
        ['int_neg', -42, []],
        ['int_zero', 0, []],
        ['int_max', PHP_INT_MAX, []],
        ['int_min', PHP_INT_MIN, []],
        ['float_pi', 3.14, []],
        ['float_neg_zero', -0.0, []],
        ['float_1e100', 1e100, []],
        ['float_inf', INF, []],
        ['float_neg_inf', -INF, []],
        ['float_nan', NAN, []],
        ['bool_true', true, []],
        ['bool_false', false, []],
        ['null', null, []],
        ['list', $list, []],
        ['map', $map, []],
        ['list_igbinary', $list, $igbinary],
        ['map_igbinary', $map, $igbinary],
        ['list_json', $list, $json],
        ['map_json', $map, $json],
        ['list_msgpack', $list, $msgpack],
        ['map_msgpack', $map, $msgpack],
    ];
    $reader = client();
    foreach ($cases as [$case, $value, $opts]) {
        $key = "php:$case";
        $m = client($opts);
        if (!$m->set($key, $value)) {
            out(['key' => $key, 'error' => 'set: ' . $m->getResultMessage()] + render($value));
            continue;
        }
        $line = ['key' => $key] + render($value);
        $back = $reader->get($key);
        if ($reader->getResultCode() !== Memcached::RES_SUCCESS) {
            $line['peer_reads_back'] = ['error' => $reader->getResultMessage()];
        } else {
            $r = render($back);
            $enc = fn(array $x) => json_encode([$x['type'], $x['value']], JSON_PRESERVE_ZERO_FRACTION);
            $same = $enc($r) === $enc($line);
            if (!$same) {
                $line['peer_reads_back'] = $r;
            }
        }
        out($line);
    }
} elseif ($mode === 'read') {
    $m = client();
    foreach (array_slice($argv, 3) as $key) {
        $v = $m->get($key);
        $rc = $m->getResultCode();
        if ($rc === Memcached::RES_NOTFOUND) {
            out(['key' => $key, 'miss' => true]);
        } elseif ($rc !== Memcached::RES_SUCCESS) {
            out(['key' => $key, 'error' => $m->getResultMessage()]);
        } else {
            out(['key' => $key] + render($v));
        }
    }
} elseif ($mode === 'incr' && $argc === 4) {
    $key = $argv[3];
    $m = client();
    $n = $m->increment($key, 1);
    if ($n === false) {
        out(['key' => $key, 'error' => 'increment: ' . $m->getResultMessage()]);
        exit(0);
    }
    $v = $m->get($key);
    if ($m->getResultCode() !== Memcached::RES_SUCCESS) {
        out(['key' => $key, 'error' => 'get: ' . $m->getResultMessage()]);
        exit(0);
    }
    out(['key' => $key, 'incremented' => $n] + render($v));
} else {
    usage();
}

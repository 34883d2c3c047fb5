<?php
// Captures what php-memcached really stores (flags + payload bytes, read back with a plain socket)
// and what it makes of flags/payloads written by someone else. Usage:
//   php generate.php PORT OUT.json
// PORT: a memcached on 127.0.0.1 that this script may fill (value-vectors/generate.sh starts one).
// Every input is fixed (see the recipes in ../README.md), so two runs give the same file.
declare(strict_types=1);
error_reporting(E_ALL);

if ($argc !== 3) {
    fwrite(STDERR, "usage: php generate.php PORT OUT.json\n");
    exit(2);
}
$PORT = (int) $argv[1];
$OUT = $argv[2];

// ---------------------------------------------------------------- inputs (same recipes as pylibmc)
// text(n): the first n bytes of "line 000000: the quick brown fox jumps over the lazy dog\n" ...
function text(int $n): string
{
    $s = '';
    for ($i = 0; strlen($s) < $n; $i++) {
        $s .= sprintf("line %06d: the quick brown fox jumps over the lazy dog\n", $i);
    }
    return substr($s, 0, $n);
}
// noise(n): the first n bytes of sha256("memshard-0") . sha256("memshard-1") ... (raw digests)
function noise(int $n): string
{
    $s = '';
    for ($i = 0; strlen($s) < $n; $i++) {
        $s .= hash('sha256', "memshard-$i", true);
    }
    return substr($s, 0, $n);
}
// mix(k, n): text(k) . noise(n - k): compressibility grows with k.
function mix(int $k, int $n): string
{
    return text($k) . noise($n - $k);
}

// ---------------------------------------------------------------- plain memcached text protocol
function raw_conn()
{
    global $PORT;
    static $c = null;
    if ($c === null) {
        $c = stream_socket_client("tcp://127.0.0.1:$PORT", $errno, $errstr, 5);
        if (!$c) {
            fwrite(STDERR, "connect 127.0.0.1:$PORT: $errstr\n");
            exit(1);
        }
    }
    return $c;
}
function read_exact($c, int $n): string
{
    $buf = '';
    while (strlen($buf) < $n) {
        $chunk = fread($c, $n - strlen($buf));
        if ($chunk === false || $chunk === '') {
            throw new RuntimeException('short read');
        }
        $buf .= $chunk;
    }
    return $buf;
}
/** @return array{0:int,1:string}|null flags and bytes exactly as the server holds them */
function raw_get(string $key): ?array
{
    $c = raw_conn();
    fwrite($c, "get $key\r\n");
    $line = rtrim((string) fgets($c), "\r\n");
    if ($line === 'END') {
        return null;
    }
    if (!preg_match('/^VALUE (\S+) (\d+) (\d+)$/', $line, $m) || $m[1] !== $key) {
        throw new RuntimeException("unexpected reply: $line");
    }
    $data = read_exact($c, (int) $m[3] + 2);
    if (rtrim((string) fgets($c), "\r\n") !== 'END') {
        throw new RuntimeException('no END');
    }
    return [(int) $m[2], substr($data, 0, -2)];
}
function raw_set(string $key, int $flags, string $bytes): void
{
    $c = raw_conn();
    fwrite($c, "set $key $flags 0 " . strlen($bytes) . "\r\n" . $bytes . "\r\n");
    $line = rtrim((string) fgets($c), "\r\n");
    if ($line !== 'STORED') {
        throw new RuntimeException("raw set $key: $line");
    }
}
function raw_version(): string
{
    $c = raw_conn();
    fwrite($c, "version\r\n");
    return substr(rtrim((string) fgets($c), "\r\n"), 8);
}

// ---------------------------------------------------------------- rendering values as JSON
$WARNINGS = [];
set_error_handler(function (int $no, string $msg) use (&$WARNINGS) {
    $WARNINGS[] = preg_replace('/^Memcached::\w+\(\): /', '', $msg);
    return true;
});

function is_utf8(string $s): bool
{
    return preg_match('//u', $s) === 1;
}
function json_float(float $f)
{
    if (is_nan($f)) {
        return 'NaN';
    }
    if (is_infinite($f)) {
        return $f > 0 ? 'Infinity' : '-Infinity';
    }
    return $f;
}
/** The value as PHP sees it: type name (get_debug_type) and a JSON rendering. */
function render($v, ?string $recipe = null): array
{
    $out = ['type' => get_debug_type($v)];
    if (is_string($v)) {
        if ($recipe !== null) {
            $out['recipe'] = $recipe;
            $out['length'] = strlen($v);
            $out['sha256'] = hash('sha256', $v);
        } elseif (is_utf8($v)) {
            $out['json'] = $v;
        } else {
            $out['hex'] = bin2hex($v);
        }
    } elseif (is_float($v)) {
        $out['json'] = json_float($v);
        $out['repr'] = var_export($v, true);
    } elseif (is_array($v) && $recipe !== null) {
        $out['recipe'] = $recipe;
        $out['count'] = count($v);
    } elseif (is_object($v)) {
        $out['json'] = $v;
    } else {
        $out['json'] = $v;
        if (is_array($v)) {
            $out['is_list'] = array_is_list($v);
        }
    }
    return $out;
}
function same($a, $b): bool
{
    if (is_float($a) && is_float($b) && is_nan($a) && is_nan($b)) {
        return true;
    }
    if (is_float($a) && is_float($b) && $a === 0.0 && $b === 0.0) {
        return (fdiv(1, $a) > 0) === (fdiv(1, $b) > 0); // the sign of zero must match
    }
    if (is_object($a) || is_object($b)) {
        return $a == $b && get_debug_type($a) === get_debug_type($b);
    }
    return $a === $b;
}

// ---------------------------------------------------------------- the peer
const SERIALIZERS = [
    'php' => Memcached::SERIALIZER_PHP,
    'igbinary' => Memcached::SERIALIZER_IGBINARY,
    'json' => Memcached::SERIALIZER_JSON,
    'json_array' => Memcached::SERIALIZER_JSON_ARRAY,
    'msgpack' => Memcached::SERIALIZER_MSGPACK,
];
const COMPRESSIONS = ['fastlz' => Memcached::COMPRESSION_FASTLZ, 'zlib' => Memcached::COMPRESSION_ZLIB];

/**
 * A client with these settings. Keys: serializer, compression (bool), compression_type,
 * compression_threshold, compression_factor (INI, global), user_flags.
 */
function client(array $s): Memcached
{
    global $PORT;
    // threshold and factor are INI settings (MEMC_G), read at each store; type is per object.
    ini_set('memcached.compression_threshold', (string) ($s['compression_threshold'] ?? 2000));
    ini_set('memcached.compression_factor', (string) ($s['compression_factor'] ?? 1.3));
    $m = new Memcached();
    $m->addServer('127.0.0.1', $PORT);
    $m->setOption(Memcached::OPT_SERIALIZER, SERIALIZERS[$s['serializer'] ?? 'php']);
    $m->setOption(Memcached::OPT_COMPRESSION, $s['compression'] ?? true);
    $m->setOption(Memcached::OPT_COMPRESSION_TYPE, COMPRESSIONS[$s['compression_type'] ?? 'fastlz']);
    if (isset($s['user_flags'])) {
        if (!$m->setOption(Memcached::OPT_USER_FLAGS, $s['user_flags'])) {
            throw new RuntimeException('OPT_USER_FLAGS refused');
        }
    }
    return $m;
}
function settings(array $s): array
{
    return [
        'serializer' => $s['serializer'] ?? 'php',
        'compression' => $s['compression'] ?? true,
        'compression_type' => $s['compression_type'] ?? 'fastlz',
        'compression_threshold' => $s['compression_threshold'] ?? 2000,
        'compression_factor' => $s['compression_factor'] ?? 1.3,
    ] + (isset($s['user_flags']) ? ['user_flags' => $s['user_flags']] : []);
}

$CASES = [];
$KEYNO = 0;

/** php-memcached stores $v with settings $s; record flags and payload as the server holds them. */
function write_case(string $name, $v, array $s = [], ?string $recipe = null, string $note = ''): array
{
    global $CASES, $KEYNO, $WARNINGS;
    $key = sprintf('php-w%03d', $KEYNO++);
    $m = client($s);
    $WARNINGS = [];
    if (!$m->set($key, $v)) {
        throw new RuntimeException("$name: set failed: " . $m->getResultMessage() . ' ' . implode('; ', $WARNINGS));
    }
    [$flags, $payload] = raw_get($key);
    $back = $m->get($key, null, Memcached::GET_EXTENDED);
    $case = [
        'name' => $name,
        'settings' => settings($s),
        'value' => render($v, $recipe),
        'flags' => $flags,
        'flags_hex' => sprintf('0x%x', $flags),
        'payload_length' => strlen($payload),
        'payload' => bin2hex($payload),
    ];
    if ($flags & 0x10) {
        // Compressed: 4-byte length prefix (host order) then the block. The plain payload is what
        // the same client stores with compression off (peer-produced too).
        $plainKey = $key . 'p';
        $p = client(['compression' => false] + $s);
        $p->set($plainKey, $v);
        [$pflags, $plain] = raw_get($plainKey);
        $prefix = unpack('V', substr($payload, 0, 4))[1];
        $block = substr($payload, 4);
        $c = [
            'method' => ($flags & 0x40) ? 'fastlz' : (($flags & 0x20) ? 'zlib' : 'unknown'),
            'prefix_hex' => bin2hex(substr($payload, 0, 4)),
            'uncompressed_length' => $prefix,
            'compressed_length' => strlen($block),
            'uncompressed_flags' => $pflags,
            'uncompressed_sha256' => hash('sha256', $plain),
            'prefix_is_uncompressed_length_le' => $prefix === strlen($plain),
            'ratio_rule' => sprintf('%d > %d * %s', strlen($plain), strlen($block), ini_get('memcached.compression_factor')),
        ];
        if ($flags & 0x40) {
            $c['fastlz_level'] = (ord($block[0]) >> 5) + 1;
        }
        if ($flags & 0x20) {
            $c['zlib_header_hex'] = bin2hex(substr($block, 0, 2));
            $c['zlib_inflates_to_plain'] = @gzuncompress($block) === $plain;
        }
        if (strlen($plain) <= 512) {
            $c['uncompressed_hex'] = bin2hex($plain);
        }
        $case['compression'] = $c;
    }
    $case['user_flags_returned'] = $back['flags'] ?? null;
    $case['reads_back_same'] = is_array($back) && same($back['value'], $v);
    if (!$case['reads_back_same']) {
        $case['read_back'] = is_array($back) ? render($back['value'], is_string($back['value']) ? $recipe : null) : null;
    }
    if ($note !== '') {
        $case['note'] = $note;
    }
    $CASES[] = $case;
    return $case;
}

// ---------------------------------------------------------------- write cases
// strings
write_case('string-ascii', 'hello world');
write_case('string-utf8', "h\u{e9}llo w\u{f6}rld \u{2713} \u{65e5}\u{672c}\u{8a9e}");
write_case('string-empty', '');
write_case('string-binary', "\x00\x01\xfe\xff\r\n", [], null, 'not UTF-8: value rendered as hex');
write_case('string-numeric', '42', [], null, 'a numeric string stays a string (flags 0)');

// ints
foreach (['int-zero' => 0, 'int-42' => 42, 'int-negative' => -42, 'int-max' => PHP_INT_MAX, 'int-min' => PHP_INT_MIN] as $n => $v) {
    write_case($n, $v);
}
// floats: php_memcached_g_fmt spelling
$floats = [
    'float-3.14' => 3.14, 'float-1e100' => 1e100, 'float-2.0' => 2.0, 'float-negative-zero' => -0.0,
    'float-inf' => INF, 'float-negative-inf' => -INF, 'float-nan' => NAN, 'float-0.5' => 0.5,
    'float-1e-5' => 1e-5, 'float-0.1+0.2' => 0.1 + 0.2, 'float-100000.0' => 100000.0,
    'float-1000000.0' => 1000000.0, 'float-1e15' => 1e15, 'float-123456789012345678' => 123456789012345678.0,
    'float-negative-1.5' => -1.5, 'float-5e-324' => 5e-324, 'float-max' => PHP_FLOAT_MAX,
];
foreach ($floats as $n => $v) {
    write_case($n, $v);
}
write_case('bool-true', true);
write_case('bool-false', false);

// null, list, map, object with each serializer
$list = [1, 'two', 3.5, true, null];
$map = ['a' => 1, 'b' => 'two', 'c' => [1, 2], 'd' => null];
$obj = (object) ['a' => 1, 'b' => 'two'];
foreach (array_keys(SERIALIZERS) as $ser) {
    $s = ['serializer' => $ser];
    write_case("null-$ser", null, $s);
    write_case("list-$ser", $list, $s);
    write_case("map-$ser", $map, $s);
    write_case("object-$ser", $obj, $s, null, 'stdClass; the JSON serializer reads a map back as stdClass, json_array as array');
    write_case("empty-array-$ser", [], $s);
    // scalars keep their own type bits whatever the serializer
    write_case("int-42-$ser", 42, $s, null, 'scalars never reach the serializer');
    write_case("string-ascii-$ser", 'hello world', $s);
}

// compression threshold (memcached.compression_threshold = 2000; compress when len >= threshold)
foreach (['fastlz', 'zlib'] as $ct) {
    foreach ([1999, 2000, 2001] as $n) {
        write_case("text-$n-$ct", text($n), ['compression_type' => $ct], "text($n)");
    }
    write_case("text-100000-$ct", text(100000), ['compression_type' => $ct], 'text(100000)', 'the 100 KB compressible string');
    write_case("noise-3000-$ct", noise(3000), ['compression_type' => $ct], 'noise(3000)', 'incompressible: stored plain');
    write_case("text-3000-no-compression-$ct", text(3000), ['compression_type' => $ct, 'compression' => false], 'text(3000)', 'OPT_COMPRESSION false');
    // a serialized value above the threshold: type bits 4 + compression bits
    $big = [];
    for ($i = 0; $i < 200; $i++) {
        $big["key$i"] = "value $i";
    }
    write_case("big-map-php-$ct", $big, ['compression_type' => $ct], 'array("key0" => "value 0", ... "key199" => "value 199")');
    write_case("big-map-igbinary-$ct", $big, ['compression_type' => $ct, 'serializer' => 'igbinary'], 'array("key0" => "value 0", ... "key199" => "value 199")');
}
// ints/floats/bools are never compressed, even with a threshold of 1
write_case('int-max-threshold-1', PHP_INT_MAX, ['compression_threshold' => 1], null, 'should_compress = 0 for long/double/bool');
write_case('text-100-threshold-50', text(100), ['compression_threshold' => 50], 'text(100)', 'threshold is the INI memcached.compression_threshold, read at each set');
// FastLZ level: level 1 below 65536 bytes, level 2 from 65536 on
foreach ([65535, 65536, 65537] as $n) {
    write_case("text-$n-fastlz", text($n), [], "text($n)");
}

// compression factor: compressed only when plain_len > compressed_len * factor. Search the
// smallest k for which mix(k, 3000) is stored compressed; record k-1 (plain) and k (compressed).
function factor_pair(string $ct, float $factor, int $n = 3000): void
{
    global $KEYNO;
    $s = ['compression_type' => $ct, 'compression_factor' => $factor];
    $stored_compressed = function (int $k) use ($s, $n): bool {
        global $KEYNO;
        $key = sprintf('php-probe%05d', $KEYNO++);
        $m = client($s);
        $m->set($key, mix($k, $n));
        return (raw_get($key)[0] & 0x10) !== 0;
    };
    $lo = 0;
    $hi = $n;
    if ($stored_compressed($lo) || !$stored_compressed($hi)) {
        throw new RuntimeException("factor search $ct: no flip");
    }
    while ($hi - $lo > 1) {
        $mid = intdiv($lo + $hi, 2);
        if ($stored_compressed($mid)) {
            $hi = $mid;
        } else {
            $lo = $mid;
        }
    }
    $bl = block_len(mix($lo, $n), $ct);
    write_case("factor-$factor-$ct-below", mix($lo, $n), $s, "mix($lo, $n)", "largest k stored plain: plain_len <= compressed_len * factor (block measured with factor 1.0: $bl bytes)");
    $c = write_case("factor-$factor-$ct-above", mix($hi, $n), $s, "mix($hi, $n)", 'smallest k stored compressed: plain_len > compressed_len * factor');
}
$KEYNO_SAVE = $KEYNO;
$KEYNO = 500; // probe keys apart from case keys (the numbering of cases stays stable)
factor_pair('fastlz', 1.3);
factor_pair('zlib', 1.3);
factor_pair('fastlz', 2.0);
// The exact boundary: plain_len == compressed_len * factor is stored plain. n = 1300 with a
// threshold of 1000: find mix(k, 1300) whose block is exactly 1000 bytes (1000 * 1.3 == 1300.0 in
// doubles) and one of 999 bytes. The block size is measured by the peer itself, storing the same
// value with compression_factor 1.0 (compress whenever smaller).
function block_len(string $v, string $ct): ?int
{
    global $KEYNO;
    $key = sprintf('php-probe%05d', $KEYNO++);
    $m = client(['compression_type' => $ct, 'compression_factor' => 1.0, 'compression_threshold' => 1]);
    $m->set($key, $v);
    [$f, $p] = raw_get($key);
    return ($f & 0x10) ? strlen($p) - 4 : null;
}
function exact_factor_cases(string $ct): void
{
    $n = 1300;
    $found = [];
    for ($k = 0; $k <= $n && count($found) < 2; $k++) {
        $c = block_len(mix($k, $n), $ct);
        if (($c === 1000 || $c === 999) && !isset($found[$c])) {
            $found[$c] = $k;
        }
    }
    if (count($found) < 2) {
        throw new RuntimeException("no exact factor boundary for $ct");
    }
    $s = ['compression_type' => $ct, 'compression_threshold' => 1000];
    $k = $found[1000];
    write_case("factor-1.3-$ct-at", mix($k, $n), $s, "mix($k, $n)", '1300 == 1000 * 1.3: stored plain (compressed block, measured with factor 1.0: 1000 bytes)');
    $k = $found[999];
    write_case("factor-1.3-$ct-just-above", mix($k, $n), $s, "mix($k, $n)", '1300 > 999 * 1.3: stored compressed');
}
exact_factor_cases('fastlz');
exact_factor_cases('zlib');
$KEYNO = $KEYNO_SAVE;

// user flags (OPT_USER_FLAGS, bits 16-31)
write_case('user-flags-1-string', 'hello world', ['user_flags' => 1]);
write_case('user-flags-65535-int', 42, ['user_flags' => 65535]);
write_case('user-flags-7-fastlz', text(3000), ['user_flags' => 7], 'text(3000)');
$m = new Memcached();
$WARNINGS = [];
$ok = $m->setOption(Memcached::OPT_USER_FLAGS, 65536);
$USER_FLAGS_LIMIT = ['setOption(OPT_USER_FLAGS, 65536)' => $ok, 'warning' => $WARNINGS[0] ?? null];

// ---------------------------------------------------------------- read cases: raw flags/payload -> PHP
$READS = [];
function read_case(string $name, int $flags, string $payload, array $s = [], string $note = '', bool $content_is_undefined = false, ?string $recipe = null): void
{
    global $READS, $KEYNO, $WARNINGS;
    $key = sprintf('php-r%03d', $KEYNO++);
    raw_set($key, $flags, $payload);
    $m = client($s);
    $WARNINGS = [];
    $v = $m->get($key);
    $rc = $m->getResultCode();
    $r = [
        'name' => $name,
        'flags' => $flags,
        'payload' => bin2hex($payload),
    ];
    if (isset($s['serializer'])) {
        $r['settings'] = ['serializer' => $s['serializer']];
    }
    if ($rc !== Memcached::RES_SUCCESS) {
        $r['result'] = ['error' => $m->getResultMessage(), 'result_code' => $rc, 'returned' => render($v)];
    } elseif ($content_is_undefined) {
        $r['result'] = ['type' => get_debug_type($v), 'length' => strlen($v), 'content' => 'undefined (uninitialised memory): not recorded'];
    } else {
        $r['result'] = render($v, is_string($v) ? $recipe : null);
        if (is_object($v)) {
            $r['result']['class'] = get_class($v);
        }
    }
    if ($WARNINGS) {
        $r['warnings'] = $WARNINGS;
    }
    if ($note !== '') {
        $r['note'] = $note;
    }
    $READS[] = $r;
}
$KEYNO = 0;
// type 0
read_case('string', 0, 'hello');
read_case('string-42', 0, '42');
// type 1: strtol(data, NULL, 10)
foreach (['42', '-42', '0', ' 42', '+7', '42abc', 'abc', '', '9223372036854775807', '9223372036854775808', '-9223372036854775809', '0x1A', '1e3', '3.99'] as $p) {
    read_case("long-" . ($p === '' ? 'empty' : $p), 1, $p);
}
// type 2: "Infinity", "-Infinity", "NaN" by name, else zend_strtod
foreach (['3.14', '1e+100', '2', '-0', '.5', 'Infinity', '-Infinity', 'NaN', 'inf', 'INF', '-inf', 'nan', 'NAN', 'infinity', '1e400', '', 'abc', '0x10', ' 1.5'] as $p) {
    read_case('double-' . ($p === '' ? 'empty' : $p), 2, $p);
}
// type 3: true iff the payload is non-empty and starts with '1'
foreach (['1', '0', '', '10', 'true', '2', ' 1'] as $p) {
    read_case('bool-' . ($p === '' ? 'empty' : $p), 3, $p);
}
// serializers
read_case('php-serialize-int', 4, 'i:42;');
read_case('php-serialize-map', 4, 'a:1:{s:1:"a";i:1;}');
read_case('php-serialize-broken', 4, 'i:42');
read_case('php-serialize-null', 4, 'N;');
read_case('igbinary-int', 5, igbinary_serialize(42));
read_case('igbinary-broken', 5, "\x00\x00\x00\x02\x06");
read_case('json-map', 6, '{"a":1,"b":[1,2]}', [], 'decoded as stdClass unless the reading client uses SERIALIZER_JSON_ARRAY');
read_case('json-map-json_array', 6, '{"a":1,"b":[1,2]}', ['serializer' => 'json_array']);
read_case('json-map-json', 6, '{"a":1,"b":[1,2]}', ['serializer' => 'json']);
read_case('json-42', 6, '42');
read_case('json-string', 6, '"hi"');
read_case('json-float', 6, '1.5');
read_case('json-broken', 6, '{"a":', [], 'no warning, no failure: JSON errors are not checked');
read_case('msgpack-map', 7, msgpack_pack(['a' => 1]));
read_case('msgpack-int', 7, "\x2a");
// unknown type bits
foreach ([8, 9, 15] as $f) {
    read_case("type-$f", $f, 'x');
}
// user flags and unknown internal bits are ignored on read
read_case('long-user-flags', 0x10000 | 1, '42');
read_case('string-user-flags-ffff', 0xffff0000, 'hi');
read_case('string-internal-bit-0x100', 0x100, 'hi', [], 'bits 0x100-0x800 (internal, unused in 3.2.0) are ignored');
read_case('string-internal-bit-0x80-zstd', 0x80, 'hi', [], '0x80 is zstd in 3.3; without 0x10 it is ignored');
// compression framing
$t = text(3000);
$zl = gzcompress($t); // zlib compress(): same framing as php-memcached's zlib
read_case('zlib-prefixed', 0x30, pack('V', strlen($t)) . $zl, [], '', false, 'text(3000)');
read_case('zlib-no-prefix', 0x30, $zl, [], 'a bare zlib stream (as pylibmc stores it) is not readable');
read_case('zlib-prefix-too-small', 0x30, pack('V', 100) . $zl);
read_case('zlib-prefix-too-large', 0x30, pack('V', strlen($t) + 10) . $zl, [], 'uncompress() sets the real length: the value comes back right', false, 'text(3000)');
read_case('compressed-no-method', 0x10, pack('V', strlen($t)) . $zl, [], '0x10 without 0x20/0x40 is refused');
read_case('zlib-bits-without-0x10', 0x20, pack('V', strlen($t)) . $zl, [], '0x20 alone is not decompressed: the bytes come back as a string');
read_case('compressed-too-short', 0x50, "\x01\x00", [], 'payload shorter than the 4-byte prefix');
// FastLZ: take php's own output for text(3000) (case text-3000 with user flags above uses the same)
$src = null;
foreach ($CASES as $c) {
    if ($c['name'] === 'user-flags-7-fastlz') {
        $src = hex2bin($c['payload']);
    }
}
$fl = substr($src, 4);
read_case('fastlz-prefixed', 0x50, $src, [], '', false, 'text(3000)');
read_case('fastlz-and-zlib-bits', 0x70, $src, [], 'both method bits: FastLZ is tried first', false, 'text(3000)');
read_case('fastlz-prefix-too-small', 0x50, pack('V', 100) . $fl);
read_case('fastlz-prefix-too-large', 0x50, pack('V', strlen($t) + 10) . $fl, [], 'FastLZ: the string keeps the prefix length; its last bytes are uninitialised memory', true);
read_case('fastlz-long', 0x51, pack('V', 2) . "\x01\x34\x32", [], 'a compressed long (php never writes one, but reads it)');
read_case('fastlz-level-3-byte', 0x50, pack('V', 4) . "\x43abcd", [], 'first byte >> 5 = 2 means level 3: unknown');

// increment on values someone else wrote
foreach ([['incr-long', 1, '41'], ['incr-string', 0, '41'], ['incr-user-flags', 0x10001, '41']] as [$n, $f, $p]) {
    $key = sprintf('php-r%03d', $KEYNO++);
    raw_set($key, $f, $p);
    $m = client([]);
    $res = $m->increment($key);
    [$af, $ap] = raw_get($key);
    $READS[] = ['name' => $n, 'flags' => $f, 'payload' => bin2hex($p), 'operation' => 'increment(key)',
        'result' => ['returned' => $res, 'flags_after' => $af, 'payload_after' => bin2hex($ap), 'get_after' => render($m->get($key))]];
}

// ---------------------------------------------------------------- output
function dpkg_version(string $pkg): string
{
    return trim((string) shell_exec('dpkg-query -W -f \'${Version}\' ' . escapeshellarg($pkg) . ' 2>/dev/null'));
}
$header = [
    'peer' => 'php-memcached',
    'versions' => [
        'php' => PHP_VERSION,
        'php-memcached' => phpversion('memcached'),
        'php-memcached (dpkg php8.2-memcached)' => dpkg_version('php8.2-memcached'),
        'igbinary' => phpversion('igbinary'),
        'msgpack' => phpversion('msgpack'),
        'libmemcached' => Memcached::LIBMEMCACHED_VERSION_HEX,
        'memcached server' => raw_version(),
    ],
    'defaults' => [
        'ini memcached.serializer' => ini_get('memcached.serializer'),
        'ini memcached.compression_type' => ini_get('memcached.compression_type'),
        'ini memcached.compression_threshold' => ini_get('memcached.compression_threshold'),
        'ini memcached.compression_factor' => ini_get('memcached.compression_factor'),
        'Memcached::HAVE_ZSTD defined' => defined('Memcached::HAVE_ZSTD'),
        'user flags limit' => $USER_FLAGS_LIMIT,
    ],
    'recipes' => [
        'text(n)' => 'first n bytes of "line 000000: the quick brown fox jumps over the lazy dog\n", "line 000001: ...", ... (sprintf "line %06d: ...\n")',
        'noise(n)' => 'first n bytes of sha256("memshard-0") . sha256("memshard-1") . ... (raw 32-byte digests)',
        'mix(k, n)' => 'text(k) . noise(n - k)',
    ],
];
$flags = JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_PRESERVE_ZERO_FRACTION | JSON_THROW_ON_ERROR;
ini_set('serialize_precision', '-1');
$lines = [];
foreach ($header as $k => $v) {
    $lines[] = json_encode($k, $flags) . ': ' . json_encode($v, $flags | JSON_PRETTY_PRINT);
}
$body = "{\n" . implode(",\n", $lines) . ",\n";
$body .= "\"writes\": [\n" . implode(",\n", array_map(fn($c) => json_encode($c, $flags), $CASES)) . "\n],\n";
$body .= "\"reads\": [\n" . implode(",\n", array_map(fn($c) => json_encode($c, $flags), $READS)) . "\n]\n}\n";
file_put_contents($OUT, $body);
fwrite(STDERR, sprintf("php-memcached: %d writes, %d reads -> %s\n", count($CASES), count($READS), $OUT));

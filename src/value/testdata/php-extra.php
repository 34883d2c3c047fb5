<?php
// Extra php-memcached 3.2.0 write cases for memshard's encoder tests (src/value/tests_php.rs),
// beyond value-vectors/php-memcached.json: PHP serialize() floats and integer-like array keys,
// json_encode escaping and floats, g_fmt spellings. Usage (gen-php-extra.sh runs it):
//   php php-extra.php PORT OUT.json
// PORT: a memcached on 127.0.0.1 this script may fill. Compression is off: plain bytes only.
// Each value is built from JSON text (the `json` field recorded), the way memshard builds it:
// `php` / `json_array` cases with json_decode($text, true) (arrays), `json` cases with
// json_decode($text) (objects as stdClass, so `{}` stays an object).
declare(strict_types=1);
error_reporting(E_ALL);
[$_, $PORT, $OUT] = $argv;

function raw_get(int $port, string $key): array
{
    static $c = null;
    $c ??= stream_socket_client("tcp://127.0.0.1:$port", $errno, $errstr, 5);
    fwrite($c, "get $key\r\n");
    $line = rtrim((string) fgets($c), "\r\n");
    if (!preg_match('/^VALUE (\S+) (\d+) (\d+)$/', $line, $m)) {
        throw new RuntimeException("unexpected reply: $line");
    }
    $data = '';
    while (strlen($data) < (int) $m[3] + 2) {
        $data .= fread($c, (int) $m[3] + 2 - strlen($data));
    }
    if (rtrim((string) fgets($c), "\r\n") !== 'END') {
        throw new RuntimeException('no END');
    }
    return [(int) $m[2], substr($data, 0, (int) $m[3])];
}

$SERIALIZERS = [
    'php' => Memcached::SERIALIZER_PHP,
    'json' => Memcached::SERIALIZER_JSON,
    'json_array' => Memcached::SERIALIZER_JSON_ARRAY,
];
$cases = [];
$n = 0;
function add(string $name, string $serializer, string $json, $value): void
{
    global $cases, $n, $PORT, $SERIALIZERS;
    $m = new Memcached();
    $m->addServer('127.0.0.1', (int) $PORT);
    $m->setOption(Memcached::OPT_SERIALIZER, $SERIALIZERS[$serializer]);
    $m->setOption(Memcached::OPT_COMPRESSION, false);
    $key = sprintf('php-x%03d', $n++);
    if (!$m->set($key, $value)) {
        throw new RuntimeException("$name: set failed");
    }
    [$flags, $payload] = raw_get((int) $PORT, $key);
    $cases[] = ['name' => $name, 'serializer' => $serializer, 'json' => $json,
        'flags' => $flags, 'payload' => bin2hex($payload)];
}

// Floats: top level (type 2, g_fmt) and inside a list (serialize / json_encode).
$floats = ['0.1', '1e25', '-0.0', '1e-7', '100000.0', '1e15', '1e16', '1e17', '1.5', '2.0',
    '0.30000000000000004', '5e-324', '1.7976931348623157e308', '123456789012345678.0', '1e-5',
    '0.0001', '0.001', '1e20', '1e21', '1e22', '123456789012345.6', '1234567890123456789.0',
    '-2.5e-10', '6.02214076e23', '0.000123', '1234.5678', '9007199254740993.0'];
foreach ($floats as $f) {
    add("float-$f", 'php', $f, (float) $f);
}
$list = '[' . implode(',', $floats) . ']';
foreach (['php', 'json'] as $s) {
    add("float-list-$s", $s, $list, json_decode($list, $s === 'php'));
}
// Integers and the other scalars inside containers.
$ints = '[0,-1,9223372036854775807,-9223372036854775808,true,false,null,"",{"k":[]}]';
foreach (['php', 'json'] as $s) {
    add("scalars-$s", $s, $ints, json_decode($ints, $s === 'php'));
}
// Map keys PHP turns into integers (keys sorted bytewise, as a serde_json map iterates).
$keys = ['5', '-3', '05', '-0', '9223372036854775807', '9223372036854775808', ' 1', '1.5', '',
    '-9223372036854775808', '+1', '0', '007', '-', 'a'];
sort($keys, SORT_STRING);
$obj = '{' . implode(',', array_map(fn ($i, $k) => json_encode((string) $k) . ":$i", array_keys($keys), $keys)) . '}';
foreach (['php', 'json'] as $s) {
    add("int-like-keys-$s", $s, $obj, json_decode($obj, $s === 'php'));
}
// Sequential integer-like keys: a PHP array 0..n-1 (serialize) / a stdClass (json).
$seq = '{"0":"a","1":"b"}';
foreach (['php', 'json'] as $s) {
    add("sequential-keys-$s", $s, $seq, json_decode($seq, $s === 'php'));
}
// Strings: byte lengths (serialize), escaping (json_encode).
$strs = json_encode(["a/b", "quote\"back\\", "é", "日本", "😀", "\x01\x1f\x7f~", "\t\n\r\x08\x0c",
    "<>&'", "\u{2028}\u{2029}", "\x00", 's:1:"x";}'], JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES);
foreach (['php', 'json', 'json_array'] as $s) {
    add("strings-$s", $s, $strs, json_decode($strs, $s !== 'json'));
}
$nested = '{"a/é":{"b":[[],{}],"c":{"0":1}},"list":[1,[2,[3]]],"z":{}}';
foreach (['php', 'json', 'json_array'] as $s) {
    add("nested-$s", $s, $nested, json_decode($nested, $s !== 'json'));
}

$doc = ['generator' => 'php-extra.php', 'versions' => [
    'php' => PHP_VERSION, 'memcached' => phpversion('memcached'),
    'serialize_precision' => ini_get('serialize_precision')], 'writes' => $cases];
file_put_contents($OUT, json_encode($doc, JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE) . "\n");
echo count($cases), " cases\n";

'use strict';
// node `memcached`'s side of cli/tests/values_live.rs. npm
// `memcached` 2.2.2 is pinned by package-lock.json (a link to value-vectors/node's) and installed
// into ./node_modules (git-ignored) by `npm ci` (scripts/test.sh).
//
//   node node_values.js write HOST:PORT        store the matrix (keys node:<case>), print each value
//   node node_values.js read HOST:PORT KEY...  get each key, print what node memcached got
//
// One JSON object per line, in memshard's `get --json` convention: {"key","type","value"} with
// type string / bytes (a Buffer, lowercase hex) / float (every JavaScript number: a JSON number,
// -0 as -0.0, or "Infinity", "-Infinity", "NaN") / bool / null / json (arrays, objects), plus
// "class" (typeof, or the constructor's name). `write` adds "peer_reads_back" when the client's
// own get returns something else than it stored, and "unsupported" when it refuses the value.
// Each operation uses a fresh client: an exception thrown inside the client's socket handler
// (JSON.parse of a flags-2 value that is not JSON) is caught through uncaughtException.
const Memcached = require('memcached');

const [mode, addr, ...keys] = process.argv.slice(2);
if (!['write', 'read'].includes(mode) || !addr) {
  process.stderr.write('usage: node node_values.js write|read HOST:PORT [KEY...]\n');
  process.exit(2);
}
const CLIENT_OPTS = { retries: 0, timeout: 2000, poolSize: 1, idle: 1000 };

// A number's JSON text: String(v) is the shortest text that reads back as the same double; JSON
// has no -0, NaN or Infinity of its own.
function num(v) {
  if (Number.isNaN(v)) return '"NaN"';
  if (v === Infinity) return '"Infinity"';
  if (v === -Infinity) return '"-Infinity"';
  if (Object.is(v, -0)) return '-0.0';
  return String(v);
}

// "class", "type" and "value" fields, without braces.
function render(v) {
  const cls = v === null ? 'null' : Buffer.isBuffer(v) ? 'Buffer'
    : typeof v === 'object' ? v.constructor.name : typeof v;
  const head = `"class":${JSON.stringify(cls)},`;
  if (typeof v === 'string') return head + `"type":"string","value":${JSON.stringify(v)}`;
  if (Buffer.isBuffer(v)) return head + `"type":"bytes","value":"${v.toString('hex')}"`;
  if (typeof v === 'number') return head + `"type":"float","value":${num(v)}`;
  if (typeof v === 'boolean') return head + `"type":"bool","value":${v}`;
  if (v === null) return head + '"type":"null","value":null';
  if (typeof v === 'object') return head + `"type":"json","value":${JSON.stringify(v)}`;
  return head + `"type":"other","value":${JSON.stringify(String(v))}`;
}
const typeAndValue = (r) => r.slice(r.indexOf('"type":'));

function withClient(fn) {
  return new Promise((resolve) => {
    const mc = new Memcached(addr, CLIENT_OPTS);
    let done = false;
    const finish = (r) => {
      if (done) return;
      done = true;
      process.removeListener('uncaughtException', onEx);
      clearTimeout(timer);
      mc.end();
      resolve(r);
    };
    const onEx = (e) => finish([e, undefined]);
    process.on('uncaughtException', onEx);
    // node never calls back for a value with a raw CR LF in it (README-node.md)
    const timer = setTimeout(() => finish([new Error('no callback within 3 s'), undefined]), 3000);
    try {
      fn(mc, (e, v) => finish([e, v]));
    } catch (e) {
      finish([e, undefined]);
    }
  });
}
const errText = (e) => JSON.stringify(`${e && e.name ? e.name : typeof e}: ${e && e.message !== undefined ? e.message : e}`);

// The first n characters of "The quick brown fox jumps over the lazy dog. " repeated
// (value-vectors/node/gen.js's text()).
const TEXT = 'The quick brown fox jumps over the lazy dog. ';
const text = (n) => TEXT.repeat(Math.ceil(n / TEXT.length) + 1).slice(0, n);

async function write() {
  const cases = [
    ['str_ascii', 'hello world'],
    ['str_utf8', 'h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c\u8a9e \u{1f680}'],
    ['str_empty', ''],
    ['str_lf', 'line 1\nline 2\n'],
    ['bytes', Buffer.from([0x00, 0xff, 0x80, 0xfe, 0x7f])],
    ['str_100k', text(100000)],
    ['int_neg', -42],
    ['int_zero', 0],
    // i64 max has no double; the literal is 2^63
    ['int_max', 9223372036854775807],
    ['int_max_safe', Number.MAX_SAFE_INTEGER],
    ['float_pi', 3.14],
    ['float_neg_zero', -0],
    ['float_1e100', 1e100],
    ['float_inf', Infinity],
    ['float_neg_inf', -Infinity],
    ['float_nan', NaN],
    ['int_2p64', 2n ** 64n],
    ['bool_true', true],
    ['bool_false', false],
    ['null', null],
    ['list', [1, 'two', true, null]],
    ['map', { a: 1, b: 'two', c: [1, 2] }],
  ];
  for (const [name, value] of cases) {
    const key = `node:${name}`;
    let line = `{"key":${JSON.stringify(key)},`;
    if (typeof value === 'bigint') {
      // BigInt goes to JSON.stringify, which throws (memcached.js:924-927)
      line += `"class":"bigint","type":"int","value":${JSON.stringify(value.toString())}`;
    } else {
      line += render(value);
    }
    const [e] = await withClient((mc, cb) => mc.set(key, value, 0, cb));
    if (e) {
      process.stdout.write(`${line},"unsupported":${errText(e)}}\n`);
      continue;
    }
    const [ge, back] = await withClient((mc, cb) => mc.get(key, cb));
    if (ge || back === undefined) {
      line += `,"peer_reads_back":{"error":${ge ? errText(ge) : '"miss"'}}`;
    } else if (typeAndValue(render(back)) !== typeAndValue(render(value))) {
      line += `,"peer_reads_back":{${render(back)}}`;
    }
    process.stdout.write(line + '}\n');
  }
}

async function read() {
  for (const key of keys) {
    const [e, v] = await withClient((mc, cb) => mc.get(key, cb));
    const k = JSON.stringify(key);
    if (e) process.stdout.write(`{"key":${k},"error":${errText(e)}}\n`);
    else if (v === undefined) process.stdout.write(`{"key":${k},"miss":true}\n`);
    else process.stdout.write(`{"key":${k},${render(v)}}\n`);
  }
}

(mode === 'write' ? write() : read()).catch((e) => {
  process.stderr.write(`${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});

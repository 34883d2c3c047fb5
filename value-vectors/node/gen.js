'use strict';
// Captures what node `memcached` 2.2.2 (npm, pinned in package-lock.json) stores for each case, and
// what it reads back from values written by others. Usage: node gen.js PORT OUT.json (memcached on
// 127.0.0.1:PORT; gen.sh starts it). The client writes; flags and bytes are read back with a plain
// text-protocol `get` on a socket of our own.
const net = require('net');
const fs = require('fs');
const crypto = require('crypto');
const Memcached = require('memcached');

const PORT = Number(process.argv[2]);
const OUT = process.argv[3];
const SERVER = '127.0.0.1:' + PORT;
const CLIENT_OPTS = { retries: 0, timeout: 2000, poolSize: 1, idle: 1000 };

// ---- plain memcached text protocol ----
class Raw {
  constructor(port) {
    this.buf = Buffer.alloc(0);
    this.waiters = [];
    this.sock = net.connect(port, '127.0.0.1');
    this.sock.on('data', (d) => { this.buf = Buffer.concat([this.buf, d]); this.wake(); });
  }
  wake() { const w = this.waiters; this.waiters = []; w.forEach((f) => f()); }
  async need(test) { while (!test()) await new Promise((r) => this.waiters.push(r)); }
  async line() {
    let i;
    await this.need(() => (i = this.buf.indexOf('\r\n')) >= 0);
    const l = this.buf.subarray(0, i).toString('latin1');
    this.buf = this.buf.subarray(i + 2);
    return l;
  }
  async bytes(n) {
    await this.need(() => this.buf.length >= n);
    const b = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return Buffer.from(b);
  }
  async get(key) {
    this.sock.write('get ' + key + '\r\n');
    const head = await this.line();
    if (head === 'END') return null;
    const t = head.split(' ');
    const data = await this.bytes(Number(t[3]));
    await this.bytes(2);
    if ((await this.line()) !== 'END') throw new Error('no END');
    return { flags: Number(t[2]), data };
  }
  async set(key, flags, data) {
    this.sock.write(`set ${key} ${flags} 0 ${data.length}\r\n`);
    this.sock.write(Buffer.concat([data, Buffer.from('\r\n')]));
    const r = await this.line();
    if (r !== 'STORED') throw new Error('set ' + key + ': ' + r);
  }
  async flush() { this.sock.write('flush_all\r\n'); await this.line(); }
  end() { this.sock.end(); }
}

// ---- JSON text of node values (-0, NaN, +-Infinity and Buffers made explicit) ----
function num(v) {
  if (Number.isNaN(v)) return '"NaN"';
  if (v === Infinity) return '"Infinity"';
  if (v === -Infinity) return '"-Infinity"';
  if (Object.is(v, -0)) return '-0.0';
  return JSON.stringify(v);
}
function json(v) {
  if (v === undefined) return '{"undefined": true}';
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') return num(v);
  if (typeof v === 'bigint') return JSON.stringify(v.toString());
  if (Buffer.isBuffer(v)) return '{"hex": "' + v.toString('hex') + '"}';
  if (v instanceof Date) return JSON.stringify(v.toISOString());
  if (Array.isArray(v)) return '[' + v.map(json).join(', ') + ']';
  return '{' + Object.keys(v).map((k) => JSON.stringify(k) + ': ' + json(v[k])).join(', ') + '}';
}
function typeName(v) {
  if (v === null) return 'null';
  if (Buffer.isBuffer(v)) return 'Buffer';
  if (typeof v === 'object') return v.constructor ? v.constructor.name : 'Object';
  return typeof v;
}
function render(v, recipe) {
  if (typeof v === 'string' && Buffer.byteLength(v) > 256) {
    const b = Buffer.from(v);
    return `{"type": "string", "length": ${b.length}, "sha256": "${crypto.createHash('sha256').update(b).digest('hex')}"` +
      (recipe ? `, "recipe": ${JSON.stringify(recipe)}}` : `, "json": ${json(v)}}`);
  }
  if (Buffer.isBuffer(v)) return `{"type": "Buffer", "hex": "${v.toString('hex')}"}`;
  if (typeof v === 'string' && /[\ud800-\udbff](?![\udc00-\udfff])|(?:[^\ud800-\udbff]|^)[\udc00-\udfff]/.test(v)) {
    // a lone surrogate is not representable in UTF-8 JSON: the UTF-16 code units, big-endian
    return `{"type": "string", "utf16be_hex": "${Buffer.from(v, 'utf16le').swap16().toString('hex')}"}`;
  }
  return `{"type": ${JSON.stringify(typeName(v))}, "json": ${json(v)}}`;
}
function same(a, b) {
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (typeof a === 'number' && typeof b === 'number') return Object.is(a, b);
  return typeName(a) === typeName(b) && json(a) === json(b);
}
function err(e) {
  return `{"error": ${JSON.stringify(e && e.name ? e.name : typeof e)}, "message": ${JSON.stringify(String(e && e.message !== undefined ? e.message : e))}}`;
}

// one operation on a fresh client; resolves with [err, value]; an exception thrown inside the
// client's socket handler (JSON.parse of a flags-2 value) surfaces as uncaughtException: caught here
function withClient(fn) {
  return new Promise((resolve) => {
    const mc = new Memcached(SERVER, CLIENT_OPTS);
    let done = false;
    const finish = (r) => {
      if (done) return;
      done = true;
      process.removeListener('uncaughtException', onEx);
      clearTimeout(timer);
      mc.end();
      resolve(r);
    };
    const onEx = (e) => finish([{ thrown: e }, undefined]);
    process.on('uncaughtException', onEx);
    const timer = setTimeout(() => finish([{ timeout: true }, undefined]), 3000);
    try {
      fn(mc, (e, v) => finish([e, v]));
    } catch (e) {
      finish([{ thrown: e }, undefined]);
    }
  });
}
function errText(e) {
  if (e.timeout) return '{"error": "timeout", "message": "no callback within 3 s (the reply was not parsed)"}';
  return err(e.thrown || e);
}

const TEXT = 'The quick brown fox jumps over the lazy dog. ';
const text = (n) => TEXT.repeat(Math.ceil(n / TEXT.length) + 1).slice(0, n);

const CASES = [
  ['string_ascii', 'hello world'],
  ['string_utf8', 'h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c \u{1F600}'],
  ['string_empty', ''],
  ['string_crlf', 'line1\r\nline2\nline3\r'],
  ['string_backslash_newline', 'a\\\nb'],
  ['string_lone_surrogate', 'a\ud800b'],
  ['string_100k_compressible', text(100 * 1024), 'text(102400)'],
  ['string_json_looking', '{"a":1}'],
  ['number_0', 0],
  ['number_42', 42],
  ['number_neg42', -42],
  ['number_2_pow_53', 2 ** 53],
  ['number_2_pow_64', 2 ** 64],
  ['number_3_14', 3.14],
  ['number_0_1_plus_0_2', 0.1 + 0.2],
  ['number_1e100', 1e100],
  ['number_1e21', 1e21],
  ['number_1e_minus_7', 1e-7],
  ['number_neg_zero', -0],
  ['number_inf', Infinity],
  ['number_neg_inf', -Infinity],
  ['number_nan', NaN],
  ['bool_true', true],
  ['bool_false', false],
  ['null', null],
  ['list', [1, 'two', 3.5, null, true, [4]]],
  ['map', { a: 1, b: [1, 2], c: { d: null }, e: '\u00e9' }],
  ['list_with_nan_and_neg_zero', [NaN, -0, Infinity]],
  ['date', new Date(1577836800123)],
  ['buffer_ascii', Buffer.from('hello')],
  ['buffer_high_bytes', Buffer.from([0x00, 0x7f, 0x80, 0xc3, 0xff])],
  ['buffer_empty', Buffer.alloc(0)],
  ['buffer_crlf', Buffer.from('a\r\nb')],
  ['bigint', 42n],
  ['undefined', undefined],
];

const REVERSE = [
  ['flags0_utf8', 0, '68c3a96c6c6f', 'UTF-8 "héllo"'],
  ['flags0_invalid_utf8', 0, 'ff0080', 'bytes that are not UTF-8'],
  ['flags0_backslash_lf', 0, '615c0a62', 'a, backslash, LF, b (node\'s own escaping of "a\\nb")'],
  ['flags0_raw_crlf', 0, '610d0a62', 'a CR LF b, unescaped (as any other client writes it)'],
  ['flags0_raw_lf', 0, '610a62', 'a LF b, unescaped'],
  ['flags2_json_object', 2, '7b2261223a5b312c325d7d', '{"a":[1,2]}'],
  ['flags2_json_string', 2, '2261626322', '"abc"'],
  ['flags2_json_number', 2, '3432', '42'],
  ['flags2_not_json', 2, '68656c6c6f', 'hello (not JSON)'],
  ['flags2_dalli_zlib', 2, '789ccb48cdc9c90700062c0215', 'dalli: zlib of "hello", flags 2'],
  ['flags2_empty', 2, '', 'empty payload with flags 2'],
  ['flags8_3_14', 8, '332e3134', '3.14'],
  ['flags8_infinity', 8, '496e66696e697479', 'Infinity'],
  ['flags8_inf_php', 8, '696e66', 'inf (C/Python spelling)'],
  ['flags8_not_a_number', 8, '616263', 'abc'],
  ['flags8_empty', 8, '', 'empty payload with flags 8'],
  ['flags8_hex', 8, '30783130', '0x10 (a JavaScript numeric literal)'],
  ['flags4_ascii', 4, '68656c6c6f', 'hello as a Buffer'],
  ['flags4_raw_high_bytes', 4, '007f80c3ff', 'bytes 00 7f 80 c3 ff as they are (not double-encoded)'],
  ['flags4_double_encoded', 4, '007fc280c383c3bf', 'the same bytes as node writes them (UTF-8 of latin1)'],
  ['flags10_json_and_number_bits', 10, '3432', 'flags 2|8'],
  ['flags0x10002_user_bits', 0x10002, '3432', 'flags 2 plus a php user flag'],
  ['flags1_dalli_marshal', 1, '0408692f', 'dalli Marshal 42'],
  ['flags0x200_spymemcached_int', 0x200, '2a', 'spymemcached Integer 42'],
  ['flags16_pylibmc_str', 16, '68c3a96c6c6f', 'pylibmc str'],
];

(async () => {
  const raw = new Raw(PORT);
  await raw.flush();
  raw.sock.write('version\r\n');
  const serverVersion = (await raw.line()).replace('VERSION ', '');
  const setting = '{"client": "memcached 2.2.2 defaults (no transcoder options)", "compression": "none"}';
  const fhex = (f) => '0x' + f.toString(16);
  const out = [];
  let i = 0;
  for (const [name, value, recipe] of CASES) {
    const key = 'n' + (i++);
    let rec = `    {"name": ${JSON.stringify(name)}, "settings": ${setting},\n     "value": ${render(value, recipe)}`;
    const [e] = await withClient((mc, cb) => mc.set(key, value, 0, cb));
    if (e) {
      out.push(rec + `,\n     "write_error": ${errText(e)}}`);
      continue;
    }
    const got = await raw.get(key);
    rec += `,\n     "flags": ${got.flags}, "flags_hex": "${fhex(got.flags)}", "payload_length": ${got.data.length}, "payload": "${got.data.toString('hex')}"`;
    const [e2, back] = await withClient((mc, cb) => mc.get(key, cb));
    if (e2) rec += `,\n     "reads_back_same": false, "read_back": ${errText(e2)}}`;
    else if (same(value, back)) rec += `,\n     "reads_back_same": true}`;
    else rec += `,\n     "reads_back_same": false, "read_back": ${render(back)}}`;
    out.push(rec);
  }
  const rev = [];
  i = 0;
  for (const [name, flags, hex, what] of REVERSE) {
    const key = 'r' + (i++);
    await raw.set(key, flags, Buffer.from(hex, 'hex'));
    const [e, v] = await withClient((mc, cb) => mc.get(key, cb));
    rev.push(`    {"name": ${JSON.stringify(name)}, "note": ${JSON.stringify(what)}, "flags": ${flags}, "flags_hex": "${fhex(flags)}", "payload": "${hex}",\n` +
      `     "result": ${e ? errText(e) : render(v)}}`);
  }
  raw.end();
  const version = require('memcached/package.json').version;
  const doc = `{\n  "peer": "node-memcached",\n  "versions": {"memcached (npm)": "${version}", "node": "${process.version}", "memcached server": "${serverVersion}"},\n` +
    `  "recipes": {"text(n)": ${JSON.stringify('the first n characters of "' + TEXT + '" repeated')}},\n` +
    `  "writes": [\n${out.join(',\n')}\n  ],\n  "reads": [\n${rev.join(',\n')}\n  ]\n}\n`;
  fs.writeFileSync(OUT, doc);
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });

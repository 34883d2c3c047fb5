'use strict';
// node memcached's side of cli/tests/detect_live.rs: `new Memcached({"host:port": weight,
// ...})` (its hashring). stdin: one key per line. Writing (the default): each key is set to a
// string, a number or an object in turn. DETECT_ACTION=read: the Nth key (from 0) must hold
// the key itself as a string, the number N or the number 2^32+N in turn, each of exactly that
// type; the first miss or wrong value is printed on stderr. Prints `ok N`; any failure exits 1.
//
//     [DETECT_ACTION=read] node node_detect.js default HOST:PORT:WEIGHT...
const Memcached = require('memcached');
const read = process.env.DETECT_ACTION === 'read';
const servers = {};
for (const spec of process.argv.slice(3)) {
  const [host, port, weight] = spec.split(':');
  servers[`${host}:${port}`] = Number(weight);
}
const mc = new Memcached(servers, { retries: 0, timeout: 2000, poolSize: 4 });
const keys = require('fs').readFileSync(0, 'utf8').split('\n').filter((k) => k.length > 0);
let i = 0;
function next() {
  if (i === keys.length) {
    console.log(`ok ${keys.length}`);
    mc.end();
    return;
  }
  const n = i++;
  if (read) {
    const want = [keys[n], n, 2 ** 32 + n][n % 3];
    mc.get(keys[n], (err, got) => {
      if (err || got !== want) {
        console.error(`get ${keys[n]}: ${JSON.stringify(got)} (${typeof got}) ${err || ''}, want ${JSON.stringify(want)} (${typeof want})`);
        process.exit(1);
      }
      next();
    });
    return;
  }
  const value = [keys[n], n, { n }][n % 3];
  mc.set(keys[n], value, 0, (err) => {
    if (err) {
      console.error(`set ${keys[n]}: ${err}`);
      process.exit(1);
    }
    next();
  });
}
next();

'use strict';
// node memcached's side of cli/tests/detect_live.rs: `new Memcached({"host:port": weight,
// ...})` (its hashring). stdin: one key per line, each set to a string, a number or an object
// in turn. Prints `ok N`; any failure exits 1.
//
//     node node_detect.js default HOST:PORT:WEIGHT...
const Memcached = require('memcached');
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

#!/usr/bin/env node
// node hashring driver: node driver.js SERVERS.TXT < keys > expected.tsv
// servers.txt lines: ADDR [WEIGHT] [NAME]; NAME is ignored (hashring has no names).
// Ring: new HashRing({ "ADDR": WEIGHT, ... }, 'md5') with the server strings exactly as
// written, default options (vnode count 40, replicas 4, no 'default port').
// Prints KEY<TAB>ring.get(KEY); get() returns the server string = ADDR.
'use strict';
const fs = require('fs');
const path = require('path');
const HashRing = require(path.join(__dirname, 'node_modules', 'hashring'));

const servers = {};
for (const raw of fs.readFileSync(process.argv[2], 'utf8').split('\n')) {
  const line = raw.trim();
  if (!line || line.startsWith('#')) continue;
  const t = line.split(/\s+/);
  if (t[0] in servers) throw new Error('duplicate server ' + t[0]);
  servers[t[0]] = t.length > 1 ? parseInt(t[1], 10) : 1;
}
// Object.keys order must be the file order (true unless an address is an integer-like string)
const order = fs.readFileSync(process.argv[2], 'utf8').split('\n').map(s => s.trim())
  .filter(s => s && !s.startsWith('#')).map(s => s.split(/\s+/)[0]);
if (JSON.stringify(Object.keys(servers)) !== JSON.stringify(order)) throw new Error('key order changed');

const ring = new HashRing(servers, 'md5');
const keys = fs.readFileSync(0).toString('utf8').split('\n');
const out = [];
for (const key of keys) {
  if (key === '') continue;
  out.push(key + '\t' + ring.get(key) + '\n');
}
process.stdout.write(out.join(''));

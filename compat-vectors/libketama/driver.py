#!/usr/bin/env python3
"""libketama driver (PyPI `ketama`, which bundles RJ/ketama's libketama C code).

driver.py SERVERS.TXT < keys > expected.tsv

servers.txt lines: ADDR WEIGHT. The driver writes them, in order, to a fresh temporary
file in libketama's own format "ADDR<TAB>WEIGHT\\n" (every line newline-terminated:
libketama drops the last character of the memory token), builds
ketama.Ketama(that_file) and prints KEY<TAB>SERVER for get_server(KEY as UTF-8 bytes).
The continuum lives in SysV shared memory keyed by ftok(file); a fresh file per run and
the Ketama object's dealloc (ketama_smoke: IPC_RMID) keep runs from seeing stale rings.
--points prints the continuum (point<TAB>server) instead."""
import gc
import os
import sys
import tempfile

import ketama

src = sys.argv[1]
addrs = []
lines = []
for line in open(src, encoding='utf-8'):
    line = line.strip()
    if not line or line.startswith('#'):
        continue
    t = line.split()
    assert len(t) == 2, 'libketama servers.txt lines are ADDR WEIGHT: %r' % line
    addrs.append(t[0])
    lines.append('%s\t%d\n' % (t[0], int(t[1])))

tmpdir = tempfile.mkdtemp(prefix='ketama-')
conf = os.path.join(tmpdir, 'servers')
with open(conf, 'w', encoding='utf-8') as f:
    f.writelines(lines)
try:
    k = ketama.Ketama(conf)
    out = []
    if '--points' in sys.argv[2:]:
        for p, s in k.get_points():
            out.append('%d\t%s\n' % (p, s))
    else:
        for key in sys.stdin.buffer.read().split(b'\n'):
            if key == b'':
                continue
            _, server = k.get_server(key)
            assert server in addrs, (key, server)
            out.append('%s\t%s\n' % (key.decode('utf-8'), server))
    sys.stdout.write(''.join(out))
    del k
    gc.collect()
finally:
    os.unlink(conf)
    os.rmdir(tmpdir)

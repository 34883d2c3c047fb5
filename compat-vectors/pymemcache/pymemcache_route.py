"""pymemcache HashClient placement driver (run with the venv's python that has pymemcache 4.0.0).
  pymemcache_route.py SERVERS [--unicode] [--prefix P] [--bytes] < keys -> KEY<TAB>ADDR
HashClient([token, ...]) gets the first token of every servers.txt line as its server string ("host:port",
"[v6]:port"), all other arguments at their defaults (hasher=RendezvousHash, use_pooling=False) except:
  --unicode   allow_unicode_keys=True (needed for non-ASCII str keys)
  --prefix P  key_prefix=P (bytes)
  --bytes     keys are handed over as bytes (default: str, decoded from UTF-8)
The answer is HashClient._get_client(key), the client the get/set/... methods use; it is mapped back to its
servers.txt token through the client's own .server. No socket may be created: socket.socket and
socket.create_connection are replaced by a function that raises, before the HashClient is built."""
import socket, sys
from pymemcache.client.base import normalize_server_spec
from pymemcache.client.hash import HashClient

def _no_socket(*a, **k):
    raise RuntimeError("pymemcache tried to open a socket")
socket.socket = _no_socket
socket.create_connection = _no_socket

args = sys.argv[1:]
path = args.pop(0)
kw, as_bytes = {}, False
while args:
    a = args.pop(0)
    if a == "--unicode":
        kw["allow_unicode_keys"] = True
    elif a == "--prefix":
        kw["key_prefix"] = args.pop(0).encode()
    elif a == "--bytes":
        as_bytes = True
    else:
        sys.exit("unknown argument " + a)
tokens = [l.split()[0] for l in open(path, encoding="utf-8") if l.split() and not l.startswith("#")]
hc = HashClient(tokens, **kw)
back = {}
for t in tokens:
    s = normalize_server_spec(t)
    assert s not in back, t
    back[s] = t
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    kb = line.rstrip(b"\n")
    key = kb if as_bytes else kb.decode("utf-8")
    client = hc._get_client(key)
    out.write(kb + b"\t" + back[client.server].encode() + b"\n")

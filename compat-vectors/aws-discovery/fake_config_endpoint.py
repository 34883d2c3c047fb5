#!/usr/bin/env python3
"""A tiny stand-in for an ElastiCache memcached *configuration endpoint*, for loopback only (stdlib only).

Text protocol, one command per line (CRLF or LF):
  config get cluster[ ]            -> CONFIG cluster 0 <len>\r\n<body>\r\nEND\r\n
  get AmazonElastiCache:cluster    -> VALUE AmazonElastiCache:cluster 0 <len>\r\n<body>\r\nEND\r\n
  version                          -> VERSION 1.6.21\r\n
  quit                             -> closes the connection
  anything else                    -> ERROR\r\n
<body> is the exact content of --config (re-read for every request), e.g.
  "7\ncache-a|127.0.10.1|11211 cache-b|127.0.10.2|11211\n"

Usage: fake_config_endpoint.py --config FILE [--host 127.0.0.1] [--port 0] [--port-file F] [--log F]
With --port 0 the kernel picks a free port; it is written to --port-file (and stdout) once listening.
Every command line received is appended to --log as "<conn-id> <repr(line)>".
"""
import argparse, ipaddress, os, socket, socketserver, sys, threading

ARGS = None
LOG_LOCK = threading.Lock()
CONN_IDS = iter(range(1, 1 << 30))


def log(conn, line):
    if not ARGS.log:
        return
    with LOG_LOCK, open(ARGS.log, "a", encoding="utf-8") as f:
        f.write("%d %r\n" % (conn, line))


def body():
    with open(ARGS.config, "rb") as f:
        return f.read()


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        conn = next(CONN_IDS)
        while True:
            raw = self.rfile.readline(65536)
            if not raw:
                return
            line = raw.decode("latin-1").rstrip("\r\n")
            log(conn, line)
            words = line.split()
            if words == ["config", "get", "cluster"]:
                b = body()
                out = b"CONFIG cluster 0 %d\r\n" % len(b) + b + b"\r\nEND\r\n"
            elif words == ["get", "AmazonElastiCache:cluster"]:
                b = body()
                out = b"VALUE AmazonElastiCache:cluster 0 %d\r\n" % len(b) + b + b"\r\nEND\r\n"
            elif words == ["version"]:
                out = b"VERSION 1.6.21\r\n"
            elif words == ["quit"]:
                return
            else:
                out = b"ERROR\r\n"
            self.wfile.write(out)
            self.wfile.flush()


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--log")
    ARGS = p.parse_args()
    if not ipaddress.ip_address(ARGS.host).is_loopback:
        sys.exit("fake_config_endpoint: refusing non-loopback address %s" % ARGS.host)
    body()  # fail early if the file is missing
    srv = Server((ARGS.host, ARGS.port), Handler)
    port = srv.server_address[1]
    if ARGS.port_file:
        tmp = ARGS.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, ARGS.port_file)
    print(port, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()

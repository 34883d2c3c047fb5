#!/usr/bin/env python3
"""Fake AWS ElastiCache (and GCP Memorystore) memcached auto-discovery endpoint.

Usage:
    elasticache_config.py --listen 127.0.0.1:PORT --config FILE
        [--mode elasticache|memorystore|legacy-only|config-only|silent] [--log FILE]

PORT 0 picks a free port. Once listening, the script prints ``READY <port>`` on
stdout (flushed). SIGTERM (or SIGINT) closes the listener and every connection and
exits with status 0. Only the standard library is used.

Documented bytes this reproduces
--------------------------------
AWS, "Adding Auto Discovery to your Memcached client library" (ElastiCache
developer guide, AutoDiscovery.AddingToYourClientLibrary.html):

* engines 1.4.14 and later answer ``config get cluster``; engines older than
  1.4.14 answer ``get AmazonElastiCache:cluster``; "The outputs from these two
  commands are identical" apart from the memcached framing line, i.e.::

      CONFIG cluster 0 <len>\\r\\n          (config get cluster)
      VALUE AmazonElastiCache:cluster 0 <len>\\r\\n   (legacy get)
      <configversion>\\n
      <hostname|ip-address|port> <hostname|ip-address|port> ...\\n
      \\r\\n
      END\\r\\n

  "The config version line is terminated by LF without the CR"; the node-list
  line ends with LF, to which the usual memcached CR LF is appended. ``<len>`` is the
  byte count of the body (version line and node line, both LFs included), exactly
  as the ``<bytes>`` of a memcached ``VALUE`` line (memcached doc/protocol.txt).
  The AWS page's own example (also in github.com/awsdocs/amazon-elasticache-docs,
  doc_source/AutoDiscovery.AddingToYourClientLibrary.md) is::

      CONFIG cluster 0 147\\r\\n
      12\\n
      myCluster.pc4ldq.0001.use1.cache.amazonaws.com|10.82.235.120|11211 myCluster.pc4ldq.0002.use1.cache.amazonaws.com|10.80.249.27|11211\\n\\r\\n
      END\\r\\n

  Note its ``147`` does not match its own body, which is 136 bytes; this fake
  always sends the true body length (136 for that body), as memcached's VALUE
  framing requires.

GCP, "Use the Auto Discovery service" (Memorystore for Memcached,
memorystore/docs/memcached/use-auto-discovery): the discovery endpoint answers
``config get cluster`` with ``CONFIG cluster 0 [length-of-payload-in-next-two-lines]``,
then the version integer and the ``[node-ip]|[node-ip]|[node-port]`` list, then
``\\r\\nEND\\r\\n`` -- the same format (Memorystore puts the IP in the host
field). The page also says "You should not use the discovery endpoint for
Memcached data queries such as set and get": it is not a data node, so in
``memorystore`` mode the legacy ``get`` is answered ``ERROR``.

Some clients send ``config get cluster \\r\\n`` with a trailing space (the AWS
ElastiCache PHP client, per this project's notes; not checked against its source
here). memcached tokenises on spaces, so any trailing whitespace is accepted, as
is a bare ``\\n`` line end (memcached accepts both).

Replies that are not documented by AWS/GCP come from memcached's doc/protocol.txt:
``ERROR\\r\\n`` for an unknown command, ``END\\r\\n`` for a miss, ``VERSION x\\r\\n``.

Test hooks
----------
* The ``--config`` FILE is re-read on EVERY discovery request and holds exactly
  the reply BODY, served verbatim (malformed bodies included; ``<len>`` is always the
  true byte length of what is sent). Rewrite it atomically (write + rename).
* If its first line is ``#raw``, everything after that first line is sent as the
  complete raw reply instead of the framed one (for framing errors).
* If its first line is ``#close``, the connection is closed without an answer.
* If it cannot be read, ``SERVER_ERROR cannot read config file\\r\\n`` is sent.

Modes: ``elasticache`` (default) answers both commands; ``config-only`` answers
the legacy get with ``END\\r\\n`` (a miss); ``legacy-only`` answers
``config get cluster`` with ``ERROR\\r\\n`` (an engine older than 1.4.14);
``memorystore`` answers ``config get cluster`` and ``ERROR\\r\\n`` to the legacy
get; ``silent`` accepts, reads (and logs) but never answers.

Other commands: ``version\\r\\n`` -> ``VERSION 1.6.21\\r\\n``; ``quit`` closes the
connection (as memcached does); everything else -> ``ERROR\\r\\n``. For a storage
command (``set/add/replace/append/prepend/cas``) with a parseable length, its data
block is swallowed first so the stream stays in sync (one ``ERROR`` per command).

Logging: stderr gets one line per answered discovery request,
``served config version=<first line of body>`` (``served raw bytes=<n>`` for
``#raw``, ``closed without answer`` for ``#close``). ``--log FILE`` appends
``<unix_time_float> <command line>`` for every request line received (all modes,
``silent`` included), so tests can count polls. stderr is written by a side thread:
a test that pipes stderr without draining it never stalls the server (lines past
10000 queued ones are dropped then; count with ``--log``).
"""

import argparse
import asyncio
import queue
import signal
import sys
import threading
import time

VERSION_REPLY = b"VERSION 1.6.21\r\n"
LEGACY_KEY = b"AmazonElastiCache:cluster"
STORAGE_COMMANDS = {b"set", b"add", b"replace", b"append", b"prepend", b"cas"}
MAX_LINE = 64 * 1024
MODES = ("elasticache", "memorystore", "legacy-only", "config-only", "silent")


class StderrLines:
    """stderr lines written by a side thread, so a test that pipes stderr and never
    drains it cannot stall the event loop; when 10000 lines are queued, new ones are
    dropped (use --log for exact counts)."""

    def __init__(self):
        self.q = queue.Queue(maxsize=10000)
        threading.Thread(target=self.run, name="stderr", daemon=True).start()

    def put(self, line):
        try:
            self.q.put_nowait(line)
        except queue.Full:
            pass

    def run(self):
        while True:
            line = self.q.get()
            try:
                sys.stderr.write(line + "\n")
                sys.stderr.flush()
            except Exception:
                pass
            self.q.task_done()

    def flush(self, timeout=1.0):
        """Best effort: wait (bounded) for queued lines to be written."""
        deadline = time.monotonic() + timeout
        while self.q.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)


STDERR = StderrLines()


def parse_listen(value):
    host, sep, port = value.rpartition(":")
    if not sep or not host:
        raise argparse.ArgumentTypeError("expected HOST:PORT, got %r" % value)
    try:
        port_n = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError("bad port in %r" % value)
    if not 0 <= port_n <= 65535:
        raise argparse.ArgumentTypeError("bad port in %r" % value)
    return host.strip("[]"), port_n


class Server:
    def __init__(self, args):
        self.config_path = args.config
        self.mode = args.mode
        self.log_path = args.log
        self.writers = set()

    # -- logging ----------------------------------------------------------------
    def log_request(self, line):
        if not self.log_path:
            return
        text = line.decode("utf-8", "replace")
        try:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write("%.6f %s\n" % (time.time(), text))
        except OSError as e:
            STDERR.put("cannot write log %s: %s" % (self.log_path, e))

    @staticmethod
    def note(msg):
        STDERR.put(msg)

    # -- discovery --------------------------------------------------------------
    def discovery_reply(self, header_prefix):
        """Bytes to send for a discovery request, or None to close the connection."""
        try:
            with open(self.config_path, "rb") as f:
                data = f.read()
        except OSError as e:
            self.note("cannot read config %s: %s" % (self.config_path, e))
            return b"SERVER_ERROR cannot read config file\r\n"
        first, nl, rest = data.partition(b"\n")
        directive = first.rstrip(b"\r")
        if directive == b"#raw":
            self.note("served raw bytes=%d" % len(rest))
            return rest
        if directive == b"#close":
            self.note("closed without answer")
            return None
        version = first.decode("utf-8", "replace")
        self.note("served config version=%s" % version)
        return b"%s %d\r\n%s\r\nEND\r\n" % (header_prefix, len(data), data)

    # -- connection -------------------------------------------------------------
    async def handle(self, reader, writer):
        self.writers.add(writer)
        try:
            await self.serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass
        finally:
            self.writers.discard(writer)
            try:
                writer.close()
                await writer.wait_closed()
            except Exception:
                pass

    async def serve(self, reader, writer):
        while True:
            try:
                raw = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError:
                return  # EOF (possibly mid-line)
            except asyncio.LimitOverrunError:
                if self.mode != "silent":
                    writer.write(b"CLIENT_ERROR line too long\r\n")
                    await writer.drain()
                return
            line = raw[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
            self.log_request(line)
            if self.mode == "silent":
                continue
            reply = await self.dispatch(line, reader)
            if reply is None:
                return
            writer.write(reply)
            await writer.drain()

    async def dispatch(self, line, reader):
        tokens = line.split()
        if not tokens:
            return b"ERROR\r\n"
        cmd = tokens[0]
        if tokens == [b"config", b"get", b"cluster"]:
            if self.mode == "legacy-only":
                return b"ERROR\r\n"
            return self.discovery_reply(b"CONFIG cluster 0")
        if tokens == [b"get", LEGACY_KEY]:
            if self.mode in ("elasticache", "legacy-only"):
                return self.discovery_reply(b"VALUE " + LEGACY_KEY + b" 0")
            if self.mode == "config-only":
                return b"END\r\n"
            return b"ERROR\r\n"  # memorystore: the discovery endpoint is no data node
        if tokens == [b"version"]:
            return VERSION_REPLY
        if cmd == b"quit":
            return None
        if cmd in STORAGE_COMMANDS and len(tokens) >= 5:
            try:
                n = int(tokens[4])
            except ValueError:
                n = -1
            if n >= 0:
                await reader.readexactly(n + 2)
        return b"ERROR\r\n"


async def main_async(args):
    srv = Server(args)
    host, port = args.listen
    server = await asyncio.start_server(srv.handle, host, port, limit=MAX_LINE, reuse_address=True)
    bound = server.sockets[0].getsockname()[1]
    sys.stdout.write("READY %d\n" % bound)
    sys.stdout.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    for w in list(srv.writers):
        try:
            w.close()
        except Exception:
            pass
    try:
        await asyncio.wait_for(server.wait_closed(), 2)
    except (asyncio.TimeoutError, Exception):
        pass


def main():
    p = argparse.ArgumentParser(description="Fake ElastiCache/Memorystore auto-discovery endpoint")
    p.add_argument("--listen", required=True, type=parse_listen, metavar="HOST:PORT")
    p.add_argument("--config", required=True, metavar="FILE")
    p.add_argument("--mode", default="elasticache", choices=MODES)
    p.add_argument("--log", metavar="FILE")
    args = p.parse_args()
    try:
        asyncio.run(main_async(args))
    except KeyboardInterrupt:
        pass
    STDERR.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

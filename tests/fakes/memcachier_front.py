#!/usr/bin/env python3
"""Fake MemCachier: an authenticating ASCII front in front of a real memcached.

Usage:
    memcachier_front.py --listen 127.0.0.1:PORT --backend 127.0.0.1:BPORT
        --user USER --password PASSWORD [--log FILE]

PORT 0 picks a free port. Once listening, the script prints ``READY <port>`` on
stdout (flushed). SIGTERM (or SIGINT) closes the listener and every connection and
exits with status 0. Only the standard library is used.

Documented bytes this reproduces
--------------------------------
MemCachier blog, "ASCII Protocol Support" (blog.memcachier.com, 2017-02-23), the
login scheme of MemCachier's ASCII endpoint: "When you establish a connection, the
first command you must send to us is a set with your username as the key and your
password as the value", e.g.::

    set 15F38e 0 0 32\\r\\n
    52353F9F1C4017CC16FD348B982ED47D\\r\\n
    STORED\\r\\n            <- "The STORED line indicates successful authentication"

"After this, you can issue all the familiar memcache ASCII protocol commands".
So: key = user name, data = password, ``<bytes>`` = password length; flags and
exptime are accepted whatever their value (the example uses 0 0). The login is not
an item: it is never forwarded, so ``get USER`` on the backend is a miss.

MemCachier does not document its error lines (nor whether it closes the
connection after one); the lines used here are memcached's own ASCII-auth (``-Y``)
replies, from memcached proto_text.c: ``CLIENT_ERROR unauthenticated\\r\\n`` for a
command before login, ``CLIENT_ERROR authentication failure\\r\\n`` for a wrong
password. Keeping the connection open after the first and closing it after the
second is this fake's choice.

Framing of storage and meta commands follows memcached doc/protocol.txt
(``set <key> <flags> <exptime> <bytes> [noreply]\\r\\n<data>\\r\\n``,
``ms <key> <datalen> <flags>*\\r\\n<data>\\r\\n``).

Behaviour
---------
Before login, per command line (``\\r\\n`` or bare ``\\n`` ends a line):

* ``set USER <flags> <exptime> <len> [noreply]`` + data: data == PASSWORD ->
  a backend connection is opened, ``STORED\\r\\n`` is sent (always, even with
  noreply: memcached's -Y auth path does not parse noreply either) and from then
  on every byte is proxied both ways unchanged (bytes the client pipelined after
  the login included).
  Wrong password (or a data block not ended by ``\\r\\n``) ->
  ``CLIENT_ERROR authentication failure\\r\\n`` and the connection is closed.
  Backend unreachable -> ``SERVER_ERROR backend unavailable\\r\\n`` and close.
* any other storage command (``set`` of another key, ``add``, ``replace``,
  ``append``, ``prepend``, ``cas``) and ``ms <key> <datalen> ...``: the data
  block is consumed first, then ``CLIENT_ERROR unauthenticated\\r\\n``; the
  connection stays open. If the length cannot be parsed nothing is consumed and
  ``CLIENT_ERROR bad command line format\\r\\n`` is sent (memcached's reply).
* ``quit``: the connection is closed (memcached's meaning of quit).
* everything else (``get``, ``version``, ``mg``, ``mn``, ``md``, an empty line,
  ...): ``CLIENT_ERROR unauthenticated\\r\\n``; the connection stays open.

Logging: stderr gets ``login ok`` / ``login failed`` per login attempt (never the
password). ``--log FILE`` appends ``login ok``, ``login failed`` or
``unauthenticated <command line>`` (data blocks are never logged). stderr is
written by a side thread: a test that pipes stderr without draining it never stalls
the proxy (lines past 10000 queued ones are dropped then; count with ``--log``).
"""

import argparse
import asyncio
import queue
import signal
import sys
import threading
import time

STORAGE_COMMANDS = {b"set", b"add", b"replace", b"append", b"prepend", b"cas"}
MAX_LINE = 64 * 1024
CHUNK = 64 * 1024


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


def parse_addr(value):
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


def parse_len(tok):
    try:
        n = int(tok)
    except ValueError:
        return None
    return n if n >= 0 else None


class Front:
    def __init__(self, args):
        self.backend = args.backend
        self.user = args.user.encode()
        self.password = args.password.encode()
        self.log_path = args.log
        self.writers = set()

    def log(self, text, stderr=False):
        if stderr:
            STDERR.put(text)
        if not self.log_path:
            return
        try:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(text + "\n")
        except OSError as e:
            STDERR.put("cannot write log %s: %s" % (self.log_path, e))

    async def handle(self, reader, writer):
        self.writers.add(writer)
        bwriter = None
        try:
            backend = await self.login(reader, writer)
            if backend is None:
                return
            breader, bwriter = backend
            self.writers.add(bwriter)
            await self.proxy(reader, writer, breader, bwriter)
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass
        finally:
            for w in (writer, bwriter):
                if w is None:
                    continue
                self.writers.discard(w)
                try:
                    w.close()
                except Exception:
                    pass

    async def login(self, reader, writer):
        """Run the pre-login state machine; (breader, bwriter) once logged in, else None."""
        while True:
            try:
                raw = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError:
                return None
            except asyncio.LimitOverrunError:
                writer.write(b"CLIENT_ERROR line too long\r\n")
                await writer.drain()
                return None
            line = raw[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
            tokens = line.split()
            cmd = tokens[0] if tokens else b""
            text = line.decode("utf-8", "replace")

            if cmd in STORAGE_COMMANDS or cmd == b"ms":
                if cmd == b"ms":
                    n = parse_len(tokens[2]) if len(tokens) >= 3 else None
                else:
                    n = parse_len(tokens[4]) if len(tokens) >= 5 else None
                if n is None:
                    writer.write(b"CLIENT_ERROR bad command line format\r\n")
                    await writer.drain()
                    self.log("unauthenticated " + text)
                    continue
                block = await reader.readexactly(n + 2)
                if cmd == b"set" and len(tokens) in (5, 6) and tokens[1] == self.user:
                    if block[:n] == self.password and block[n:] == b"\r\n":
                        try:
                            backend = await asyncio.open_connection(*self.backend, limit=MAX_LINE)
                        except OSError as e:
                            STDERR.put("backend %s:%d unreachable: %s" % (self.backend + (e,)))
                            writer.write(b"SERVER_ERROR backend unavailable\r\n")
                            await writer.drain()
                            return None
                        self.log("login ok", stderr=True)
                        writer.write(b"STORED\r\n")
                        await writer.drain()
                        return backend
                    self.log("login failed", stderr=True)
                    writer.write(b"CLIENT_ERROR authentication failure\r\n")
                    await writer.drain()
                    return None
                self.log("unauthenticated " + text)
                writer.write(b"CLIENT_ERROR unauthenticated\r\n")
                await writer.drain()
                continue

            if cmd == b"quit":
                return None
            self.log("unauthenticated " + text)
            writer.write(b"CLIENT_ERROR unauthenticated\r\n")
            await writer.drain()

    @staticmethod
    async def pump(src, dst):
        while True:
            data = await src.read(CHUNK)
            if not data:
                return
            dst.write(data)
            await dst.drain()

    async def proxy(self, reader, writer, breader, bwriter):
        # Bytes the client pipelined after the login are still buffered in `reader`
        # and go out first through the client->backend pump.
        up = asyncio.ensure_future(self.pump(reader, bwriter))
        down = asyncio.ensure_future(self.pump(breader, writer))
        try:
            done, _ = await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
            if up in done and up.exception() is None:
                # Client half-closed: pass the EOF on, let the backend's replies drain.
                try:
                    if bwriter.can_write_eof():
                        bwriter.write_eof()
                    await asyncio.wait_for(asyncio.shield(down), 5)
                except Exception:
                    pass
        finally:
            for t in (up, down):
                t.cancel()
            for t in (up, down):
                try:
                    await t
                except BaseException:
                    pass


async def main_async(args):
    front = Front(args)
    host, port = args.listen
    server = await asyncio.start_server(front.handle, host, port, limit=MAX_LINE, reuse_address=True)
    bound = server.sockets[0].getsockname()[1]
    sys.stdout.write("READY %d\n" % bound)
    sys.stdout.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    for w in list(front.writers):
        try:
            w.close()
        except Exception:
            pass
    try:
        await asyncio.wait_for(server.wait_closed(), 2)
    except (asyncio.TimeoutError, Exception):
        pass


def main():
    p = argparse.ArgumentParser(description="Fake MemCachier ASCII-auth front for a real memcached")
    p.add_argument("--listen", required=True, type=parse_addr, metavar="HOST:PORT")
    p.add_argument("--backend", required=True, type=parse_addr, metavar="HOST:PORT")
    p.add_argument("--user", required=True)
    p.add_argument("--password", required=True)
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

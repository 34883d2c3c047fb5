#!/usr/bin/env bash
# Self-test of the two fakes in this folder (see README.md).
#
# Starts a real memcached (127.0.0.1, free port, -U 0), elasticache_config.py in every
# mode and memcachier_front.py in front of that memcached, drives them with plain Python
# sockets, and stops every process it started (by pid) whatever happens.
# Exit status 0 = every check passed. Needs python3 (stdlib only) and memcached.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec python3 - "$HERE" <<'PYEOF'
import os, signal, socket, subprocess, sys, tempfile, threading, time

HERE = sys.argv[1]
EC = os.path.join(HERE, "elasticache_config.py")
MC = os.path.join(HERE, "memcachier_front.py")
TMP = tempfile.mkdtemp(prefix="memshard-fakes-")
PROCS = []
FAILS = []
CHECKS = 0


def check(cond, what):
    global CHECKS
    CHECKS += 1
    if cond:
        print("ok   %s" % what)
    else:
        print("FAIL %s" % what)
        FAILS.append(what)


def eq(got, want, what):
    check(got == want, what if got == want else "%s: got %r want %r" % (what, got, want))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_fake(argv, name, stderr_pipe=False):
    out = open(os.path.join(TMP, name + ".out"), "w+")
    err = open(os.path.join(TMP, name + ".err"), "w+")
    p = subprocess.Popen([sys.executable] + argv, stdout=out,
                         stderr=subprocess.PIPE if stderr_pipe else err)
    PROCS.append(p)
    deadline = time.time() + 10
    while time.time() < deadline:
        out.seek(0)
        text = out.read()
        if text.startswith("READY ") and text.endswith("\n"):
            return p, int(text.split()[1]), err
        if p.poll() is not None:
            break
        time.sleep(0.02)
    err.seek(0)
    raise SystemExit("%s did not get ready: %s" % (name, err.read()))


def stop(p, what):
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(5)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        rc = "hung"
    eq(rc, 0, "%s exits 0 on SIGTERM" % what)
    PROCS.remove(p)


def conn(port, timeout=3.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        d = s.recv(n - len(buf))
        if not d:
            break
        buf += d
    return buf


def recv_until(s, end):
    buf = b""
    while not buf.endswith(end):
        d = s.recv(65536)
        if not d:
            break
        buf += d
    return buf


def recv_all(s):
    """Everything until EOF (timeout -> what was read, plus the marker b'<timeout>')."""
    buf = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return buf
            buf += d
    except socket.timeout:
        return buf + b"<timeout>"


def quiet_for(s, secs):
    """True when nothing arrives (and the peer does not close) within secs."""
    s.settimeout(secs)
    try:
        s.recv(1)
        return False  # data, or EOF
    except socket.timeout:
        return True
    finally:
        s.settimeout(3.0)


def write_atomic(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)


def cfg_reply(body):
    return b"CONFIG cluster 0 %d\r\n%s\r\nEND\r\n" % (len(body), body)


def legacy_reply(body):
    return b"VALUE AmazonElastiCache:cluster 0 %d\r\n%s\r\nEND\r\n" % (len(body), body)


def test_elasticache():
    print("== elasticache_config.py")
    cfg = os.path.join(TMP, "cluster.cfg")
    log = os.path.join(TMP, "ec.log")
    body1 = b"1\nnode-a.example|127.0.0.1|11211 node-b.example|127.0.0.2|11211\n"
    write_atomic(cfg, body1)
    p, port, err = start_fake([EC, "--listen", "127.0.0.1:0", "--config", cfg, "--log", log], "ec")
    check(port > 0, "READY reports the port picked for :0 (%d)" % port)

    s = conn(port)
    s.sendall(b"version\r\n")
    eq(recv_until(s, b"\r\n"), b"VERSION 1.6.21\r\n", "version")
    s.sendall(b"config get cluster\r\n")
    eq(recv_until(s, b"END\r\n"), cfg_reply(body1), "config get cluster: exact bytes")
    s.sendall(b"config get cluster \r\n")
    eq(recv_until(s, b"END\r\n"), cfg_reply(body1), "config get cluster with trailing space (AWS PHP client)")
    s.sendall(b"get AmazonElastiCache:cluster\r\n")
    eq(recv_until(s, b"END\r\n"), legacy_reply(body1), "legacy get AmazonElastiCache:cluster: exact bytes")
    s.sendall(b"config get cluster\r\nget AmazonElastiCache:cluster\r\nversion\r\n")
    want = cfg_reply(body1) + legacy_reply(body1) + b"VERSION 1.6.21\r\n"
    eq(recv_exact(s, len(want)), want, "three pipelined requests in one write, in order")
    aws = (b"12\nmyCluster.pc4ldq.0001.use1.cache.amazonaws.com|10.82.235.120|11211 "
           b"myCluster.pc4ldq.0002.use1.cache.amazonaws.com|10.80.249.27|11211\n")
    write_atomic(cfg, aws)
    s.sendall(b"config get cluster\r\n")
    eq(recv_until(s, b"END\r\n"), b"CONFIG cluster 0 136\r\n" + aws + b"\r\nEND\r\n",
       "AWS documented example body, framed with its true length (136)")
    write_atomic(cfg, body1)
    s.sendall(b"stats\r\n")
    eq(recv_until(s, b"\r\n"), b"ERROR\r\n", "unknown command -> ERROR")
    s.sendall(b"get somekey\r\n")
    eq(recv_until(s, b"\r\n"), b"ERROR\r\n", "get of another key -> ERROR")
    s.sendall(b"set k 0 0 5\r\nhello\r\nversion\r\n")
    eq(recv_exact(s, 7 + 16), b"ERROR\r\nVERSION 1.6.21\r\n", "set -> one ERROR, data block swallowed, stream in sync")

    body2 = b"2\nnode-a.example|127.0.0.1|11211\n"
    write_atomic(cfg, body2)
    s.sendall(b"config get cluster\r\n")
    eq(recv_until(s, b"END\r\n"), cfg_reply(body2), "file re-read per request: new version on the same connection")
    s.sendall(b"get AmazonElastiCache:cluster\r\n")
    eq(recv_until(s, b"END\r\n"), legacy_reply(body2), "legacy get sees the new version too")

    bad = b"notanumber\nhost-without-pipes  |||\n"
    write_atomic(cfg, bad)
    s.sendall(b"config get cluster\r\n")
    eq(recv_until(s, b"END\r\n"), cfg_reply(bad), "malformed body served verbatim with its true length")
    nonl = b"3\nh|127.0.0.1|1"
    write_atomic(cfg, nonl)
    s.sendall(b"config get cluster\r\n")
    eq(recv_until(s, b"END\r\n"), cfg_reply(nonl), "body without trailing LF served verbatim")

    raw = b"CONFIG cluster 0 999\r\n4\nh|127.0.0.1|11211\n\r\nEND\r\n"
    write_atomic(cfg, b"#raw\n" + raw)
    s.sendall(b"config get cluster\r\n")
    eq(recv_exact(s, len(raw)), raw, "#raw: rest of the file sent as the raw reply (wrong length)")
    s.sendall(b"get AmazonElastiCache:cluster\r\n")
    eq(recv_exact(s, len(raw)), raw, "#raw applies to the legacy get as well")
    s.close()

    write_atomic(cfg, b"#close\n")
    s = conn(port)
    s.sendall(b"config get cluster\r\n")
    eq(recv_all(s), b"", "#close: connection closed without any byte")
    s.close()
    s = conn(port)
    s.sendall(b"version\r\nget AmazonElastiCache:cluster\r\n")
    eq(recv_all(s), b"VERSION 1.6.21\r\n", "#close on the legacy get: answered earlier commands, then EOF")
    s.close()

    s = conn(port)
    s.sendall(b"version\r\nquit\r\n")
    eq(recv_all(s), b"VERSION 1.6.21\r\n", "quit closes the connection")
    s.close()

    # concurrency: 40 connections x 10 requests while the file keeps changing
    write_atomic(cfg, body1)
    results = []

    def worker(i):
        ok = True
        try:
            c = conn(port, timeout=10)
            for _ in range(10):
                c.sendall(b"config get cluster\r\n")
                r = recv_until(c, b"END\r\n")
                ok = ok and r in (cfg_reply(body1), cfg_reply(body2))
            c.close()
        except Exception:
            ok = False
        results.append(ok)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(40)]
    for t in ts:
        t.start()
    for k in range(20):
        write_atomic(cfg, body2 if k % 2 else body1)
        time.sleep(0.005)
    for t in ts:
        t.join()
    check(len(results) == 40 and all(results), "40 concurrent connections x 10 polls, file rewritten meanwhile")

    stop(p, "elasticache_config.py")
    err.seek(0)
    errtext = err.read()
    check("served config version=1\n" in errtext and "served config version=2\n" in errtext,
          "stderr: 'served config version=<first line>' lines")
    check("served config version=notanumber" in errtext, "stderr: version line of a malformed body")
    check("served raw bytes=%d\n" % len(raw) in errtext and "closed without answer\n" in errtext,
          "stderr: #raw and #close requests noted")
    check("Traceback" not in errtext and "Task" not in errtext, "stderr: no traceback or asyncio warning")
    with open(log) as f:
        lines = f.read().splitlines()
    polls = [l for l in lines if l.split(" ", 1)[1] == "config get cluster"]
    fmt_ok = all(len(l.split(" ", 1)) == 2 and float(l.split(" ", 1)[0]) > 1e9 for l in lines)
    check(fmt_ok, "--log lines are '<unix_time_float> <command>'")
    eq(len(polls), 8 + 400, "--log counts every 'config get cluster' poll")
    legacy = [l for l in lines if l.endswith(" get AmazonElastiCache:cluster")]
    eq(len(legacy), 5, "--log counts every legacy get")
    check(any(l.endswith(" config get cluster ") for l in lines), "--log keeps the command as received")


def test_modes():
    print("== elasticache_config.py modes")
    cfg = os.path.join(TMP, "modes.cfg")
    body = b"7\nn1|127.0.0.1|11211 n2|127.0.0.1|11212\n"
    write_atomic(cfg, body)
    expect = {
        "elasticache": (cfg_reply(body), legacy_reply(body)),
        "config-only": (cfg_reply(body), b"END\r\n"),
        "legacy-only": (b"ERROR\r\n", legacy_reply(body)),
        "memorystore": (cfg_reply(body), b"ERROR\r\n"),
    }
    for mode, (want_cfg, want_legacy) in expect.items():
        p, port, _ = start_fake([EC, "--listen", "127.0.0.1:0", "--config", cfg, "--mode", mode], "ec-" + mode)
        s = conn(port)
        s.sendall(b"config get cluster\r\n")
        eq(recv_exact(s, len(want_cfg)), want_cfg, "mode %s: config get cluster" % mode)
        s.sendall(b"get AmazonElastiCache:cluster\r\n")
        eq(recv_exact(s, len(want_legacy)), want_legacy, "mode %s: get AmazonElastiCache:cluster" % mode)
        s.sendall(b"version\r\n")
        eq(recv_until(s, b"\r\n"), b"VERSION 1.6.21\r\n", "mode %s: version" % mode)
        check(quiet_for(s, 0.2), "mode %s: nothing extra sent" % mode)
        s.close()
        stop(p, "mode %s" % mode)

    log = os.path.join(TMP, "silent.log")
    p, port, _ = start_fake([EC, "--listen", "127.0.0.1:0", "--config", cfg, "--mode", "silent", "--log", log],
                            "ec-silent")
    socks = [conn(port) for _ in range(5)]
    for s in socks:
        s.sendall(b"config get cluster\r\nget AmazonElastiCache:cluster\r\nversion\r\n")
    check(all(quiet_for(s, 0.5) for s in socks), "mode silent: 5 connections accepted, read, never answered")
    for s in socks:
        s.close()
    time.sleep(0.1)
    with open(log) as f:
        n = sum(1 for l in f if l.rstrip("\n").endswith(" config get cluster"))
    eq(n, 5, "mode silent: --log still counts the polls")
    held = [conn(port) for _ in range(3)]
    for s in held:
        s.sendall(b"config get cluster\r\n")
    time.sleep(0.2)
    stop(p, "mode silent with 3 connections held open")
    check(all(recv_all(s) == b"" for s in held), "mode silent: SIGTERM closes held connections")
    for s in held:
        s.close()

    # stderr piped and never drained (as a careless test might): must not stall the server
    p, port, _ = start_fake([EC, "--listen", "127.0.0.1:0", "--config", cfg], "ec-pipe", stderr_pipe=True)
    s = conn(port, timeout=10)
    n = 6000
    want = cfg_reply(body) * 500
    ok = True
    for _ in range(n // 500):
        s.sendall(b"config get cluster\r\n" * 500)
        ok = ok and recv_exact(s, len(want)) == want
    check(ok, "%d polls (>64 KiB of stderr lines) answered while nobody reads stderr" % n)
    s.close()
    stop(p, "elasticache_config.py with an undrained stderr pipe")
    p.stderr.close()


def mc_cmd(port, data, n=None, end=b"\r\n"):
    s = conn(port)
    s.sendall(data)
    r = recv_exact(s, n) if n is not None else recv_until(s, end)
    s.close()
    return r


def test_memcachier(mport):
    print("== memcachier_front.py (backend memcached on %d)" % mport)
    user, pw = "u5F38e", "52353F9F1C4017CC16FD348B982ED47D"
    login = b"set %s 0 0 %d\r\n%s\r\n" % (user.encode(), len(pw), pw.encode())
    log = os.path.join(TMP, "mc.log")
    p, port, err = start_fake([MC, "--listen", "127.0.0.1:0", "--backend", "127.0.0.1:%d" % mport,
                               "--user", user, "--password", pw, "--log", log], "mc")
    UN = b"CLIENT_ERROR unauthenticated\r\n"

    s = conn(port)
    for req, what in [(b"get foo\r\n", "get"), (b"version\r\n", "version"), (b"mg foo v\r\n", "mg"),
                      (b"mn\r\n", "mn"), (b"set other 0 0 5\r\nhello\r\n", "set of another key (data consumed)"),
                      (b"ms foo 3 T0\r\nbar\r\n", "ms (data consumed)"),
                      (b"add x 0 0 1\r\nz\r\n", "add (data consumed)")]:
        s.sendall(req)
        eq(recv_until(s, b"\r\n"), UN, "before login: %s -> CLIENT_ERROR unauthenticated" % what)
    s.sendall(b"set other 0 0 2\r\n\r\n\r\nmn\r\n")
    eq(recv_exact(s, 2 * len(UN)), UN + UN, "before login: set whose data is CRLF stays in sync")
    check(quiet_for(s, 0.2), "before login: connection stays open, nothing extra")
    s.sendall(login)
    eq(recv_until(s, b"\r\n"), b"STORED\r\n", "login after unauthenticated commands -> STORED")
    s.sendall(b"set k1 5 0 3\r\nabc\r\nget k1\r\n")
    eq(recv_until(s, b"END\r\n"), b"STORED\r\nVALUE k1 5 3\r\nabc\r\nEND\r\n", "proxied set/get after login")
    s.sendall(b"version\r\n")
    r = recv_until(s, b"\r\n")
    check(r.startswith(b"VERSION 1.6."), "proxied version answered by the real memcached (%r)" % r)
    s.sendall(b"ms mk 2 T0\r\nhi\r\nmg mk v\r\nmn\r\n")
    eq(recv_until(s, b"MN\r\n"), b"HD\r\nVA 2\r\nhi\r\nMN\r\n", "proxied meta commands")
    s.close()

    eq(mc_cmd(mport, b"get k1\r\n", end=b"END\r\n"), b"VALUE k1 5 3\r\nabc\r\nEND\r\n",
       "the proxied set landed in the backend")
    eq(mc_cmd(mport, b"get %s\r\n" % user.encode(), end=b"END\r\n"), b"END\r\n",
       "login key never lands in the backend (get USER on backend is a miss)")
    eq(mc_cmd(mport, b"get other foo x\r\n", end=b"END\r\n"), b"END\r\n",
       "unauthenticated sets never land in the backend")

    # pipelined login + commands in one write; binary-safe payload with CRLF inside
    val = b"a\r\nb\x00c\r\n"
    s = conn(port)
    s.sendall(b"set %s 7 300 %d noreply\r\n%s\r\nset bin 0 0 %d\r\n%s\r\nget bin\r\n"
              % (user.encode(), len(pw), pw.encode(), len(val), val))
    want = b"STORED\r\nSTORED\r\nVALUE bin 0 %d\r\n%s\r\nEND\r\n" % (len(val), val)
    eq(recv_exact(s, len(want)), want, "pipelined login (flags/exptime/noreply) + commands; binary-safe proxy")
    s.close()

    s = conn(port)
    s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (user.encode(), len(pw), b"X" * len(pw)))
    eq(recv_all(s), b"CLIENT_ERROR authentication failure\r\n", "wrong password -> authentication failure, closed")
    s.close()
    s = conn(port)
    s.sendall(b"get a\r\nset %s 0 0 5\r\nwrong\r\nget b\r\n" % user.encode())
    eq(recv_all(s), UN + b"CLIENT_ERROR authentication failure\r\n", "wrong password after a command: closed, rest unanswered")
    s.close()
    s = conn(port)
    s.sendall(b"set other 0 0 %d\r\n%s\r\n" % (len(pw), pw.encode()))
    eq(recv_until(s, b"\r\n"), UN, "right password under another key is not a login")
    s.close()
    s = conn(port)
    s.sendall(b"quit\r\n")
    eq(recv_all(s), b"", "quit before login closes quietly")
    s.close()

    # concurrency: 30 clients log in and work at the same time
    results = []

    def worker(i):
        try:
            c = conn(port, timeout=10)
            c.sendall(login)
            ok = recv_until(c, b"\r\n") == b"STORED\r\n"
            for j in range(20):
                v = b"v%d-%d" % (i, j)
                c.sendall(b"set ck%d 0 0 %d\r\n%s\r\nget ck%d\r\n" % (i, len(v), v, i))
                ok = ok and recv_until(c, b"END\r\n") == b"STORED\r\nVALUE ck%d 0 %d\r\n%s\r\nEND\r\n" % (i, len(v), v)
            c.close()
            results.append(ok)
        except Exception:
            results.append(False)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(30)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check(len(results) == 30 and all(results), "30 concurrent authenticated clients x 20 set/get")

    # client half-close: replies still come back, then EOF
    s = conn(port)
    s.sendall(login + b"get k1\r\n")
    s.shutdown(socket.SHUT_WR)
    eq(recv_all(s), b"STORED\r\nVALUE k1 5 3\r\nabc\r\nEND\r\n", "client half-close: pending replies, then EOF")
    s.close()

    # a held-open authenticated connection does not block SIGTERM
    held = conn(port)
    held.sendall(login)
    recv_until(held, b"\r\n")
    time.sleep(0.2)
    stop(p, "memcachier_front.py")
    eq(recv_all(held), b"", "SIGTERM closes authenticated connections")
    held.close()

    err.seek(0)
    errtext = err.read()
    check(pw not in errtext, "stderr never shows the password")
    check("Traceback" not in errtext and "Task" not in errtext, "stderr: no traceback or asyncio warning")
    eq(errtext.count("login ok\n"), 1 + 1 + 30 + 1 + 1, "stderr: one 'login ok' per successful login")
    eq(errtext.count("login failed\n"), 2, "stderr: one 'login failed' per refused login")
    with open(log) as f:
        text = f.read()
    lines = text.splitlines()
    check(pw not in text, "--log never shows the password")
    eq(lines.count("login ok"), 34, "--log: login ok lines")
    eq(lines.count("login failed"), 2, "--log: login failed lines")
    check("unauthenticated get foo" in lines and "unauthenticated set other 0 0 5" in lines
          and "unauthenticated ms foo 3 T0" in lines and "unauthenticated mn" in lines,
          "--log: 'unauthenticated <command>' lines")

    # backend down: login answered SERVER_ERROR, connection closed
    dead = free_port()
    p, port, _ = start_fake([MC, "--listen", "127.0.0.1:0", "--backend", "127.0.0.1:%d" % dead,
                             "--user", user, "--password", pw], "mc-dead")
    s = conn(port)
    s.sendall(login)
    eq(recv_all(s), b"SERVER_ERROR backend unavailable\r\n", "backend unreachable: SERVER_ERROR, closed")
    s.close()
    stop(p, "memcachier_front.py (dead backend)")


def main():
    mport = free_port()
    argv = ["memcached", "-l", "127.0.0.1", "-p", str(mport), "-U", "0"]
    if os.geteuid() == 0:
        argv += ["-u", "root"]  # memcached refuses to run as root otherwise
    m = subprocess.Popen(argv,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    PROCS.append(m)
    deadline = time.time() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", mport), timeout=1).close()
            break
        except OSError:
            if time.time() > deadline or m.poll() is not None:
                raise SystemExit("memcached did not start on %d" % mport)
            time.sleep(0.05)
    test_elasticache()
    test_modes()
    test_memcachier(mport)


try:
    main()
finally:
    for p in PROCS:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    import shutil
    shutil.rmtree(TMP, ignore_errors=True)

print("%d checks, %d failed" % (CHECKS, len(FAILS)))
sys.exit(1 if FAILS else 0)
PYEOF

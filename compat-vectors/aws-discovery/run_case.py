#!/usr/bin/env python3
"""Runs one case through a real AWS client and writes its expected.tsv (stdlib only; loopback only).

  run_case.py CASE_DIR --client java --java "java ... -cp CLASSES"       (mode from the case name suffix)
  run_case.py CASE_DIR --client php  --php "php -n -d extension=/x/memcached.so" --libdir /x/lib

1. Starts fake_config_endpoint.py serving CASE_DIR/config.txt on 127.0.0.1:<free port>.
2. Starts one real memcached per node (IP:port of config.txt, all in 127.0.0.0/8).
3. Runs the driver in dynamic mode against the endpoint with keys.txt on stdin and --set: it prints the
   client's own placement (Java getNodeLocator().getPrimary(key) -> ip:port; PHP getServerByKey(key) ->
   host:port) and then stores every key through the client.
4. Asks every memcached which keys it holds (pipelined get), so each key's ADDR is also known from where
   the client really sent it (PHP: also the probe keys, see aws_php_discovery_route.php). Java: getPrimary must equal it. PHP: the node must be the one getServerByKey
   named (host name, or localhost for an empty one, and port); when several nodes carry that name and port
   only the live answer tells them apart, and it is used.
5. Writes expected.tsv (KEY<TAB>ip:port) and prints one summary line (tab separated):
   case  keys  agree  stored-as-key  ambiguous-names  commands-seen-by-endpoint
   (agree = keys whose live node is the one the client's placement call named; stored-as-key = keys found
   under their own name; PHP refuses non-ASCII keys in set(), so there only the probes show them)
Exit 3 when the client could not be set up from the config (driver exit 3); nothing is written then.
"""
import argparse, ipaddress, os, shlex, shutil, socket, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
CFG_NAME = "discovery.abc123.cfg.memshard.invalid"  # contains ".cfg." -> the Java client picks dynamic mode


def parse_config(path):
    with open(path, "rb") as f:
        lines = f.read().decode("utf-8").strip().split("\n")
    nodes = []
    for tok in lines[1].split():
        host, ip, port = tok.split("|")
        if not ipaddress.ip_address(ip).is_loopback:
            sys.exit("non-loopback node %s in %s" % (ip, path))
        nodes.append((host, ip, int(port)))
    return nodes


def wait_port(ip, port, proc, what):
    for _ in range(200):
        if proc.poll() is not None:
            sys.exit("%s exited early (%s)" % (what, proc.returncode))
        try:
            socket.create_connection((ip, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit("%s did not listen on %s:%d" % (what, ip, port))


def held_keys(ip, port, keys):
    """Which of keys the memcached at ip:port holds (pipelined ASCII get, 100 keys per batch)."""
    s = socket.create_connection((ip, port), timeout=10)
    f = s.makefile("rb")
    held = set()
    for i in range(0, len(keys), 100):
        batch = keys[i:i + 100]
        s.sendall(b"".join(b"get " + k + b"\r\n" for k in batch))
        for k in batch:
            line = f.readline()
            if line.startswith(b"VALUE "):
                parts = line.split()
                if parts[1] != k:
                    sys.exit("unexpected VALUE line %r" % line)
                f.read(int(parts[3]) + 2)
                held.add(k)
                line = f.readline()
            if line != b"END\r\n":
                sys.exit("unexpected reply %r from %s:%d" % (line, ip, port))
    s.sendall(b"quit\r\n")
    s.close()
    return held


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--client", required=True, choices=["java", "php"])
    ap.add_argument("--java")
    ap.add_argument("--php")
    ap.add_argument("--libdir")
    ap.add_argument("--keep", help="copy the work dir (logs) here")
    a = ap.parse_args()
    case = os.path.abspath(a.case)
    name = os.path.basename(case)
    mode = name.rsplit("-", 1)[1]
    assert mode in ("modula", "ketama"), name
    nodes = parse_config(os.path.join(case, "config.txt"))
    with open(os.path.join(case, "keys.txt"), "rb") as f:
        keys = f.read().split(b"\n")
    assert keys[-1] == b""
    keys = keys[:-1]

    work = tempfile.mkdtemp(prefix="aws-discovery-")
    procs = []
    try:
        ep = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_config_endpoint.py"), "--config",
                               os.path.join(case, "config.txt"), "--port-file", os.path.join(work, "port"),
                               "--log", os.path.join(work, "endpoint.log")],
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "endpoint.err"), "w"))
        procs.append(ep)
        for _ in range(200):
            if os.path.exists(os.path.join(work, "port")):
                break
            if ep.poll() is not None:
                sys.exit("fake endpoint exited")
            time.sleep(0.05)
        cfg_port = int(open(os.path.join(work, "port")).read())

        user = ["-u", "nobody"] if os.geteuid() == 0 else []
        for ip, port in sorted(set((ip, port) for _, ip, port in nodes)):
            p = subprocess.Popen(["memcached"] + user + ["-l", ip, "-p", str(port), "-U", "0", "-t", "1",
                                                         "-m", "16", "-c", "64"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(p)
            wait_port(ip, port, p, "memcached %s:%d" % (ip, port))

        if a.client == "java":
            with open(os.path.join(work, "hosts"), "w") as f:
                f.write("127.0.0.1 localhost\n127.0.0.1 %s\n" % CFG_NAME)
            cmd = shlex.split(a.java)
            cmd[1:1] = ["-Djdk.net.hosts.file=" + os.path.join(work, "hosts")]
            cmd += ["AwsJavaDiscoveryRoute", mode, "%s:%d" % (CFG_NAME, cfg_port),
                    os.path.join(case, "config.txt"), "--set"]
        else:
            cmd = shlex.split(a.php) + [os.path.join(HERE, "aws_php_discovery_route.php"), mode, "127.0.0.1",
                                        str(cfg_port), a.libdir, "--set"]
        with open(os.path.join(case, "keys.txt"), "rb") as fin, open(os.path.join(work, "driver.err"), "wb") as ferr:
            r = subprocess.run(cmd, stdin=fin, stdout=subprocess.PIPE, stderr=ferr, timeout=600)
        err = open(os.path.join(work, "driver.err"), "rb").read().decode("utf-8", "replace")
        if r.returncode == 3:
            msg = [l.split("DISCOVERY-FAILED", 1)[1].strip() for l in err.splitlines() if "DISCOVERY-FAILED" in l]
            print("%s\tDISCOVERY-FAILED\t%s" % (name, msg[0] if msg else "?"))
            sys.exit(3)
        if r.returncode != 0:
            sys.stderr.write(err[-4000:])
            sys.exit("driver failed (%d) for %s" % (r.returncode, name))
        out = r.stdout.split(b"\n")
        assert out[-1] == b""
        out = out[:-1]
        if [l.rsplit(b"\t", 1)[0] for l in out] != keys:
            sys.exit("key column differs from keys.txt for %s" % name)
        answer = [l.rsplit(b"\t", 1)[1].decode() for l in out]

        # Where did the client really send each key? Java: the key itself. PHP: "probe:<n>" (setByKey with the
        # key as server key, for every key) and the key itself for the keys that set() accepted.
        probes = [b"probe:%d" % i for i in range(len(keys))] if a.client == "php" else []
        where = {}
        for ip, port in sorted(set((ip, port) for _, ip, port in nodes)):
            for k in held_keys(ip, port, keys + probes):
                if k in where:
                    sys.exit("%r on two nodes" % k)
                where[k] = "%s:%d" % (ip, port)
        live = []
        stored_as_key = 0
        for i, k in enumerate(keys):
            w = where.get(probes[i]) if probes else where.get(k)
            if w is None:
                sys.exit("%s: key %r stored nowhere" % (name, k))
            if k in where:
                stored_as_key += 1
                if where[k] != w:
                    sys.exit("%s: set(%r) went to %s, setByKey with it to %s" % (name, k, where[k], w))
            live.append(w)

        addrs, agree, ambiguous = [], 0, 0
        for k, ans, lv in zip(keys, answer, live):
            if a.client == "java":
                cands = [ans]
            else:
                host, port = ans.rsplit(":", 1)
                cands = ["%s:%d" % (ip, p) for h, ip, p in nodes if (h or "localhost") == host and p == int(port)]
                if len(cands) > 1:
                    ambiguous += 1
            if lv in cands:
                agree += 1
            addrs.append(lv if len(cands) > 1 else cands[0])
        if agree != len(keys):
            sys.exit("%s: the client stored %d of %d keys elsewhere than its own placement says"
                     % (name, len(keys) - agree, len(keys)))
        with open(os.path.join(case, "expected.tsv"), "wb") as f:
            for k, ad in zip(keys, addrs):
                f.write(k + b"\t" + ad.encode() + b"\n")
        cmds = []
        for line in open(os.path.join(work, "endpoint.log"), encoding="utf-8"):
            c = line.split(" ", 1)[1].strip()
            if c not in cmds:
                cmds.append(c)
        print("%s\t%d\t%d\t%d\t%d\t%s" % (name, len(keys), agree, stored_as_key, ambiguous, " | ".join(cmds)))
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        if a.keep:
            shutil.copytree(work, os.path.join(a.keep, name), dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

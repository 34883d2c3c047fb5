// Drives the AWS ElastiCache Cluster Client for Java (a spymemcached fork) in DYNAMIC (auto-discovery) mode,
// run against the fork's own classes (see README.md).
//
// Usage: java -Djdk.net.hosts.file=HOSTS -cp CLASSES AwsJavaDiscoveryRoute modula|ketama CFG_HOST:PORT config.txt [--set]
//        < keys > expected.tsv
//
//   modula: new MemcachedClient(AddrUtil.getAddresses("CFG_HOST:PORT"))
//           (no factory: the client picks DefaultConnectionFactory(ClientMode.Dynamic) itself because the one
//           address's host name contains ".cfg."; DefaultConnectionFactory.createLocator = ArrayModNodeLocator,
//           hash NATIVE_HASH = String.hashCode() & 0xffffffff)
//   ketama: new MemcachedClient(new KetamaConnectionFactory(), AddrUtil.getAddresses("CFG_HOST:PORT"))
//           (factory client mode Unset -> Dynamic for the same reason; KetamaNodeLocator, KETAMA_HASH = SHA-384)
//
// The constructor sends "config get cluster" to the configuration endpoint (a loopback fake), parses the reply
// (AddrUtil.parseClusterTypeConfiguration), and waits until MemcachedConnection has applied the node list to
// its locator. This program then checks that client.getNodeLocator().getAll() holds exactly the nodes of
// config.txt (host name, IP, port, in reply order), prints them to stderr, and prints for each key line (UTF-8)
// "KEY<TAB>ip:port" of getNodeLocator().getPrimary(key).getSocketAddress(), i.e. the address the client
// connects to for that key. getPrimary needs no live node.
// --set: afterwards also stores every key through the client (client.set(key, 0, "1").get()), so that the
// caller can read back which memcached process received it (a check that routing == getPrimary).
// Exit 3 (with "DISCOVERY-FAILED ..." on stderr) when the client cannot be set up from the discovered config.
import net.spy.memcached.*;
import net.spy.memcached.config.NodeEndPoint;
import java.io.*;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import java.util.concurrent.TimeUnit;

public class AwsJavaDiscoveryRoute {
  static String addr(MemcachedNode n) {
    InetSocketAddress sa = (InetSocketAddress) n.getSocketAddress();
    String ip = sa.getAddress().getHostAddress();
    return (ip.indexOf(':') >= 0 ? "[" + ip + "]" : ip) + ":" + sa.getPort();
  }

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    String endpoint = args[1];
    // Independent reading of config.txt: line 2 = "host|ip|port host|ip|port ..."
    String[] cfgLines = new String(Files.readAllBytes(Paths.get(args[2])), StandardCharsets.UTF_8).trim().split("\r?\n");
    List<String> want = new ArrayList<>();
    for (String t : cfgLines[1].trim().split("\\s+")) want.add(t);
    boolean doSet = args.length > 3 && args[3].equals("--set");

    MemcachedClient client;
    try {
      List<InetSocketAddress> cfg = AddrUtil.getAddresses(endpoint);
      if (mode.equals("modula")) {
        client = new MemcachedClient(cfg);
      } else if (mode.equals("ketama")) {
        client = new MemcachedClient(new KetamaConnectionFactory(), cfg);
      } else {
        throw new IllegalArgumentException("mode " + mode);
      }
    } catch (Exception e) {
      System.err.println("DISCOVERY-FAILED " + e);
      System.exit(3);
      return;
    }

    // The constructor already waited for the initial config; poll a little in case it fell back to the poller.
    NodeLocator loc = null;
    List<String> got = null;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (true) {
      loc = client.getNodeLocator();
      got = new ArrayList<>();
      for (MemcachedNode n : loc.getAll()) {
        NodeEndPoint ep = n.getNodeEndPoint();
        got.add(ep.getHostName() + "|" + ep.getIpAddress() + "|" + ep.getPort());
      }
      if (got.equals(want)) break;
      if (System.nanoTime() > deadline) {
        System.err.println("DISCOVERY-FAILED locator holds " + got + ", config says " + want);
        client.shutdown(1, TimeUnit.SECONDS);
        System.exit(3);
      }
      Thread.sleep(100);
    }
    String locClass = loc.getClass().getSimpleName(); // read-only copy keeps the class
    String expectClass = mode.equals("modula") ? "ArrayModNodeLocator" : "KetamaNodeLocator";
    if (!locClass.equals(expectClass)) throw new IllegalStateException("locator " + locClass);
    System.err.println("locator " + locClass);
    for (MemcachedNode n : loc.getAll()) {
      NodeEndPoint ep = n.getNodeEndPoint();
      System.err.println("node " + ep.getHostName() + "|" + ep.getIpAddress() + "|" + ep.getPort()
          + " socketAddress=" + n.getSocketAddress() + " -> " + addr(n));
    }

    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    List<String> keys = new ArrayList<>();
    String key;
    while ((key = in.readLine()) != null) keys.add(key);
    PrintStream out = new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out)), false, "UTF-8");
    for (String k : keys) {
      MemcachedNode n = loc.getPrimary(k);
      out.print(k); out.print('\t'); out.print(addr(n)); out.print('\n');
    }
    out.flush();
    if (doSet) {
      int bad = 0;
      for (String k : keys) {
        Boolean ok = client.set(k, 0, "1").get(10, TimeUnit.SECONDS);
        if (ok == null || !ok) bad++;
      }
      System.err.println("set: " + (keys.size() - bad) + " ok, " + bad + " failed");
      if (bad != 0) System.exit(4);
    }
    client.shutdown(2, TimeUnit.SECONDS);
    System.exit(0);
  }
}

// Drives the real spymemcached 2.12.3 KetamaNodeLocator (Debian libspymemcached-java).
// Usage: java -Djdk.net.hosts.file=hosts -cp spymemcached.jar:. SpyRoute FLAVOR servers.txt < keys > expected.tsv
//        java ... SpyRoute FLAVOR servers.txt --node-keys   (prints the formatter's node key for i=0 per server)
// FLAVOR: spymemcached           -> new KetamaConnectionFactory() (KETAMA_HASH, Format.SPYMEMCACHED, no weights)
//         spymemcached-weighted  -> new KetamaConnectionFactory(..., KETAMA_HASH, Format.SPYMEMCACHED, weights)
// Nodes are real MemcachedNode objects made by the factory's createMemcachedNode over an unconnected
// SocketChannel (no network I/O); the locator is made by factory.createLocator(nodes), exactly what
// MemcachedConnection does. Addresses come from AddrUtil.getAddresses (which resolves host names).
import net.spy.memcached.*;
import net.spy.memcached.util.DefaultKetamaNodeLocatorConfiguration;
import java.io.*;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

public class SpyRoute {
  public static void main(String[] args) throws Exception {
    String flavor = args[0];
    List<String> addrs = new ArrayList<>();
    List<Integer> weightList = new ArrayList<>();
    for (String line : Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8)) {
      String t = line.trim();
      if (t.isEmpty() || t.startsWith("#")) continue;
      String[] f = t.split("\\s+");
      addrs.add(f[0]);
      weightList.add(f.length > 1 ? Integer.parseInt(f[1]) : 1);
    }
    List<InetSocketAddress> sas = AddrUtil.getAddresses(addrs);
    KetamaConnectionFactory cf;
    if (flavor.equals("spymemcached")) {
      cf = new KetamaConnectionFactory();
    } else if (flavor.equals("spymemcached-weighted")) {
      Map<InetSocketAddress, Integer> w = new HashMap<>();
      for (int i = 0; i < sas.size(); i++) {
        if (w.put(sas.get(i), weightList.get(i)) != null) throw new IllegalArgumentException("duplicate address " + addrs.get(i));
      }
      cf = new KetamaConnectionFactory(DefaultConnectionFactory.DEFAULT_OP_QUEUE_LEN,
          DefaultConnectionFactory.DEFAULT_READ_BUFFER_SIZE, DefaultConnectionFactory.DEFAULT_OP_QUEUE_MAX_BLOCK_TIME,
          DefaultHashAlgorithm.KETAMA_HASH, KetamaNodeKeyFormatter.Format.SPYMEMCACHED, w);
    } else throw new IllegalArgumentException("unknown flavor " + flavor);
    List<MemcachedNode> nodes = new ArrayList<>();
    IdentityHashMap<MemcachedNode, String> back = new IdentityHashMap<>();
    for (int i = 0; i < sas.size(); i++) {
      MemcachedNode n = cf.createMemcachedNode(sas.get(i), SocketChannel.open(), cf.getReadBufSize());
      nodes.add(n);
      back.put(n, addrs.get(i));
    }
    NodeLocator loc = cf.createLocator(nodes);
    PrintStream out = new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out)), false, "UTF-8");
    if (args.length > 2 && args[2].equals("--node-keys")) {
      DefaultKetamaNodeLocatorConfiguration conf = new DefaultKetamaNodeLocatorConfiguration();
      for (MemcachedNode n : nodes) {
        out.println(back.get(n) + "\t" + String.valueOf(n.getSocketAddress()) + "\t" + conf.getKeyForNode(n, 0)
            + "\t" + new KetamaNodeKeyFormatter(KetamaNodeKeyFormatter.Format.LIBMEMCACHED).getKeyForNode(n, 0));
      }
      out.flush();
      return;
    }
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String key;
    while ((key = in.readLine()) != null) {
      MemcachedNode n = loc.getPrimary(key);
      String a = back.get(n);
      if (a == null) throw new IllegalStateException("unknown node for key " + key);
      out.print(key); out.print('\t'); out.print(a); out.print('\n');
    }
    out.flush();
    for (MemcachedNode n : nodes) n.getChannel().close();
  }
}

// Drives the real spymemcached 2.12.3 ArrayModNodeLocator (Debian libspymemcached-java), i.e. the locator of
// DefaultConnectionFactory, the factory MemcachedClient uses when none is given.
// Usage: java -Djdk.net.hosts.file=hosts -cp spymemcached.jar:. SpyModRoute servers.txt [HASH] < keys > expected.tsv
//   no HASH       -> new DefaultConnectionFactory()              (DEFAULT_HASH = DefaultHashAlgorithm.NATIVE_HASH)
//   HASH = a DefaultHashAlgorithm constant name (CRC_HASH, FNV1_64_HASH, ...)
//                 -> new DefaultConnectionFactory(DEFAULT_OP_QUEUE_LEN, DEFAULT_READ_BUFFER_SIZE, HASH)
// Nodes are real MemcachedNode objects made by the factory's createMemcachedNode over an unconnected
// SocketChannel (no network I/O); the locator is factory.createLocator(nodes), as MemcachedConnection does.
// Addresses come from AddrUtil.getAddresses. Keys are read as UTF-8 lines; each goes through locator.getPrimary.
import net.spy.memcached.*;
import java.io.*;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

public class SpyModRoute {
  public static void main(String[] args) throws Exception {
    List<String> addrs = new ArrayList<>();
    for (String line : Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8)) {
      String t = line.trim();
      if (t.isEmpty() || t.startsWith("#")) continue;
      addrs.add(t.split("\\s+")[0]);
    }
    List<InetSocketAddress> sas = AddrUtil.getAddresses(addrs);
    DefaultConnectionFactory cf = args.length > 1
        ? new DefaultConnectionFactory(DefaultConnectionFactory.DEFAULT_OP_QUEUE_LEN,
            DefaultConnectionFactory.DEFAULT_READ_BUFFER_SIZE, DefaultHashAlgorithm.valueOf(args[1]))
        : new DefaultConnectionFactory();
    if (args.length == 1 && cf.getHashAlg() != DefaultHashAlgorithm.NATIVE_HASH)
      throw new IllegalStateException("default hash is " + cf.getHashAlg());
    List<MemcachedNode> nodes = new ArrayList<>();
    IdentityHashMap<MemcachedNode, String> back = new IdentityHashMap<>();
    for (int i = 0; i < sas.size(); i++) {
      MemcachedNode n = cf.createMemcachedNode(sas.get(i), SocketChannel.open(), cf.getReadBufSize());
      nodes.add(n);
      back.put(n, addrs.get(i));
    }
    NodeLocator loc = cf.createLocator(nodes);
    if (!(loc instanceof ArrayModNodeLocator)) throw new IllegalStateException("locator is " + loc.getClass());
    PrintStream out = new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out)), false, "UTF-8");
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

// Drives the KetamaNodeLocator of the AWS ElastiCache Cluster Client for Java (a spymemcached fork), run
// against the fork's own classes (see README.md).
// Usage: java -Djdk.net.hosts.file=hosts -cp CLASSES:. AwsKetamaRoute servers.txt < keys > expected.tsv
//        java ... AwsKetamaRoute servers.txt --node-keys   (server token, socket address, node key for i=0)
// Factory: new KetamaConnectionFactory() (KETAMA_HASH, which this fork computes with SHA-384;
// Format.SPYMEMCACHED; no weights). Nodes are made as MemcachedConnection.createConnections makes them for a
// static server list, minus the connect: the InetSocketAddress from AddrUtil.getAddresses becomes
// new NodeEndPoint(sa.getHostName(), ip-or-null, sa.getPort()) (MemcachedConnection's constructor), the node is
// factory.createMemcachedNode(sa, SocketChannel.open(), bufSize) over a channel that is never connected, then
// node.setNodeEndPoint(endPoint) (which re-derives the node's socket address from the endpoint); finally the
// locator is factory.createLocator(nodes). Each key line (UTF-8) goes through locator.getPrimary.
import net.spy.memcached.*;
import net.spy.memcached.config.NodeEndPoint;
import net.spy.memcached.util.DefaultKetamaNodeLocatorConfiguration;
import java.io.*;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

public class AwsKetamaRoute {
  public static void main(String[] args) throws Exception {
    List<String> addrs = new ArrayList<>();
    for (String line : Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8)) {
      String t = line.trim();
      if (t.isEmpty() || t.startsWith("#")) continue;
      addrs.add(t.split("\\s+")[0]);
    }
    List<InetSocketAddress> sas = AddrUtil.getAddresses(addrs);
    KetamaConnectionFactory cf = new KetamaConnectionFactory();
    if (cf.getHashAlg() != DefaultHashAlgorithm.KETAMA_HASH) throw new IllegalStateException("hash " + cf.getHashAlg());
    List<MemcachedNode> nodes = new ArrayList<>();
    IdentityHashMap<MemcachedNode, String> back = new IdentityHashMap<>();
    for (int i = 0; i < sas.size(); i++) {
      InetSocketAddress sa = sas.get(i);
      InetAddress a = sa.getAddress();
      NodeEndPoint ep = new NodeEndPoint(sa.getHostName(), a != null ? a.getHostAddress() : null, sa.getPort());
      MemcachedNode n = cf.createMemcachedNode(sa, SocketChannel.open(), cf.getReadBufSize());
      n.setNodeEndPoint(ep);
      nodes.add(n);
      back.put(n, addrs.get(i));
    }
    NodeLocator loc = cf.createLocator(nodes);
    if (!(loc instanceof KetamaNodeLocator)) throw new IllegalStateException("locator " + loc.getClass());
    PrintStream out = new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out)), false, "UTF-8");
    if (args.length > 1 && args[1].equals("--node-keys")) {
      DefaultKetamaNodeLocatorConfiguration conf = new DefaultKetamaNodeLocatorConfiguration();
      for (MemcachedNode n : nodes) {
        out.print(back.get(n) + "\t" + String.valueOf(n.getSocketAddress()) + "\t" + conf.getKeyForNode(n, 0) + "\n");
      }
      out.flush();
      return;
    }
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String key;
    while ((key = in.readLine()) != null) {
      MemcachedNode n = loc.getPrimary(key);
      String s = back.get(n);
      if (s == null) throw new IllegalStateException("unknown node for key " + key);
      out.print(key); out.print('\t'); out.print(s); out.print('\n');
    }
    out.flush();
    for (MemcachedNode n : nodes) n.getChannel().close();
  }
}

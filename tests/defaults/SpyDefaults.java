// spymemcached's side of cli/tests/defaults_live.rs, at its default placement.
//
//   javac -cp spymemcached.jar -d DIR SpyDefaults.java
//   java -cp spymemcached.jar:DIR SpyDefaults write|read HOST:PORT:WEIGHT...
//
// `new MemcachedClient(new DefaultConnectionFactory(), AddrUtil.getAddresses("host:port ..."))`
// (checked: the locator is ArrayModNodeLocator, the hash NATIVE_HASH = String.hashCode); WEIGHT
// is ignored (that locator takes none). Keys are Java Strings decoded from UTF-8. stdin: one key
// per line, `KEYHEX VALUEHEX` (write) or `KEYHEX` (read); stdout, one line per key in the same
// order: `KEYHEX ok`, `KEYHEX hit VALUEHEX`, `KEYHEX miss` or `KEYHEX error MESSAGE`. Values are
// Strings: the default SerializingTranscoder stores them as UTF-8, flags 0.
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import net.spy.memcached.AddrUtil;
import net.spy.memcached.ArrayModNodeLocator;
import net.spy.memcached.DefaultConnectionFactory;
import net.spy.memcached.DefaultHashAlgorithm;
import net.spy.memcached.MemcachedClient;

public class SpyDefaults {
  static String hex(byte[] bytes) {
    StringBuilder b = new StringBuilder();
    for (byte x : bytes) {
      b.append(String.format("%02x", x & 0xff));
    }
    return b.toString();
  }

  static String unhex(String h) {
    byte[] out = new byte[h.length() / 2];
    for (int i = 0; i < out.length; i++) {
      out[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
    }
    return new String(out, StandardCharsets.UTF_8);
  }

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    if (!mode.equals("write") && !mode.equals("read") || args.length < 2) {
      throw new IllegalArgumentException("usage: SpyDefaults write|read HOST:PORT:WEIGHT...");
    }
    StringBuilder addrs = new StringBuilder();
    for (int i = 1; i < args.length; i++) {
      String s = args[i];
      addrs.append(s, 0, s.lastIndexOf(':')).append(' ');
    }
    DefaultConnectionFactory cf = new DefaultConnectionFactory();
    if (cf.getHashAlg() != DefaultHashAlgorithm.NATIVE_HASH) {
      throw new IllegalStateException("default hash is " + cf.getHashAlg());
    }
    MemcachedClient c = new MemcachedClient(cf, AddrUtil.getAddresses(addrs.toString().trim()));
    if (!(c.getNodeLocator() instanceof ArrayModNodeLocator)) {
      throw new IllegalStateException("locator is " + c.getNodeLocator().getClass());
    }
    // At its defaults (FailureMode.Redistribute) spymemcached sends a key whose server is not
    // connected yet to the next server in sequence (MemcachedConnection.addOperation): a
    // miss on a loaded machine. Wait until every server is connected.
    long deadline = System.currentTimeMillis() + 10_000;
    while (c.getAvailableServers().size() < args.length - 1
        && System.currentTimeMillis() < deadline) {
      Thread.sleep(10);
    }
    PrintStream out =
        new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      String[] f = line.trim().split(" ");
      String key = unhex(f[0]);
      try {
        if (mode.equals("write")) {
          boolean ok = c.set(key, 0, unhex(f[1])).get();
          out.println(f[0] + (ok ? " ok" : " error set returned false"));
          continue;
        }
        Object v = c.get(key);
        if (v == null) {
          out.println(f[0] + " miss");
        } else if (!(v instanceof String)) {
          out.println(f[0] + " error not a String: " + v.getClass().getName());
        } else {
          out.println(f[0] + " hit " + hex(((String) v).getBytes(StandardCharsets.UTF_8)));
        }
      } catch (Exception e) {
        out.println(f[0] + " error " + String.valueOf(e).replace('\n', ' '));
      }
    }
    out.flush();
    c.shutdown();
  }
}

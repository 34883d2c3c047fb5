// spymemcached's side of cli/tests/detect_live.rs: write keys as the peer places them, or read
// back the keys memshard wrote.
//
//     [DETECT_ACTION=read] java SpyDetect default|ketama HOST:PORT:WEIGHT...
//
// default: `new MemcachedClient(new DefaultConnectionFactory(), addrs)` (ArrayModNodeLocator,
// NATIVE_HASH); ketama: `new KetamaConnectionFactory()` (KetamaNodeLocator, KETAMA_HASH).
// WEIGHT is ignored. stdin: one key per line. Writing (the default): each key is set to a
// String, an Integer or a Long in turn (SerializingTranscoder flags). DETECT_ACTION=read: the
// Nth key (from 0) must hold the key itself as a String, the Integer N or the Long 2^32+N in
// turn, each of exactly that class; the first miss or wrong value is printed on stderr.
// Prints `ok N`; any failure exits 1.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import net.spy.memcached.AddrUtil;
import net.spy.memcached.ConnectionFactory;
import net.spy.memcached.DefaultConnectionFactory;
import net.spy.memcached.KetamaConnectionFactory;
import net.spy.memcached.MemcachedClient;

public class SpyDetect {
    public static void main(String[] args) throws Exception {
        StringBuilder addrs = new StringBuilder();
        for (int i = 1; i < args.length; i++) {
            String[] f = args[i].split(":");
            addrs.append(f[0]).append(':').append(f[1]).append(' ');
        }
        ConnectionFactory cf = args[0].equals("ketama")
            ? new KetamaConnectionFactory() : new DefaultConnectionFactory();
        MemcachedClient mc = new MemcachedClient(cf, AddrUtil.getAddresses(addrs.toString().trim()));
        // At its defaults (FailureMode.Redistribute) spymemcached sends a key whose server is
        // not connected yet to the next server in sequence (MemcachedConnection.addOperation):
        // a misplaced key on a loaded machine. Wait until every server is connected.
        long deadline = System.currentTimeMillis() + 10_000;
        while (mc.getAvailableServers().size() < args.length - 1
            && System.currentTimeMillis() < deadline) {
            Thread.sleep(10);
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<String> keys = new ArrayList<>();
        for (String line; (line = in.readLine()) != null; ) {
            if (!line.isEmpty()) keys.add(line);
        }
        boolean read = "read".equals(System.getenv("DETECT_ACTION"));
        int n = 0;
        for (String key : keys) {
            if (read) {
                Object want = n % 3 == 0 ? key : n % 3 == 1 ? (Object) Integer.valueOf(n) : (Object) Long.valueOf(4294967296L + n);
                Object got = mc.get(key);
                if (got == null || got.getClass() != want.getClass() || !got.equals(want)) {
                    System.err.println("get " + key + ": " + (got == null ? "null" : got.getClass().getSimpleName() + " " + got)
                        + ", want " + want.getClass().getSimpleName() + " " + want);
                    System.exit(1);
                }
                n++;
                continue;
            }
            Object value = n % 3 == 0 ? key : n % 3 == 1 ? (Object) Integer.valueOf(n) : (Object) Long.valueOf(n);
            if (!mc.set(key, 0, value).get()) {
                System.err.println("set " + key + " failed");
                System.exit(1);
            }
            n++;
        }
        mc.shutdown();
        System.out.println("ok " + n);
    }
}

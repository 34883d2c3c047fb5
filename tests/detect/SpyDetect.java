// spymemcached's side of cli/tests/detect_live.rs: write keys as the peer places them.
//
//     java SpyDetect default|ketama HOST:PORT:WEIGHT...
//
// default: `new MemcachedClient(new DefaultConnectionFactory(), addrs)` (ArrayModNodeLocator,
// NATIVE_HASH); ketama: `new KetamaConnectionFactory()` (KetamaNodeLocator, KETAMA_HASH).
// WEIGHT is ignored. stdin: one key per line, each set to a String, an Integer or a Long in
// turn (SerializingTranscoder flags). Prints `ok N`; any failure exits 1.
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
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<String> keys = new ArrayList<>();
        for (String line; (line = in.readLine()) != null; ) {
            if (!line.isEmpty()) keys.add(line);
        }
        int n = 0;
        for (String key : keys) {
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

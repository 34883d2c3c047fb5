// Captures what spymemcached 2.12.3 (Debian libspymemcached-java) stores for each case with its
// default transcoder (SerializingTranscoder), and what it reads back from values written by others.
// Usage: java -cp spymemcached.jar:. SpyValues PORT OUT.json   (memcached on 127.0.0.1:PORT)
// spymemcached writes through its own client; flags and bytes are read back with a plain
// text-protocol `get` on a socket of our own.
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.FileOutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.*;
import java.util.zip.GZIPInputStream;
import java.io.ByteArrayInputStream;

import net.spy.memcached.MemcachedClient;
import net.spy.memcached.transcoders.SerializingTranscoder;

public class SpyValues {
  static final String TEXT = "The quick brown fox jumps over the lazy dog. ";

  static String text(int n) {
    StringBuilder b = new StringBuilder();
    while (b.length() < n) b.append(TEXT);
    return b.substring(0, n);
  }

  // ---- plain memcached text protocol ----
  static Socket sock;
  static InputStream in;
  static OutputStream out;

  static String line() throws Exception {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    int c, prev = -1;
    while ((c = in.read()) != -1) {
      if (prev == '\r' && c == '\n') break;
      if (prev != -1) b.write(prev);
      prev = c;
    }
    return b.toString("ISO-8859-1");
  }

  static byte[] readN(int n) throws Exception {
    byte[] r = new byte[n];
    int o = 0;
    while (o < n) {
      int k = in.read(r, o, n - o);
      if (k < 0) throw new RuntimeException("closed");
      o += k;
    }
    return r;
  }

  static Object[] rawGet(String key) throws Exception {
    out.write(("get " + key + "\r\n").getBytes(StandardCharsets.US_ASCII));
    out.flush();
    String head = line();
    if (head.equals("END")) return null;
    String[] t = head.split(" ");
    byte[] data = readN(Integer.parseInt(t[3]));
    readN(2);
    if (!line().equals("END")) throw new RuntimeException("no END");
    return new Object[] {Long.parseLong(t[2]), data};
  }

  static void rawSet(String key, long flags, byte[] data) throws Exception {
    out.write(("set " + key + " " + flags + " 0 " + data.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
    out.write(data);
    out.write("\r\n".getBytes(StandardCharsets.US_ASCII));
    out.flush();
    String r = line();
    if (!r.equals("STORED")) throw new RuntimeException("set " + key + ": " + r);
  }

  // ---- JSON output ----
  static String hex(byte[] b) {
    StringBuilder s = new StringBuilder();
    for (byte x : b) s.append(String.format("%02x", x & 0xff));
    return s.toString();
  }

  static byte[] unhex(String h) {
    byte[] r = new byte[h.length() / 2];
    for (int i = 0; i < r.length; i++) r[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
    return r;
  }

  static String str(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"': b.append("\\\""); break;
        case '\\': b.append("\\\\"); break;
        case '\n': b.append("\\n"); break;
        case '\r': b.append("\\r"); break;
        case '\t': b.append("\\t"); break;
        default:
          if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
          else b.append(c);
      }
    }
    return b.append('"').toString();
  }

  static String num(double d, boolean isFloat) {
    if (Double.isNaN(d)) return "\"NaN\"";
    if (Double.isInfinite(d)) return d > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    return isFloat ? Float.toString((float) d) : Double.toString(d);
  }

  static String json(Object o) {
    if (o == null) return "null";
    if (o instanceof String) return str((String) o);
    if (o instanceof Boolean) return o.toString();
    if (o instanceof Float) return num((Float) o, true);
    if (o instanceof Double) return num((Double) o, false);
    if (o instanceof Number) return o.toString();
    if (o instanceof Character) return str(o.toString());
    if (o instanceof Date) return Long.toString(((Date) o).getTime());
    if (o instanceof byte[]) return "{\"hex\": " + str(hex((byte[]) o)) + "}";
    if (o instanceof List) {
      StringJoiner j = new StringJoiner(", ", "[", "]");
      for (Object x : (List<?>) o) j.add(json(x));
      return j.toString();
    }
    if (o instanceof Map) {
      StringJoiner j = new StringJoiner(", ", "{", "}");
      for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) j.add(str(String.valueOf(e.getKey())) + ": " + json(e.getValue()));
      return j.toString();
    }
    return "{\"toString\": " + str(o.toString()) + "}";
  }

  static String sha256(byte[] b) throws Exception {
    return hex(MessageDigest.getInstance("SHA-256").digest(b));
  }

  // Long strings and byte arrays: type, UTF-8 length, SHA-256 and the recipe that rebuilds them
  // (the payload is always there in full). byte[] as "hex".
  static String render(Object o, String recipe) throws Exception {
    StringBuilder r = new StringBuilder("{\"type\": " + (o == null ? "null" : str(o.getClass().getName())));
    byte[] big = o instanceof String ? ((String) o).getBytes(StandardCharsets.UTF_8)
        : o instanceof byte[] ? (byte[]) o : null;
    if (big != null && big.length > 256) {
      r.append(", \"length\": " + big.length + ", \"sha256\": " + str(sha256(big)));
      if (recipe != null) r.append(", \"recipe\": " + str(recipe));
      else r.append(o instanceof byte[] ? ", \"hex\": " + str(hex(big)) : ", \"json\": " + json(o));
      return r.append("}").toString();
    }
    if (o instanceof byte[]) return r.append(", \"hex\": " + str(hex((byte[]) o)) + "}").toString();
    if (o instanceof String && loneSurrogate((String) o)) {
      // not representable in UTF-8 JSON: the UTF-16 code units, big-endian
      return r.append(", \"utf16be_hex\": " + str(utf16hex((String) o)) + "}").toString();
    }
    if (recipe != null) r.append(", \"recipe\": " + str(recipe));
    r.append(", \"json\": " + json(o));
    return r.append("}").toString();
  }

  static String render(Object o) throws Exception { return render(o, null); }

  static String utf16hex(String s) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length(); i++) b.append(String.format("%04x", (int) s.charAt(i)));
    return b.toString();
  }

  static boolean loneSurrogate(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) i++;
      else if (Character.isSurrogate(c)) return true;
    }
    return false;
  }

  static boolean same(Object a, Object b) {
    if (a == null || b == null) return a == b;
    if (a instanceof byte[] && b instanceof byte[]) return Arrays.equals((byte[]) a, (byte[]) b);
    return a.getClass() == b.getClass() && a.equals(b);   // Double/Float.equals: NaN == NaN, -0.0 != 0.0
  }

  static String err(Throwable e) {
    String c = e.getCause() == null ? "" : ", \"cause\": " + str(e.getCause().getClass().getName());
    return "{\"error\": " + str(e.getClass().getName()) + ", \"message\": " + str(String.valueOf(e.getMessage())) + c + "}";
  }

  static byte[] gunzip(byte[] b) throws Exception {
    GZIPInputStream g = new GZIPInputStream(new ByteArrayInputStream(b));
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    byte[] buf = new byte[8192];
    int n;
    while ((n = g.read(buf)) > 0) o.write(buf, 0, n);
    return o.toByteArray();
  }

  static byte[] seeded(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);   // java.util.Random: the same bytes for the same seed everywhere
    return b;
  }

  static String repeat(String unit, int n) {
    StringBuilder b = new StringBuilder();
    while (b.length() < n) b.append(unit);
    return b.substring(0, n);
  }

  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    sock = new Socket("127.0.0.1", port);
    in = new java.io.BufferedInputStream(sock.getInputStream());
    out = sock.getOutputStream();
    out.write("flush_all\r\n".getBytes(StandardCharsets.US_ASCII));
    out.flush();
    line();
    out.write("version\r\n".getBytes(StandardCharsets.US_ASCII));
    out.flush();
    String serverVersion = line().replace("VERSION ", "");

    MemcachedClient mc = new MemcachedClient(new InetSocketAddress("127.0.0.1", port));
    String setting = "{\"transcoder\": \"SerializingTranscoder (default)\", \"compression_threshold\": "
        + SerializingTranscoder.DEFAULT_COMPRESSION_THRESHOLD + ", \"charset\": \"UTF-8\"}";

    LinkedHashMap<String, Object> cases = new LinkedHashMap<>();
    HashMap<String, String> recipe = new HashMap<>();
    String T = "text(";
    cases.put("string_ascii", "hello world");
    cases.put("string_utf8", "h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c \ud83d\ude00");
    cases.put("string_empty", "");
    cases.put("string_lone_surrogate", "a\ud800b");
    for (int n : new int[] {16383, 16384, 16385}) {
      cases.put("threshold_string_" + n, text(n));
      recipe.put("threshold_string_" + n, T + n + ")");
    }
    cases.put("threshold_string_utf8_bytes_16385", repeat("\u00e9", 8192) + "a");   // 8193 chars, 16385 bytes
    recipe.put("threshold_string_utf8_bytes_16385", "U+00E9 x 8192, then \"a\" (16385 UTF-8 bytes)");
    cases.put("string_100k_compressible", text(100 * 1024));
    recipe.put("string_100k_compressible", T + "102400)");
    cases.put("json_looking_array_20000", "[" + repeat("1,", 19999));
    recipe.put("json_looking_array_20000", "\"[\" then \"1,\" repeated, cut to 19999 chars");
    cases.put("json_looking_object_20000", "{" + text(19999));
    recipe.put("json_looking_object_20000", "\"{\" + text(19999)");
    cases.put("json_looking_digits_20000", repeat("7", 20000));
    recipe.put("json_looking_digits_20000", "\"7\" x 20000");
    cases.put("json_looking_negative_digits_20000", "-" + repeat("7", 19999));
    recipe.put("json_looking_negative_digits_20000", "\"-\" then \"7\" x 19999");
    cases.put("not_json_looking_decimal_20000", repeat("7", 19998) + ".5");
    recipe.put("not_json_looking_decimal_20000", "\"7\" x 19998, then \".5\"");
    cases.put("not_json_looking_space_bracket_20000", " [" + text(19998));
    recipe.put("not_json_looking_space_bracket_20000", "\" [\" + text(19998)");
    cases.put("string_true", "true");
    cases.put("string_null", "null");
    cases.put("string_42", "42");
    cases.put("int_0", 0);
    cases.put("int_42", 42);
    cases.put("int_neg42", -42);
    cases.put("int_255", 255);
    cases.put("int_256", 256);
    cases.put("int_max", Integer.MAX_VALUE);
    cases.put("int_min", Integer.MIN_VALUE);
    cases.put("long_0", 0L);
    cases.put("long_42", 42L);
    cases.put("long_neg42", -42L);
    cases.put("long_2_pow_32", 1L << 32);
    cases.put("long_max", Long.MAX_VALUE);
    cases.put("long_min", Long.MIN_VALUE);
    cases.put("byte_0", (byte) 0);
    cases.put("byte_42", (byte) 42);
    cases.put("byte_neg1", (byte) -1);
    cases.put("short_42", (short) 42);
    cases.put("char_a", 'a');
    cases.put("biginteger_2_pow_64", java.math.BigInteger.ONE.shiftLeft(64));
    cases.put("float_3_14", 3.14f);
    cases.put("float_neg_zero", -0.0f);
    cases.put("float_inf", Float.POSITIVE_INFINITY);
    cases.put("float_nan", Float.NaN);
    cases.put("double_3_14", 3.14);
    cases.put("double_1e100", 1e100);
    cases.put("double_0", 0.0);
    cases.put("double_neg_zero", -0.0);
    cases.put("double_2", 2.0);
    cases.put("double_inf", Double.POSITIVE_INFINITY);
    cases.put("double_neg_inf", Double.NEGATIVE_INFINITY);
    cases.put("double_nan", Double.NaN);
    cases.put("bool_true", true);
    cases.put("bool_false", false);
    cases.put("null", null);
    cases.put("date_epoch", new Date(0L));
    cases.put("date_2020", new Date(1577836800123L));
    cases.put("date_before_1970", new Date(-1000L));
    cases.put("bytes_empty", new byte[0]);
    cases.put("bytes_small", new byte[] {0, 1, (byte) 0x80, (byte) 0xff});
    cases.put("bytes_16385_compressible", text(16385).getBytes(StandardCharsets.US_ASCII));
    cases.put("bytes_20000_incompressible", seeded(20000, 20240601L));
    cases.put("bytes_json_looking_20000", ("[" + repeat("1,", 19999)).getBytes(StandardCharsets.US_ASCII));
    recipe.put("bytes_16385_compressible", "US-ASCII bytes of text(16385)");
    recipe.put("bytes_20000_incompressible", "noise(20000)");
    recipe.put("bytes_json_looking_20000", "US-ASCII bytes of \"[\" then \"1,\" repeated, cut to 19999 chars");
    ArrayList<Object> list = new ArrayList<>(Arrays.asList(1, "two", 3.5, null, true, 4L));
    cases.put("list_arraylist", list);
    LinkedHashMap<String, Object> lmap = new LinkedHashMap<>();
    lmap.put("a", 1);
    lmap.put("b", new ArrayList<>(Arrays.asList(1, 2)));
    lmap.put("c", null);
    cases.put("map_linkedhashmap", lmap);
    HashMap<String, Object> hmap = new HashMap<>(lmap);
    cases.put("map_hashmap", hmap);
    ArrayList<String> big = new ArrayList<>();
    for (int i = 0; i < 2000; i++) big.add("item " + (i % 10));
    cases.put("list_serialized_compressed", big);
    recipe.put("list_serialized_compressed", "java.util.ArrayList of 2000 Strings: \"item \" + (i % 10) for i in 0..1999");

    StringBuilder o = new StringBuilder();
    o.append("{\n  \"peer\": \"spymemcached\",\n");
    o.append("  \"versions\": {\"spymemcached\": \"2.12.3 (Debian libspymemcached-java)\", \"java\": " + str(String.valueOf(Runtime.version().feature()))
        + ", \"memcached server\": " + str(serverVersion) + "},\n");
    o.append("  \"recipes\": {\"text(n)\": " + str("the first n characters of \"" + TEXT + "\" repeated")
        + ", \"noise(n)\": \"new java.util.Random(20240601L).nextBytes(new byte[n])\"},\n");
    o.append("  \"writes\": [");
    int i = 0;
    for (Map.Entry<String, Object> e : cases.entrySet()) {
      String key = "s" + (i++);
      Object v = e.getValue();
      o.append(i == 1 ? "\n" : ",\n");
      o.append("    {\"name\": " + str(e.getKey()) + ", \"settings\": " + setting + ",\n     \"value\": " + render(v, recipe.get(e.getKey())));
      try {
        mc.set(key, 0, v).get();
      } catch (Throwable t) {
        o.append(",\n     \"write_error\": " + err(t) + "}");
        continue;
      }
      Object[] raw = rawGet(key);
      long flags = (Long) raw[0];
      byte[] data = (byte[]) raw[1];
      o.append(",\n     \"flags\": " + flags + ", \"flags_hex\": \"0x" + Long.toHexString(flags) + "\", \"payload_length\": " + data.length
          + ", \"payload\": " + str(hex(data)));
      if ((flags & 2) != 0) {
        byte[] plain = gunzip(data);
        o.append(",\n     \"compression\": {\"method\": \"gzip (java.util.zip.GZIPOutputStream)\", \"uncompressed_length\": " + plain.length
            + ", \"uncompressed_sha256\": " + str(sha256(plain)) + "}");
      }
      Object back = mc.get(key);
      boolean ok = same(v, back);
      o.append(",\n     \"reads_back_same\": " + ok + (ok ? "" : ", \"read_back\": " + render(back)) + "}");
    }
    o.append("\n  ],\n  \"reads\": [");

    String[][] rev = {
      {"flags0_utf8", "0", "68c3a96c6c6f", "UTF-8 \"h\u00e9llo\""},
      {"flags0_invalid_utf8", "0", "ff0080", "bytes that are not UTF-8"},
      {"int_1_byte", "512", "2a", "Integer 42, leading zeros stripped (as spymemcached writes it)"},
      {"int_4_bytes", "512", "0000002a", "Integer 42, full 4 bytes"},
      {"int_empty", "512", "", "Integer, empty payload (spymemcached's 0)"},
      {"int_8_bytes", "512", "000000010000002a", "0x200 with 8 bytes (too long for an int)"},
      {"int_short_negative_byte", "512", "d6", "0x200 with the single byte d6 (-42 as one signed byte)"},
      {"int_ffffffd6", "512", "ffffffd6", "Integer -42"},
      {"long_1_byte", "768", "2a", "Long 42, shortened"},
      {"long_4_bytes_ffffffd6", "768", "ffffffd6", "0x300 with ffffffd6 (-42 as a 4-byte int)"},
      {"bool_1", "256", "31", "Boolean \"1\""},
      {"bool_0", "256", "30", "Boolean \"0\""},
      {"bool_t", "256", "74", "Boolean \"t\""},
      {"bool_true_text", "256", "74727565", "Boolean \"true\""},
      {"bool_empty", "256", "", "Boolean, empty payload"},
      {"byte_empty", "1280", "", "Byte, empty payload"},
      {"float_3_14", "1536", "4048f5c3", "Float 3.14f"},
      {"double_3_14", "1792", "40091eb851eb851f", "Double 3.14"},
      {"double_empty", "1792", "", "Double, empty payload"},
      {"double_ascii_3_14", "1792", "332e3134", "0x700 with ASCII \"3.14\" (php-style text under a spymemcached flag)"},
      {"date_2020", "1024", "016f5e66e87b", "Date 1577836800123 ms"},
      {"bytearray", "2048", "000180ff", "byte[]"},
      {"unknown_special_0x900", "2304", "2a", "0x900: no such type"},
      {"gzip_string", "2", "1f8b0800000000000003cb48cdc9c9070086a6103605000000", "gzip of \"hello\""},
      {"zlib_string", "2", "789ccb48cdc9c90700062c0215", "zlib (not gzip) of \"hello\": dalli's framing"},
      {"gzip_int", "514", "1f8b0800000000000203d302005b26b90901000000", "0x202: gzip of the int payload 2a"},
      {"serialized_integer", "1", "aced0005737200116a6176612e6c616e672e496e746567657212e2a0a4f781873802000149000576616c7565787200106a6176612e6c616e672e4e756d62657286ac951d0b94e08b02000078700000002a", "Java-serialized Integer 42"},
      {"ruby_marshal", "1", "0408692f", "flag 1 with Ruby Marshal (dalli)"},
      {"dalli_zlib_marshal", "3", "789c63e1c8d40700012d00a5", "flags 3: dalli zlib + Marshal"},
      {"node_binary_flag4", "4", "68656c6c6f", "node memcached Buffer flag"},
      {"node_number_flag8", "8", "3432", "node memcached number"},
      {"php_fastlz_0x50", "80", "050000000468656c6c6f", "php-memcached fastlz framing"},
      {"pylibmc_int_flag4", "4", "3432", "pylibmc int"},
      {"user_flags_high", "65536", "68656c6c6f", "flags 0x10000 (php user flag bits)"},
    };
    i = 0;
    for (String[] r : rev) {
      String key = "r" + (i++);
      rawSet(key, Long.parseLong(r[1]), unhex(r[2]));
      String read;
      try {
        read = render(mc.get(key));
      } catch (Throwable t) {
        read = err(t);
      }
      o.append(i == 1 ? "\n" : ",\n");
      o.append("    {\"name\": " + str(r[0]) + ", \"note\": " + str(r[3]) + ", \"flags\": " + r[1]
          + ", \"flags_hex\": \"0x" + Long.toHexString(Long.parseLong(r[1])) + "\", \"payload\": " + str(r[2])
          + ",\n     \"result\": " + read + "}");
    }
    o.append("\n  ]\n}\n");
    mc.shutdown();
    try (FileOutputStream f = new FileOutputStream(args[1])) {
      f.write(o.toString().getBytes(StandardCharsets.UTF_8));
    }
  }
}

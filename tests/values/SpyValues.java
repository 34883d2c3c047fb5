// spymemcached's side of cli/tests/values_live.rs; not
// value-vectors/spymemcached/SpyValues.java (that one writes the fixture file).
//
//   javac -cp spymemcached.jar -d DIR SpyValues.java
//   java -cp spymemcached.jar:DIR SpyValues write HOST:PORT        store the matrix (spymemcached:<case>)
//   java -cp spymemcached.jar:DIR SpyValues read HOST:PORT KEY...  get each key, print what it got
//
// One JSON object per line, in memshard's `get --json` convention: {"key","type","value"} with
// type string (String) / bytes (byte[], lowercase hex) / int (Integer, Long, Short, Byte,
// BigInteger: a JSON number within 64 bits, else its decimal string) / float (Double, Float
// widened to double: a JSON number, or "Infinity", "-Infinity", "NaN") / bool / null / json (List,
// Map), plus "class" (the Java class). `write` adds "peer_reads_back" when spymemcached's own get
// returns something else than it stored, and "unsupported" when spymemcached refuses the value.
// Settings: the default SerializingTranscoder (gzip above 16384 bytes).
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.math.BigInteger;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.spy.memcached.MemcachedClient;

public class SpyValues {
  static final PrintStream OUT =
      new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);

  static String str(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }

  static String hex(byte[] bytes) {
    StringBuilder b = new StringBuilder();
    for (byte x : bytes) {
      b.append(String.format("%02x", x & 0xff));
    }
    return b.toString();
  }

  // Double.toString: a text that reads back as the same double (3.14, -0.0, 1.0E100).
  static String dbl(double d) {
    if (Double.isNaN(d)) {
      return "\"NaN\"";
    }
    if (Double.isInfinite(d)) {
      return d > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    }
    return Double.toString(d);
  }

  static String integer(BigInteger i) {
    return i.bitLength() < 64 ? i.toString() : str(i.toString());
  }

  /** A value inside a list or map, as JSON. */
  static String json(Object v) {
    if (v == null) {
      return "null";
    } else if (v instanceof String) {
      return str((String) v);
    } else if (v instanceof Boolean) {
      return v.toString();
    } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
      return v.toString();
    } else if (v instanceof BigInteger) {
      return integer((BigInteger) v);
    } else if (v instanceof Double || v instanceof Float) {
      return dbl(((Number) v).doubleValue());
    } else if (v instanceof List) {
      StringBuilder b = new StringBuilder("[");
      for (Object x : (List<?>) v) {
        b.append(b.length() > 1 ? "," : "").append(json(x));
      }
      return b.append(']').toString();
    } else if (v instanceof Map) {
      StringBuilder b = new StringBuilder("{");
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        b.append(b.length() > 1 ? "," : "").append(str(String.valueOf(e.getKey())));
        b.append(':').append(json(e.getValue()));
      }
      return b.append('}').toString();
    }
    return str(v.getClass().getName() + ":" + v);
  }

  /** "class", "type" and "value" fields (without braces). */
  static String render(Object v) {
    String cls = "\"class\":" + str(v == null ? "null" : v.getClass().getName()) + ",";
    if (v == null) {
      return cls + "\"type\":\"null\",\"value\":null";
    } else if (v instanceof String) {
      return cls + "\"type\":\"string\",\"value\":" + str((String) v);
    } else if (v instanceof byte[]) {
      return cls + "\"type\":\"bytes\",\"value\":\"" + hex((byte[]) v) + "\"";
    } else if (v instanceof Boolean) {
      return cls + "\"type\":\"bool\",\"value\":" + v;
    } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte
        || v instanceof BigInteger) {
      return cls + "\"type\":\"int\",\"value\":" + json(v);
    } else if (v instanceof Double || v instanceof Float) {
      return cls + "\"type\":\"float\",\"value\":" + json(v);
    } else if (v instanceof List || v instanceof Map) {
      return cls + "\"type\":\"json\",\"value\":" + json(v);
    }
    return cls + "\"type\":\"other\",\"value\":" + str(v.toString());
  }

  /** The type and value of a rendering, without the class (List and Map classes differ). */
  static String typeAndValue(String rendered) {
    return rendered.substring(rendered.indexOf("\"type\":"));
  }

  // The first n characters of "The quick brown fox jumps over the lazy dog. " repeated
  // (value-vectors/spymemcached/SpyValues.java's text()).
  static String text(int n) {
    String t = "The quick brown fox jumps over the lazy dog. ";
    StringBuilder b = new StringBuilder();
    while (b.length() < n) {
      b.append(t);
    }
    return b.substring(0, n);
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 2 || !(args[0].equals("write") || args[0].equals("read"))) {
      System.err.println("usage: SpyValues write|read HOST:PORT [KEY...]");
      System.exit(2);
    }
    int colon = args[1].lastIndexOf(':');
    MemcachedClient mc = new MemcachedClient(
        new InetSocketAddress(args[1].substring(0, colon), Integer.parseInt(args[1].substring(colon + 1))));
    try {
      if (args[0].equals("write")) {
        write(mc);
      } else {
        for (String key : Arrays.copyOfRange(args, 2, args.length)) {
          Object v = mc.get(key);
          // null: a miss, or a value the transcoder could not decode (it logs a warning)
          OUT.println(v == null
              ? "{\"key\":" + str(key) + ",\"miss\":true}"
              : "{\"key\":" + str(key) + "," + render(v) + "}");
        }
      }
    } finally {
      mc.shutdown();
    }
  }

  static void write(MemcachedClient mc) throws Exception {
    List<Object> list = new ArrayList<>(Arrays.asList(1, "two", true, null));
    Map<String, Object> map = new LinkedHashMap<>();
    map.put("a", 1);
    map.put("b", "two");
    map.put("c", new ArrayList<>(Arrays.asList(1, 2)));
    Object[][] cases = {
      {"str_ascii", "hello world"},
      {"str_utf8", "h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c\u8a9e \ud83d\ude80"},
      {"str_empty", ""},
      {"bytes", new byte[] {0x00, (byte) 0xff, (byte) 0x80, (byte) 0xfe, 0x7f}},
      // gzip when the encoded bytes are longer than 16384 (BaseSerializingTranscoder:48, `>`)
      {"str_16383", text(16383)},
      {"str_16384", text(16384)},
      {"str_16385", text(16385)},
      {"str_100k", text(100000)},
      {"int_neg", -42},
      {"int_zero", 0},
      {"long_neg", -42L},
      {"int_max", Long.MAX_VALUE},
      {"int_min", Long.MIN_VALUE},
      {"int_2p64", BigInteger.ONE.shiftLeft(64)},
      {"float_pi", 3.14},
      {"float_neg_zero", -0.0},
      {"float_zero", 0.0},
      {"float_1e100", 1e100},
      {"float_inf", Double.POSITIVE_INFINITY},
      {"float_neg_inf", Double.NEGATIVE_INFINITY},
      {"float_nan", Double.NaN},
      {"float32_pi", 3.14f},
      {"bool_true", true},
      {"bool_false", false},
      {"null", null},
      {"list", list},
      {"map", map},
    };
    for (Object[] c : cases) {
      String key = "spymemcached:" + c[0];
      String line = "{\"key\":" + str(key) + "," + render(c[1]);
      try {
        if (!mc.set(key, 0, c[1]).get()) {
          OUT.println(line + ",\"error\":\"set: not stored\"}");
          continue;
        }
      } catch (RuntimeException e) {
        // null: NullPointerException("Can't serialize null") (BaseSerializingTranscoder:96-98)
        OUT.println(line + ",\"unsupported\":" + str(e.getClass().getName() + ": " + e.getMessage()) + "}");
        continue;
      }
      Object back = mc.get(key);
      String r = render(back);
      if (back == null) {
        line += ",\"peer_reads_back\":{\"error\":\"miss\"}";
      } else if (!typeAndValue(r).equals(typeAndValue(render(c[1])))) {
        line += ",\"peer_reads_back\":{" + r + "}";
      }
      OUT.println(line + "}");
    }
  }
}

# Captures what Dalli 3.0.6 (Debian ruby-dalli) stores for each case, and what it reads back from
# values written by others. Usage: ruby gen.rb PORT > dalli.json  (memcached on 127.0.0.1:PORT;
# gen.sh starts it). Dalli writes through its own (binary-protocol) client; the stored flags and
# bytes are read back with a plain text-protocol `get` on a socket of our own, so nothing of Dalli
# sits between the fixture and the server. Run under faketime (gen.sh): Dalli::GzipCompressor
# writes the current Unix time into the gzip header (MTIME), so a fixed clock keeps runs identical.
require 'dalli'
require 'json'
require 'socket'
require 'zlib'

PORT = Integer(ARGV.fetch(0))
Dalli.logger.level = Logger::FATAL

# ---- a plain memcached text-protocol connection (no Dalli) ----
class Raw
  def initialize(port)
    @s = TCPSocket.new('127.0.0.1', port)
    @s.binmode
  end

  def line
    l = @s.gets("\r\n") or raise 'connection closed'
    l.chomp("\r\n")
  end

  def get(key)
    @s.write("get #{key}\r\n")
    head = line
    return nil if head == 'END'
    _, k, flags, len = head.split(' ')
    raise "bad reply #{head}" unless k == key
    data = @s.read(Integer(len))
    raise 'bad trailer' unless @s.read(2) == "\r\n" && line == 'END'
    [Integer(flags), data]
  end

  def set(key, flags, data)
    @s.write("set #{key} #{flags} 0 #{data.bytesize}\r\n")
    @s.write(data.b)
    @s.write("\r\n")
    r = line
    raise "set #{key}: #{r}" unless r == 'STORED'
  end

  def version
    @s.write("version\r\n")
    line.delete_prefix('VERSION ')
  end

  def flush
    @s.write("flush_all\r\n")
    raise 'flush' unless line == 'OK'
  end
end

# ---- rendering of Ruby values as JSON ----
def jsonable(v)
  case v
  when String
    v.encoding != Encoding::BINARY && v.valid_encoding? ? v : { 'bytes_hex' => v.unpack1('H*') }
  when Symbol then v.to_s
  when Integer then v.bit_length < 64 ? v : v.to_s
  when Float
    if v.nan? then 'NaN'
    elsif v.infinite? then v.positive? ? 'Infinity' : '-Infinity'
    else v
    end
  when true, false, nil then v
  when Array then v.map { |x| jsonable(x) }
  when Hash then v.to_h { |k, x| [k.to_s, jsonable(x)] }
  else { 'inspect' => v.inspect }
  end
end

def render(v)
  r = { 'type' => v.class.name }
  if v.is_a?(String)
    r['encoding'] = v.encoding.name
    if v.bytesize > 256
      # long strings: length, SHA-256 and how to rebuild them instead of the text itself
      r['length'] = v.bytesize
      r['sha256'] = Digest::SHA256.hexdigest(v)
      if v == text(v.bytesize)
        r['recipe'] = "text(#{v.bytesize})"
      elsif v == INCOMPRESSIBLE
        r['recipe'] = 'noise(5000)'
      else
        r['hex'] = v.unpack1('H*')
      end
      return r
    end
    return r.merge('hex' => v.unpack1('H*')) unless v.encoding != Encoding::BINARY && v.valid_encoding?
  end
  r['json'] = jsonable(v)
  r['inspect'] = v.inspect if v.is_a?(Array) || v.is_a?(Hash) || v.is_a?(Symbol) || v.is_a?(Float)
  r
end

def same?(a, b)
  return a.nan? && b.nan? if a.is_a?(Float) && b.is_a?(Float) && (a.nan? || b.nan?)
  return (1.0 / a) == (1.0 / b) if a.is_a?(Float) && b.is_a?(Float) && a.zero? && b.zero?
  a.class == b.class && a == b && (!a.is_a?(String) || a.encoding == b.encoding)
end

require 'digest'

# ---- the peer-side settings ----
SETTINGS = {
  'default' => { opts: {}, desc: { 'serializer' => 'Marshal', 'compress' => true,
                                   'compressor' => 'Dalli::Compressor (zlib deflate)',
                                   'compression_min_size' => 4096 } },
  'gzip' => { opts: { compressor: Dalli::GzipCompressor },
              desc: { 'serializer' => 'Marshal', 'compress' => true,
                      'compressor' => 'Dalli::GzipCompressor', 'compression_min_size' => 4096 } },
  'json' => { opts: { serializer: JSON },
              desc: { 'serializer' => 'JSON', 'compress' => true,
                      'compressor' => 'Dalli::Compressor (zlib deflate)', 'compression_min_size' => 4096 } },
  'nocompress' => { opts: { compress: false },
                    desc: { 'serializer' => 'Marshal', 'compress' => false,
                            'compressor' => 'Dalli::Compressor (zlib deflate)', 'compression_min_size' => 4096 } },
  'raw' => { opts: {}, req: { raw: true },
             desc: { 'serializer' => 'none (set(..., raw: true): value.to_s)', 'compress' => true,
                     'compressor' => 'Dalli::Compressor (zlib deflate)', 'compression_min_size' => 4096 } }
}.freeze

CLIENTS = SETTINGS.transform_values { |s| Dalli::Client.new("127.0.0.1:#{PORT}", s[:opts]) }

# Text of a given serialized size: the string that the setting's serializer turns into exactly
# `target` bytes (compressible: a repeated sentence).
TEXT = 'The quick brown fox jumps over the lazy dog. '
def text(n) = (TEXT * (n / TEXT.size + 1))[0, n]

def sized(setting, target)
  ser = case setting
        when 'json' then ->(s) { JSON.dump(s).bytesize }
        when 'raw' then ->(s) { s.bytesize }
        else ->(s) { Marshal.dump(s).bytesize }
        end
  n = target
  n -= ser.call(text(n)) - target while ser.call(text(n)) != target
  text(n)
end

INCOMPRESSIBLE = Random.new(20_240_601).bytes(5000) # fixed seed: same bytes every run

def cases
  c = []
  add = ->(setting, name, value) { c << [setting, name, value] }
  %w[default json raw].each do |s|
    add.(s, 'string_ascii', 'hello world')
    add.(s, 'string_utf8', "h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c \u{1F600}")
    add.(s, 'string_empty', '')
  end
  add.('default', 'string_binary', "\x00\xff\x80abc".b)
  %w[default gzip json raw].each do |s|
    [4095, 4096, 4097].each { |n| add.(s, "threshold_serialized_#{n}", sized(s, n)) }
    add.(s, 'string_100k_compressible', text(100 * 1024))
  end
  add.('default', 'binary_5000_incompressible', INCOMPRESSIBLE)
  add.('nocompress', 'threshold_serialized_4097', sized('nocompress', 4097))
  %w[default json raw].each do |s|
    { 'int_0' => 0, 'int_42' => 42, 'int_neg42' => -42, 'int_i64_max' => 2**63 - 1,
      'int_i64_min' => -2**63, 'int_2_pow_64' => 2**64, 'int_neg_2_pow_100' => -2**100,
      'float_3_14' => 3.14, 'float_1e100' => 1e100, 'float_neg_zero' => -0.0, 'float_2_0' => 2.0,
      'float_inf' => Float::INFINITY, 'float_neg_inf' => -Float::INFINITY, 'float_nan' => Float::NAN,
      'bool_true' => true, 'bool_false' => false, 'nil' => nil,
      'list' => [1, 'two', 3.5, nil, true, [4]],
      'map' => { 'a' => 1, 'b' => [1, 2], 'c' => { 'd' => nil }, 'e' => "\u00e9" },
      'map_symbol_keys' => { a: 1, b: 'x' }, 'symbol' => :sym }.each { |n, v| add.(s, n, v) }
  end
  c
end

def error_of(e) = { 'error' => e.class.name, 'message' => e.message.lines.first.to_s.chomp }
def flags_hex(f) = format('0x%x', f)

def read_with(client, key)
  v = client.get(key)
  render(v)
rescue StandardError => e
  error_of(e)
ensure
  client.close
end

raw = Raw.new(PORT)
raw.flush
out = { 'peer' => 'dalli',
        'versions' => { 'dalli' => Dalli::VERSION, 'ruby' => RUBY_VERSION, 'zlib' => Zlib.zlib_version,
                        'memcached server' => raw.version },
        'recipes' => { 'text(n)' => "the first n characters of #{TEXT.inspect} repeated",
                       'noise(n)' => 'Random.new(20_240_601).bytes(n) (Ruby\'s MT19937: the same bytes every run)' },
        'writes' => [], 'reads' => [] }

cases.each_with_index do |(setting, name, value), i|
  key = "d#{i}"
  client = CLIENTS.fetch(setting)
  rec = { 'name' => "#{setting}/#{name}", 'settings' => SETTINGS[setting][:desc], 'value' => render(value) }
  begin
    client.set(key, value, 0, SETTINGS[setting][:req])
  rescue StandardError => e
    rec['write_error'] = error_of(e)
    out['writes'] << rec
    next
  end
  flags, data = raw.get(key)
  rec['flags'] = flags
  rec['flags_hex'] = flags_hex(flags)
  rec['payload_length'] = data.bytesize
  rec['payload'] = data.unpack1('H*')
  if flags & 2 != 0
    gz = setting == 'gzip'
    plain = gz ? Dalli::GzipCompressor.decompress(data) : Zlib::Inflate.inflate(data)
    rec['compression'] = { 'method' => gz ? 'gzip (Dalli::GzipCompressor)' : 'zlib (Dalli::Compressor)',
                           'uncompressed_length' => plain.bytesize,
                           'uncompressed_sha256' => Digest::SHA256.hexdigest(plain) }
    rec['compression']['uncompressed_hex'] = plain.unpack1('H*') if plain.bytesize <= 512
  end
  back = client.get(key)
  rec['reads_back_same'] = same?(value, back)
  rec['read_back'] = render(back) unless rec['reads_back_same']
  out['writes'] << rec
end

# ---- reverse: fixed bytes written with a plain socket, read by Dalli ----
REVERSE = [
  ['flags0_ascii', 0, '68656c6c6f', 'plain bytes "hello"'],
  ['flags0_utf8', 0, '68c3a96c6c6f', 'UTF-8 "héllo", no flag'],
  ['flags0_invalid_utf8', 0, 'ff0080', 'bytes that are not UTF-8'],
  ['flags1_marshal_int', 1, '0408692f', 'Marshal.dump(42)'],
  ['flags1_marshal_string', 1, '0408492208616263063a064554', 'Marshal.dump("abc") (UTF-8)'],
  ['flags1_json_42', 1, '3432', 'JSON serializer output for 42'],
  ['flags1_json_string', 1, '2261626322', 'JSON serializer output for "abc"'],
  ['flags1_json_object', 1, '7b2261223a5b312c325d7d', 'JSON serializer output for {"a":[1,2]}'],
  ['flags1_garbage', 1, '00010203', 'neither Marshal nor JSON'],
  ['flags2_zlib_plain', 2, '789ccb48cdc9c90700062c0215', 'zlib deflate of "hello", not serialized'],
  ['flags2_gzip_plain', 2, '1f8b0800000000000003cb48cdc9c9070086a6103605000000', 'gzip of "hello" (MTIME 0), not serialized'],
  ['flags2_raw_deflate', 2, 'cb48cdc9c90700', 'raw deflate of "hello" (no zlib header)'],
  ['flags3_zlib_marshal_int', 3, '789c63e1c8d40700012d00a5', 'zlib deflate of Marshal.dump(42)'],
  ['flags4_utf8_flag_of_dalli_4', 4, '68c3a96c6c6f', '"héllo" with flags 4 (the UTF-8 flag of later Dalli versions)'],
  ['flags8_node_number', 8, '3432', 'node memcached number 42'],
  ['flags0x200_spymemcached_int', 0x200, '2a', 'spymemcached Integer 42'],
  ['flags0x50_php_fastlz', 0x50, '050000000468656c6c6f', 'php-memcached-style fastlz framing (4-byte length + block)'],
  ['flags16_pylibmc_str', 16, '68c3a96c6c6f', 'pylibmc str "héllo"']
].freeze

REVERSE.each_with_index do |(name, flags, hex, what), i|
  key = "r#{i}"
  raw.set(key, flags, [hex].pack('H*'))
  rec = { 'name' => name, 'note' => what, 'flags' => flags, 'flags_hex' => flags_hex(flags), 'payload' => hex,
          'result' => nil, 'results' => {} }
  %w[default gzip json raw].each do |s|
    rec['results'][s] = if s == 'raw'
                        # get(key, raw: true): no deserialization; decompression still follows flag 0x2
                        begin
                          c = Dalli::Client.new("127.0.0.1:#{PORT}")
                          render(c.get(key, raw: true))
                        rescue StandardError => e
                          error_of(e)
                        ensure
                          c&.close
                        end
                      else
                        # a fresh client per read: an error that Dalli takes for a network error
                        # (JSON::ParserError) marks the server down for that client
                        read_with(Dalli::Client.new("127.0.0.1:#{PORT}", SETTINGS.fetch(s)[:opts]), key)
                      end
  end
  rec['result'] = rec['results']['default']
  out['reads'] << rec
end

CLIENTS.each_value(&:close)
puts JSON.pretty_generate(out)

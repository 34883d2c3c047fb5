# dalli's side of cli/tests/values_live.rs.
#
#   ruby dalli_values.rb write HOST:PORT        store the matrix (keys dalli:<case>), print each value
#   ruby dalli_values.rb read HOST:PORT KEY...  get each key, print what dalli got
#
# One JSON object per line, in memshard's `get --json` convention: {"key","type","value"} with
# type string (a String that is not BINARY and is valid in its encoding) / bytes (a BINARY String,
# lowercase hex) / int (a JSON number within 64 bits, else its decimal string) / float (a JSON
# number, or "Infinity", "-Infinity", "NaN") / bool / null / json, plus "class" (the Ruby class,
# and the String's encoding). `write` adds "peer_reads_back" when dalli's own get returns
# something else than it stored. Settings: dalli's defaults (Marshal, zlib from 4096 serialized
# bytes) unless a case says otherwise.
require 'dalli'
require 'json'
require 'logger'

# Dalli logs to standard output by default (dalli.rb:40-45: Logger.new($stdout), INFO); standard
# output is this driver's result.
Dalli.logger = Logger.new($stderr)
Dalli.logger.level = Logger::WARN

abort 'usage: ruby dalli_values.rb write|read HOST:PORT [KEY...]' unless ARGV.size >= 2 && %w[write read].include?(ARGV[0])
MODE = ARGV[0]
ADDR = ARGV[1]

def jsonable(v)
  case v
  when String then v
  when Float
    raise 'non-finite float inside a list or map' unless v.finite?

    v
  when Array then v.map { |x| jsonable(x) }
  when Hash then v.to_h { |k, x| [k.to_s, jsonable(x)] }
  else v
  end
end

def render(v)
  r = { 'class' => v.is_a?(String) ? "String(#{v.encoding})" : v.class.name }
  case v
  when String
    if v.encoding != Encoding::BINARY && v.valid_encoding?
      r.merge('type' => 'string', 'value' => v)
    else
      r.merge('type' => 'bytes', 'value' => v.unpack1('H*'))
    end
  when Integer then r.merge('type' => 'int', 'value' => v.bit_length < 64 ? v : v.to_s)
  when Float
    value = if v.nan? then 'NaN'
            elsif v.infinite? then v.positive? ? 'Infinity' : '-Infinity'
            else v
            end
    r.merge('type' => 'float', 'value' => value)
  when true, false then r.merge('type' => 'bool', 'value' => v)
  when nil then r.merge('type' => 'null', 'value' => nil)
  when Array, Hash then r.merge('type' => 'json', 'value' => jsonable(v))
  else r.merge('type' => 'other', 'value' => v.inspect)
  end
end

# Ruby's Float#to_s (used by JSON.generate) is the shortest text that reads back as the same
# double: 3.14, 1.0e+100, -0.0.
def out(line) = puts(JSON.generate(line))

def same?(a, b) = JSON.generate([a['type'], a['value']]) == JSON.generate([b['type'], b['value']])

# The first n characters of "The quick brown fox jumps over the lazy dog. " repeated
# (value-vectors/dalli/gen.rb's text()).
TEXT = 'The quick brown fox jumps over the lazy dog. '
def text(n) = (TEXT * (n / TEXT.size + 1))[0, n]

# A text whose Marshal dump is exactly `target` bytes: dalli compresses from
# compression_min_size (4096) serialized bytes on (value_compressor.rb:14-19, :77-83).
def marshal_sized(target)
  n = target
  n -= 1 while Marshal.dump(text(n)).bytesize > target
  raise "no text of #{target} serialized bytes" unless Marshal.dump(text(n)).bytesize == target

  text(n)
end

def client(opts = {}) = Dalli::Client.new(ADDR, opts)

if MODE == 'write'
  list = [1, 'two', true, nil]
  map = { 'a' => 1, 'b' => 'two', 'c' => [1, 2] }
  gzip = { compressor: Dalli::GzipCompressor }
  json = { serializer: JSON }
  cases = [
    ['str_ascii', 'hello world', {}],
    ['str_utf8', "h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c\u8a9e \u{1f680}", {}],
    ['str_empty', '', {}],
    ['bytes', "\x00\xff\x80\xfe\x7f".b, {}],
    ['str_4095', marshal_sized(4095), {}],
    ['str_4096', marshal_sized(4096), {}],
    ['str_4097', marshal_sized(4097), {}],
    ['str_4096_gzip', marshal_sized(4096), gzip],
    ['str_100k', text(100_000), {}],
    ['int_neg', -42, {}],
    ['int_zero', 0, {}],
    ['int_max', 2**63 - 1, {}],
    ['int_min', -2**63, {}],
    ['int_2p64', 2**64, {}],
    ['int_neg_2p100', -2**100, {}],
    ['float_pi', 3.14, {}],
    ['float_neg_zero', -0.0, {}],
    ['float_1e100', 1e100, {}],
    ['float_inf', Float::INFINITY, {}],
    ['float_neg_inf', -Float::INFINITY, {}],
    ['float_nan', Float::NAN, {}],
    ['bool_true', true, {}],
    ['bool_false', false, {}],
    ['null', nil, {}],
    ['list', list, {}],
    ['map', map, {}],
    ['str_json_serializer', 'hello world', json],
    ['int_json_serializer', -42, json],
    ['list_json_serializer', list, json],
    ['map_json_serializer', map, json]
  ]
  clients = Hash.new { |h, opts| h[opts] = client(opts) }
  cases.each do |name, value, opts|
    key = "dalli:#{name}"
    line = { 'key' => key }.merge(render(value))
    begin
      clients[opts].set(key, value)
    rescue StandardError => e
      out(line.merge('error' => "set: #{e.class}: #{e.message}"))
      next
    end
    # Read by a client with the same settings: dalli reads by its own serializer and
    # compressor, not by the flags (README-dalli.md), so a default client misses JSON and gzip
    # values.
    got = clients[opts].get_multi(key)
    if !got.key?(key)
      line['peer_reads_back'] = { 'error' => 'miss' }
    else
      back = render(got[key])
      line['peer_reads_back'] = back unless same?(back, line)
    end
    out(line)
  end
else
  c = client
  ARGV[2..].each do |key|
    got = c.get_multi(key)
    if got.key?(key)
      out({ 'key' => key }.merge(render(got[key])))
    elsif c.get(key).nil?
      out({ 'key' => key, 'miss' => true })
    else
      # get_multi drops a value it cannot deserialize without a word (protocol/binary.rb:190-196,
      # rescue DalliError with a TODO); get raises (above)
      out({ 'key' => key, 'error' => 'get_multi missed a key that get found' })
    end
  rescue StandardError => e
    out({ 'key' => key, 'error' => "#{e.class}: #{e.message}" })
  end
end

# dalli's side of cli/tests/detect_live.rs: `Dalli::Client.new(["host:port:weight", ...])`
# (its own ring: 160 points per weight share, SHA-1, crc32 key hash). stdin: one key per line.
# Writing (the default): each key is set to a String, an Integer or an Array in turn (Marshal).
# DETECT_ACTION=read: the Nth key (from 0) must hold the key itself as a String, the Integer N
# or the Integer 2**32+N in turn, each of exactly that class; the first miss or wrong value is
# printed on stderr. Prints `ok N`; any failure exits 1.
#
#     [DETECT_ACTION=read] ruby dalli_detect.rb default HOST:PORT:WEIGHT...
require 'dalli'
require 'logger'
Dalli.logger = Logger.new(nil)
read = ENV['DETECT_ACTION'] == 'read'
mc = Dalli::Client.new(ARGV.drop(1), socket_timeout: 2)
n = 0
$stdin.each_line do |line|
  key = line.chomp
  if read
    want = [key, n, 2**32 + n][n % 3]
    got = mc.get(key)
    abort("get #{key}: #{got.inspect}, want #{want.inspect}") unless got.class == want.class && got == want
  else
    value = [key, n, [n, 'x']][n % 3]
    abort("set #{key} failed") unless mc.set(key, value)
  end
  n += 1
end
puts "ok #{n}"

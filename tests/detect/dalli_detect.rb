# dalli's side of cli/tests/detect_live.rs: `Dalli::Client.new(["host:port:weight", ...])`
# (its own ring: 160 points per weight share, SHA-1, crc32 key hash). stdin: one key per
# line, each set to a String, an Integer or an Array in turn (Marshal). Prints `ok N`.
#
#     ruby dalli_detect.rb default HOST:PORT:WEIGHT...
require 'dalli'
require 'logger'
Dalli.logger = Logger.new(nil)
mc = Dalli::Client.new(ARGV.drop(1), socket_timeout: 2)
n = 0
$stdin.each_line do |line|
  key = line.chomp
  value = [key, n, [n, 'x']][n % 3]
  abort("set #{key} failed") unless mc.set(key, value)
  n += 1
end
puts "ok #{n}"

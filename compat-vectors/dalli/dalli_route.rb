# Drives the real Dalli 3.0.6 ring (Debian ruby-dalli).
# Usage: ruby dalli_route.rb servers.txt < keys > expected.tsv
# Builds Dalli::Client.new(["host:port:weight", ...]) and, for each key, does exactly what the
# client does before a request: key = key_manager.validate_key(key); ring.server_for_key(key).
# server_for_key calls server.alive?, which connects, so a memcached must listen on every server
# (generate.sh starts them on loopback). Servers that are down would trigger dalli's rehash failover;
# the driver aborts if any server is not alive so that never happens silently.
require 'dalli'

lines = File.readlines(ARGV[0], encoding: 'UTF-8').map(&:strip).reject { |l| l.empty? || l.start_with?('#') }
addrs = []
specs = lines.map do |l|
  f = l.split(/\s+/)
  addrs << f[0]
  weight = f[1] || '1'
  "#{f[0]}:#{weight}" # dalli's own server string syntax: host:port:weight ([v6]:port:weight)
end

client = Dalli::Client.new(specs, socket_timeout: 2, down_retry_delay: 60)
ring = client.send(:ring)
key_manager = client.instance_variable_get(:@key_manager)
servers = ring.servers
raise 'server count mismatch' unless servers.size == addrs.size
servers.each_with_index { |s, i| raise "server #{addrs[i]} (#{s.name}) not alive" unless s.alive? }

if ARGV[1] == '--names'
  servers.each_with_index do |s, i|
    puts [addrs[i], s.name, s.hostname, s.port, s.weight].join("\t")
  end
  exit
end

$stdin.set_encoding('UTF-8')
$stdout.binmode
out = +''
$stdin.each_line do |line|
  key = line.chomp
  srv = ring.server_for_key(key_manager.validate_key(key))
  idx = servers.index { |s| s.equal?(srv) }
  raise "no server for #{key}" if idx.nil?
  out << key.b << "\t".b << addrs[idx].b << "\n".b
end
$stdout.write(out)
servers.each(&:close)

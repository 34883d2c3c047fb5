// gmroute: placement by gomemcache's memcache.ServerList (what memcache.New(servers...) uses).
// Usage: gmroute SERVERS_FILE < keys > expected.tsv
// The first token of every servers.txt line goes, in order, to ServerList.SetServers (numeric IPs only: it
// resolves host names). Each key line (raw bytes) goes to PickServer; the returned net.Addr is found among
// the list's own addresses (ServerList.Each, same pointers) and printed as that line's token.
package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/bradfitz/gomemcache/memcache"
)

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	var tokens []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		tokens = append(tokens, f[0])
	}
	var ss memcache.ServerList
	if err := ss.SetServers(tokens...); err != nil {
		panic(err)
	}
	var addrs []net.Addr
	ss.Each(func(a net.Addr) error { addrs = append(addrs, a); return nil })
	if len(addrs) != len(tokens) {
		panic("address count")
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			if line != "" {
				panic("last line without newline")
			}
			break
		}
		key := line[:len(line)-1]
		a, err := ss.PickServer(key)
		if err != nil {
			panic(err)
		}
		idx := -1
		for i, x := range addrs {
			if x == a {
				idx = i
				break
			}
		}
		if idx < 0 {
			panic("unknown address " + a.String())
		}
		fmt.Fprintf(out, "%s\t%s\n", key, tokens[idx])
	}
}

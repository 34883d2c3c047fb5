// gomemcache's side of cli/tests/detect_live.rs: `memcache.New(addrs...)` (crc32 % servers);
// WEIGHT ignored. stdin: one key per line, each set to its own text (flags 0). Prints `ok N`.
//
//	gomemcache_detect default HOST:PORT:WEIGHT...
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/bradfitz/gomemcache/memcache"
)

func main() {
	var addrs []string
	for _, spec := range os.Args[2:] {
		f := strings.Split(spec, ":")
		addrs = append(addrs, f[0]+":"+f[1])
	}
	mc := memcache.New(addrs...)
	in := bufio.NewScanner(os.Stdin)
	n := 0
	for in.Scan() {
		key := in.Text()
		if key == "" {
			continue
		}
		if err := mc.Set(&memcache.Item{Key: key, Value: []byte(key)}); err != nil {
			fmt.Fprintf(os.Stderr, "set %s: %v\n", key, err)
			os.Exit(1)
		}
		n++
	}
	fmt.Printf("ok %d\n", n)
}

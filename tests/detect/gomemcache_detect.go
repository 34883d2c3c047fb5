// gomemcache's side of cli/tests/detect_live.rs: `memcache.New(addrs...)` (crc32 % servers);
// WEIGHT ignored. stdin: one key per line. Writing (the default): each key is set to its own
// text (flags 0). DETECT_ACTION=read: each key must hold its own text (memshard wrote it); the
// first miss or wrong value is printed on stderr. Prints `ok N`; any failure exits 1.
//
//	[DETECT_ACTION=read] gomemcache_detect default HOST:PORT:WEIGHT...
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
	read := os.Getenv("DETECT_ACTION") == "read"
	in := bufio.NewScanner(os.Stdin)
	n := 0
	for in.Scan() {
		key := in.Text()
		if key == "" {
			continue
		}
		if read {
			it, err := mc.Get(key)
			if err != nil || string(it.Value) != key {
				got := "<nil>"
				if it != nil {
					got = fmt.Sprintf("%q", it.Value)
				}
				fmt.Fprintf(os.Stderr, "get %s: %s %v, want %q\n", key, got, err, key)
				os.Exit(1)
			}
			n++
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

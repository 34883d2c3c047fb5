// gomemcache's side of cli/tests/defaults_live.rs, at its default placement.
//
//	GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS=-mod=off go build -o DIR/gomemcache_defaults gomemcache_defaults.go
//	gomemcache_defaults write|read HOST:PORT:WEIGHT...
//
// `memcache.New("host:port", ...)` (Debian's golang-github-bradfitz-gomemcache-dev: its
// ServerList picks crc32.ChecksumIEEE(key) % n); WEIGHT is ignored (it takes none). The only
// setting changed is Timeout, 5 s instead of 100 ms (socket deadlines, not placement: a loaded
// test machine must not turn into misses). Keys are ASCII: this version's legalKey refuses bytes
// above 0x7e. stdin: one key per line, `KEYHEX VALUEHEX` (write) or `KEYHEX` (read); stdout, one
// line per key in the same order: `KEYHEX ok`, `KEYHEX hit VALUEHEX`, `KEYHEX miss` or
// `KEYHEX error MESSAGE`. Values are []byte: stored raw, flags 0.
package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

func main() {
	if len(os.Args) < 3 || (os.Args[1] != "write" && os.Args[1] != "read") {
		fmt.Fprintln(os.Stderr, "usage: gomemcache_defaults write|read HOST:PORT:WEIGHT...")
		os.Exit(2)
	}
	mode := os.Args[1]
	var addrs []string
	for _, s := range os.Args[2:] {
		addrs = append(addrs, s[:strings.LastIndex(s, ":")])
	}
	mc := memcache.New(addrs...)
	mc.Timeout = 5 * time.Second
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		f := strings.Fields(in.Text())
		key, err := hex.DecodeString(f[0])
		if err != nil {
			panic(err)
		}
		if mode == "write" {
			value, err := hex.DecodeString(f[1])
			if err != nil {
				panic(err)
			}
			if err := mc.Set(&memcache.Item{Key: string(key), Value: value}); err != nil {
				fmt.Fprintf(out, "%s error %v\n", f[0], err)
			} else {
				fmt.Fprintf(out, "%s ok\n", f[0])
			}
			continue
		}
		it, err := mc.Get(string(key))
		switch {
		case err == memcache.ErrCacheMiss:
			fmt.Fprintf(out, "%s miss\n", f[0])
		case err != nil:
			fmt.Fprintf(out, "%s error %v\n", f[0], err)
		default:
			fmt.Fprintf(out, "%s hit %s\n", f[0], hex.EncodeToString(it.Value))
		}
	}
	if err := in.Err(); err != nil {
		panic(err)
	}
}

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/reproboard/reproboard/examples/demod/internal/store"
	"github.com/reproboard/reproboard/examples/demod/internal/wire"
	"github.com/reproboard/reproboard/harness/lifecycle"
)

func service(t testing.TB, opts Options) *Service {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "store.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	root := filepath.Join(t.TempDir(), "lib")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	src := "package lib\n\nfunc Alpha() {}\nfunc Beta() {}\nfunc AlphaBeta() {}\n"
	if err := os.WriteFile(filepath.Join(root, "lib.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	svc := NewService(st, opts)
	args, _ := json.Marshal(map[string]string{"repo_path": root})
	if _, err := svc.NewSession().Call(context.Background(), "index_repository", args); err != nil {
		t.Fatal(err)
	}
	return svc
}

func search(t *testing.T, ss *Session, pattern string) map[string]any {
	t.Helper()
	args, _ := json.Marshal(SearchArgs{Project: "lib", NamePattern: pattern})
	res, err := ss.Call(context.Background(), "search_graph", args)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSearchGraph(t *testing.T) {
	ss := service(t, Options{}).NewSession()
	out := search(t, ss, "^Alpha")
	if out["total"] != float64(2) {
		t.Errorf("^Alpha matched %v, want 2: %v", out["total"], out)
	}
}

func TestToolErrorsCarryCodes(t *testing.T) {
	ss := service(t, Options{}).NewSession()
	cases := []struct {
		tool, args, code string
	}{
		{"no_such_tool", `{}`, wire.CodeUnknownTool},
		{"search_graph", `{"name_pattern": "("}`, wire.CodeBadArgs},
		{"search_graph", `{"project": "nope"}`, wire.CodeBadArgs},
		{"index_repository", `{}`, wire.CodeBadArgs},
		{"index_repository", `{"repo_path": "relative"}`, wire.CodeBadArgs},
		{"list_projects", `[1]`, wire.CodeBadArgs},
	}
	for _, c := range cases {
		_, err := ss.Call(context.Background(), c.tool, json.RawMessage(c.args))
		var te *Error
		if !errors.As(err, &te) || te.Code != c.code {
			t.Errorf("%s %s: got %v, want a %s error", c.tool, c.args, err, c.code)
		}
	}
}

// TestBug581SessionCacheGrowsPerQuery pins the bug as built: every repeat of
// the same query adds a cache entry of at least the 4 KiB row arena.
func TestBug581SessionCacheGrowsPerQuery(t *testing.T) {
	ss := service(t, Options{}).NewSession()
	for range 200 {
		search(t, ss, "Alpha")
	}
	n, bytes := ss.CacheStats()
	if n != 200 || bytes < 200*arenaSize {
		t.Errorf("buggy cache: %d entries, %d bytes; want 200 entries of >= %d bytes each", n, bytes, arenaSize)
	}
}

func TestFix581BoundsTheCache(t *testing.T) {
	ss := service(t, Options{Fix581: true, CacheMax: 8}).NewSession()
	for i := range 200 {
		search(t, ss, "Alpha|"+strings.Repeat("x", i%20)) // 20 distinct queries
	}
	n, bytes := ss.CacheStats()
	if n != 8 || bytes > 8*1024 {
		t.Errorf("fixed cache: %d entries, %d bytes; want 8 small entries", n, bytes)
	}
	// A repeated query is a hit and returns the same result.
	if a, b := search(t, ss, "Beta"), search(t, ss, "Beta"); a["total"] != b["total"] {
		t.Errorf("cached result differs: %v vs %v", a, b)
	}
}

// TestFix581QueryPathRetainsNothing: with #581 fixed, repeating a query
// keeps nothing per query in the live heap (the buggy build keeps a 4 KiB
// cache entry per query).
func TestFix581QueryPathRetainsNothing(t *testing.T) {
	ss := service(t, Options{Fix581: true}).NewSession()
	lifecycle.HeapGrowth(t, 1000, func(int) { search(t, ss, "Alpha") }, lifecycle.Every(50))
}

func TestLeakBytesRetainsExactlyNPerQuery(t *testing.T) {
	svc := service(t, Options{Fix581: true, LeakBytes: 1000})
	ss := svc.NewSession()
	for range 7 {
		search(t, ss, "Beta")
	}
	if got := svc.LeakedBytes(); got != 7000 {
		t.Errorf("leaked %d bytes after 7 queries, want 7000", got)
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newCache(2)
	c.put("a", entry{result: []byte("A")})
	c.put("b", entry{result: []byte("B")})
	c.get([]byte("a"))
	c.put("c", entry{result: []byte("C")})
	if _, ok := c.get([]byte("b")); ok {
		t.Error("b should have been evicted (least recently used)")
	}
	if _, ok := c.get([]byte("a")); !ok {
		t.Error("a was used recently and should still be cached")
	}
	if c.bytes != int64(cap([]byte("A"))+cap([]byte("C"))) {
		t.Errorf("byte accounting off: %d", c.bytes)
	}
}

// BenchmarkRepeatedSearchFixed is the #581 fixed build's hot path: a cache
// hit plus the query-log write. Its garbage is what a memory meter sees
// before each GC.
func BenchmarkRepeatedSearchFixed(b *testing.B) {
	ss := service(b, Options{Fix581: true}).NewSession()
	args := json.RawMessage(`{"project":"lib","name_pattern":".*","limit":10}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ss.Call(context.Background(), "search_graph", args); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFixedHotPathMakesLittleGarbage: with #581 fixed, a repeated query's
// garbage is the noise floor a memory meter must see a leak through (the
// bug-repro board's USS budget is 2 KiB/op). Keep it well under 1 KiB.
func TestFixedHotPathMakesLittleGarbage(t *testing.T) {
	ss := service(t, Options{Fix581: true}).NewSession()
	args := json.RawMessage(`{"project":"lib","name_pattern":".*","limit":10}`)
	call := func(n int) {
		for range n {
			if _, err := ss.Call(context.Background(), "search_graph", args); err != nil {
				t.Fatal(err)
			}
		}
	}
	call(50)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	call(200)
	runtime.ReadMemStats(&after)
	if perOp := (after.TotalAlloc - before.TotalAlloc) / 200; perOp > 1024 {
		t.Errorf("a cached search allocates %d B/op, want under 1 KiB", perOp)
	}
}

package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reproboard/reproboard/examples/demod/internal/rendezvous"
	"github.com/reproboard/reproboard/harness/section"
)

// stats are the daemon's status-page counters.
type stats struct {
	CacheEntries int   `json:"cache_entries"`
	CacheBytes   int64 `json:"cache_bytes"`
	LeakedBytes  int64 `json:"leaked_bytes"`
}

// sample is the daemon's state after a batch of queries.
type sample struct {
	queries int
	wal     int64
	stats   stats
}

func (x sample) String() string {
	return fmt.Sprintf("after %3d queries: WAL %7d B, cache %3d entries %7d B, leaked %d B",
		x.queries, x.wal, x.stats.CacheEntries, x.stats.CacheBytes, x.stats.LeakedBytes)
}

// daemonSample reads the WAL's size and the daemon's counters.
func daemonSample(t *testing.T, sec *section.Section, queries int) sample {
	t.Helper()
	x := sample{queries: queries}
	if fi, err := os.Stat(filepath.Join(sec.Cache, "store.db-wal")); err == nil {
		x.wal = fi.Size()
	}
	st, err := rendezvous.Status(rendezvous.For(sec.Runtime))
	if err != nil {
		t.Fatalf("daemon status for its counters: %v", err)
	}
	if err := json.Unmarshal(st.Result, &x.stats); err != nil {
		t.Fatalf("daemon counters: %v: %s", err, st.Result)
	}
	return x
}

// demod runs a one-shot demod command in the section; it must exit 0.
func demod(t *testing.T, sec *section.Section, args ...string) {
	t.Helper()
	res := sec.Run(section.Spec{Args: append([]string{binary}, args...), Timeout: time.Minute})
	if res.RC != 0 {
		t.Fatalf("demod %s: rc=%d\n%s", strings.Join(args, " "), res.RC, res.Excerpt())
	}
}

// text is a tool result's text content.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// repeatSearch runs a long MCP session against a permanent daemon that
// repeats one search_graph query, sampling the daemon after every batch.
func repeatSearch(t *testing.T, env ...string) []sample {
	sec := section.ForTest(t, section.Config{CacheVar: "DEMOD_CACHE_DIR", RuntimeVar: "DEMOD_RUNTIME_DIR", Env: env})
	repo := filepath.Join(sec.Root, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "a.go"), []byte("package a\n\nfunc Alpha() {}\nfunc Beta() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	demod(t, sec, "daemon", "start")
	t.Cleanup(func() { sec.Run(section.Spec{Args: []string{binary, "daemon", "stop"}, Timeout: 30 * time.Second}) })
	demod(t, sec, "cli", "index_repository", fmt.Sprintf(`{"repo_path":%q}`, repo))

	server, err := sec.Start("mcp", section.Spec{Args: []string{binary}, RawStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "bug581_test", Version: "v1"}, nil)
	session, err := client.Connect(ctx, &mcp.IOTransport{Reader: server.Stdout(), Writer: server.Stdin()}, nil)
	if err != nil {
		t.Fatalf("MCP initialize: %v; the session printed:\n%s", err, server.Output())
	}

	samples := []sample{daemonSample(t, sec, 0)}
	query := &mcp.CallToolParams{Name: "search_graph", Arguments: json.RawMessage(`{"project":"repo","name_pattern":"^A","limit":5}`)}
	// 35 is coprime with the fix's checkpoint period of 50, so the samples
	// do not all land right after a TRUNCATE.
	for q := 1; q <= 6*35; q++ {
		res, err := session.CallTool(ctx, query)
		if err != nil || res.IsError || !strings.Contains(text(res), "Alpha") {
			t.Fatalf("query %d: %+v, %v; the session printed:\n%s", q, res, err, server.Output())
		}
		if q%35 == 0 {
			samples = append(samples, daemonSample(t, sec, q))
		}
	}
	for _, x := range samples {
		t.Log(x)
	}
	session.Close()
	server.CloseStdin()
	if res, err := server.Wait(10 * time.Second); err != nil || res.RC != 0 {
		t.Errorf("the MCP session after stdin EOF: rc=%d, %v; it printed:\n%s", res.RC, err, server.Output())
	}
	return samples
}

// TestBug581GrowsWithoutTheFix pins the open bug as built: the repeated
// query grows both the WAL (about a page per query) and the session cache
// (an entry of at least 4 KiB per query). When #581 is fixed by default,
// this test turns red: promote the repro to a guard.
func TestBug581GrowsWithoutTheFix(t *testing.T) {
	t.Parallel()
	samples := repeatSearch(t)
	first, last := samples[1], samples[len(samples)-1]
	perQueryWAL := (last.wal - first.wal) / int64(last.queries-first.queries)
	if perQueryWAL < 4096*9/10 {
		t.Errorf("buggy build: WAL grew %d B/query, want about a page (4 KiB) per query", perQueryWAL)
	}
	if last.stats.CacheEntries != last.queries || last.stats.CacheBytes < int64(last.queries)*4096 {
		t.Errorf("buggy build: %d cache entries of %d B for %d queries; want one >=4 KiB entry per query",
			last.stats.CacheEntries, last.stats.CacheBytes, last.queries)
	}
}

func TestFix581Plateaus(t *testing.T) {
	t.Parallel()
	samples := repeatSearch(t, "DEMOD_FIX_581=1", "DEMOD_LEAK_BYTES=1000")
	// Until the first TRUNCATE the WAL also holds the indexing (the
	// baseline); after it, at most 50 queries' frames.
	limit := samples[0].wal + 55*(4096+24)
	for _, x := range samples {
		if x.wal > limit {
			t.Errorf("fixed build: WAL at %d bytes after %d queries; want at most %d (baseline + ~50 frames)", x.wal, x.queries, limit)
		}
		if x.stats.CacheEntries > 64 {
			t.Errorf("fixed build: %d cache entries after %d queries; want at most the cap of 64", x.stats.CacheEntries, x.queries)
		}
		// The leak meter's calibration knob is independent of the fix.
		if x.stats.LeakedBytes != int64(x.queries)*1000 {
			t.Errorf("DEMOD_LEAK_BYTES=1000: leaked %d B after %d queries, want exactly %d", x.stats.LeakedBytes, x.queries, x.queries*1000)
		}
	}
}

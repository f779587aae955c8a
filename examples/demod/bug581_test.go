package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reproboard/reproboard/examples/demod/internal/rendezvous"
)

// stats are the daemon's status-page counters.
type stats struct {
	CacheEntries int   `json:"cache_entries"`
	CacheBytes   int64 `json:"cache_bytes"`
	LeakedBytes  int64 `json:"leaked_bytes"`
	WALBytes     int64 `json:"wal_bytes"`
}

func (s *sandbox) stats() stats {
	s.t.Helper()
	st, err := rendezvous.Status(rendezvous.For(s.runtime))
	if err != nil {
		s.t.Fatalf("status for stats: %v", err)
	}
	var out stats
	if err := json.Unmarshal(st.Result, &out); err != nil {
		s.t.Fatalf("stats: %v: %s", err, st.Result)
	}
	return out
}

func (s *sandbox) walSize() int64 {
	fi, err := os.Stat(filepath.Join(s.cache, "store.db-wal"))
	if err != nil {
		return 0
	}
	return fi.Size()
}

// sample is the state after a batch of queries.
type sample struct {
	queries int
	wal     int64
	stats   stats
}

// repeatSearch runs a long MCP session that repeats one search_graph
// query, sampling after every batch.
func repeatSearch(t *testing.T, extraEnv ...string) (*sandbox, []sample) {
	s := newSandbox(t, extraEnv...)
	s.must("daemon", "start")
	s.must("cli", "index_repository", fmt.Sprintf(`{"path":%q}`, s.fixture()))
	m := s.mcp()
	m.initialize()
	samples := []sample{{queries: 0, wal: s.walSize(), stats: s.stats()}}
	id := 1
	// 35 is coprime with the fix's checkpoint period of 50, so the samples
	// do not all land right after a TRUNCATE.
	for range 6 {
		for range 35 {
			r := m.request(id, "tools/call", `{"name":"search_graph","arguments":{"project":"repo","name_pattern":"^A","limit":5}}`)
			if !strings.Contains(r, "Alpha") {
				t.Fatalf("query %d: %s", id, r)
			}
			id++
		}
		samples = append(samples, sample{queries: id - 1, wal: s.walSize(), stats: s.stats()})
	}
	for _, x := range samples {
		t.Logf("after %3d queries: WAL %7d B, cache %3d entries %7d B, leaked %d B",
			x.queries, x.wal, x.stats.CacheEntries, x.stats.CacheBytes, x.stats.LeakedBytes)
	}
	m.close()
	return s, samples
}

// TestBug581GrowsWithoutTheFix pins the open bug as built: the repeated
// query grows both the WAL (about a page per query) and the session cache
// (an entry of at least 4 KiB per query). When #581 is fixed by default,
// this test turns red: promote the repro to a guard.
func TestBug581GrowsWithoutTheFix(t *testing.T) {
	t.Parallel()
	_, samples := repeatSearch(t)
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
	_, samples := repeatSearch(t, "DEMOD_FIX_581=1", "DEMOD_LEAK_BYTES=1000")
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

package history

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reproboard/reproboard/harness/outcome"
)

func fl(f float64) *float64 { return &f }

func sampleRun(boardName string, i, sections int) *Run {
	r := &Run{Board: boardName, Time: time.Unix(1_700_000_000+int64(i)*60, 0).UTC(), Duration: 1.5,
		Commit: fmt.Sprintf("%040x", i+1), Branch: "main", GoVersion: "go1.26.0", Platform: "linux/amd64", Target: "demod"}
	for j := range sections {
		s := Section{Package: "example.com/p", Test: fmt.Sprintf("TestS/s%03d", j), Outcome: outcome.Green, Duration: 0.25, Attempts: 1}
		if j == 0 {
			s.Outcome, s.Issue, s.Reason = outcome.KnownRed, 581, "leak"
			s.Measures = []Measure{{Metric: "uss", Unit: "bytes", Slope: fl(5000 + float64(i)), Budget: "4KiB/op", Sensitivity: fl(300), Verdict: outcome.Red},
				{Metric: "file:x.db-wal", Unit: "bytes", Slope: nil, Budget: "1KiB/op", Verdict: outcome.Inconclusive}}
		}
		r.Sections = append(r.Sections, s)
	}
	return r
}

func TestRecordAndReadBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "history.db")
	s, err := Open(path)
	require.NoError(t, err)
	defer s.Close()
	for i := range 3 {
		require.NoError(t, s.Record(ctx, sampleRun("bug-repro", i, 4), Keep{}))
	}
	require.NoError(t, s.Record(ctx, sampleRun("guards", 9, 2), Keep{}))

	runs, err := s.Runs(ctx, Query{Board: "bug-repro"})
	require.NoError(t, err)
	require.Len(t, runs, 3)
	want := sampleRun("bug-repro", 0, 4)
	got := runs[0]
	want.ID = got.ID
	assert.Equal(t, want, got, "a run reads back as it was recorded")
	assert.Equal(t, 5002.0, *runs[2].Sections[0].Measures[0].Slope, "oldest first")

	runs, err = s.Runs(ctx, Query{Board: "bug-repro", Tests: []string{"TestS/s000"}, Limit: 2})
	require.NoError(t, err)
	require.Len(t, runs, 2)
	assert.Len(t, runs[1].Sections, 1)
	assert.Len(t, runs[1].Sections[0].Measures, 2)
	assert.Equal(t, fmt.Sprintf("%040x", 3), runs[1].Commit, "the newest two")

	boards, err := s.Boards(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"bug-repro", "guards"}, boards)
}

func TestRetention(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "h.db"))
	require.NoError(t, err)
	defer s.Close()
	for i := range 6 {
		require.NoError(t, s.Record(ctx, sampleRun("b", i, 2), Keep{Runs: 4}))
		require.NoError(t, s.Record(ctx, sampleRun("other", i, 1), Keep{}))
	}
	runs, err := s.Runs(ctx, Query{Board: "b"})
	require.NoError(t, err)
	require.Len(t, runs, 4, "keep 4 runs of b")
	assert.Equal(t, fmt.Sprintf("%040x", 3), runs[0].Commit)
	others, err := s.Runs(ctx, Query{Board: "other"})
	require.NoError(t, err)
	assert.Len(t, others, 6, "retention of one board leaves the others alone")
	var orphans int
	require.NoError(t, s.db.QueryRow("SELECT count(*) FROM measures WHERE run_id NOT IN (SELECT id FROM runs)").Scan(&orphans))
	assert.Zero(t, orphans, "a dropped run takes its sections and measures with it")

	// By age: the runs are a minute apart; keep the last 90 seconds.
	require.NoError(t, s.Record(ctx, sampleRun("b", 6, 2), Keep{Age: 90 * time.Second}))
	runs, err = s.Runs(ctx, Query{Board: "b"})
	require.NoError(t, err)
	assert.Len(t, runs, 2)
}

func TestUnusableFiles(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	require.NoError(t, os.WriteFile(garbage, []byte("this is not a database, it is a text file that someone saved here by mistake\n"+string(make([]byte, 4096))), 0o644))
	_, err := Open(garbage)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "history "+garbage+" is unusable: not a SQLite database, or a damaged one")
	assert.Contains(t, err.Error(), "move it away")

	foreign := filepath.Join(dir, "foreign.db")
	db, err := sql.Open("sqlite", "file:"+foreign)
	require.NoError(t, err)
	_, err = db.Exec("CREATE TABLE accounts (id INTEGER)")
	require.NoError(t, err)
	db.Close()
	_, err = Open(foreign)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a SQLite database of another program")

	newer := filepath.Join(dir, "newer.db")
	s, err := Open(newer)
	require.NoError(t, err)
	_, err = s.db.Exec(fmt.Sprintf("PRAGMA user_version=%d", Version+1))
	require.NoError(t, err)
	s.Close()
	_, err = Open(newer)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "written by a newer reproboard")

	// A history that is cut short (a cache restored half-way) is refused
	// on open or on its first read, never silently empty.
	good := filepath.Join(dir, "good.db")
	s, err = Open(good)
	require.NoError(t, err)
	for i := range 20 {
		require.NoError(t, s.Record(context.Background(), sampleRun("b", i, 30), Keep{}))
	}
	_, err = s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	require.NoError(t, err)
	s.Close()
	data, err := os.ReadFile(good)
	require.NoError(t, err)
	for i := 100; i < len(data); i += 3 {
		data[i] ^= 0x5a // scribble over everything past the header
	}
	require.NoError(t, os.WriteFile(good, data, 0o644))
	os.Remove(good + "-wal")
	os.Remove(good + "-shm")
	s, err = Open(good)
	if err == nil {
		_, err = s.Runs(context.Background(), Query{})
		s.Close()
	}
	require.Error(t, err, "a scribbled-over history must not read as fine")
	assert.Contains(t, err.Error(), "history "+good)
}

// Two processes append at once, each through its own connection; with
// WAL and the busy timeout neither loses a run.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	const perWriter = 40
	if os.Getenv("HISTORY_TEST_WRITER") != "" {
		t.Skip("the writer child runs TestWriterChild")
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	outs := make([][]byte, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestWriterChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "HISTORY_TEST_WRITER="+strconv.Itoa(w), "HISTORY_TEST_PATH="+path, "HISTORY_TEST_N="+strconv.Itoa(perWriter))
			outs[w], errs[w] = cmd.CombinedOutput()
		}()
	}
	// And this process appends a third board meanwhile, in goroutines
	// with a store each.
	var local sync.WaitGroup
	for g := range 2 {
		local.Add(1)
		go func() {
			defer local.Done()
			s, err := Open(path)
			if !assert.NoError(t, err) {
				return
			}
			defer s.Close()
			for i := range perWriter / 2 {
				assert.NoError(t, s.Record(context.Background(), sampleRun("local", g*100+i, 10), Keep{}))
			}
		}()
	}
	wg.Wait()
	local.Wait()
	for w := range 2 {
		require.NoError(t, errs[w], "writer %d (gave up after 2 minutes if killed):\n%s", w, outs[w])
	}
	s, err := Open(path)
	require.NoError(t, err)
	defer s.Close()
	for _, b := range []string{"w0", "w1", "local"} {
		runs, err := s.Runs(context.Background(), Query{Board: b})
		require.NoError(t, err)
		assert.Len(t, runs, perWriter, "board %s", b)
		for _, r := range runs {
			assert.Len(t, r.Sections, 10, "board %s run %d", b, r.ID)
		}
	}
	var check string
	require.NoError(t, s.db.QueryRow("PRAGMA integrity_check").Scan(&check))
	assert.Equal(t, "ok", check)
}

// TestWriterChild is one writer of TestConcurrentWriters.
func TestWriterChild(t *testing.T) {
	w := os.Getenv("HISTORY_TEST_WRITER")
	if w == "" {
		t.Skip("a child of TestConcurrentWriters")
	}
	n, _ := strconv.Atoi(os.Getenv("HISTORY_TEST_N"))
	s, err := Open(os.Getenv("HISTORY_TEST_PATH"))
	require.NoError(t, err)
	defer s.Close()
	for i := range n {
		require.NoError(t, s.Record(context.Background(), sampleRun("w"+w, i, 10), Keep{}))
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/reproboard/reproboard/harness/history"
	"github.com/reproboard/reproboard/harness/outcome"
)

// BenchmarkHistoryCommand is `reproboard history --last 1000 SECTION` and
// `reproboard history --last 1000` on a history of 1000 runs of a board
// of 30 sections.
func BenchmarkHistoryCommand(b *testing.B) {
	path := filepath.Join(b.TempDir(), "h.db")
	s, err := history.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		r := &history.Run{Board: "guards", Time: time.Unix(1_700_000_000+int64(i)*600, 0), Commit: fmt.Sprintf("%040x", i)}
		for j := range 30 {
			slope := float64(i)
			r.Sections = append(r.Sections, history.Section{Package: "p", Test: fmt.Sprintf("TestG/s%02d", j), Outcome: outcome.Green, Duration: 1, Attempts: 1,
				Measures: []history.Measure{{Metric: "uss", Unit: "bytes", Slope: &slope, Budget: "4KiB/op", Verdict: outcome.Green}}})
		}
		if err := s.Record(context.Background(), r, history.Keep{}); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	for _, args := range [][]string{{"TestG/s07"}, {}} {
		name := "section"
		if len(args) == 0 {
			name = "runs"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				c := &cli{ctx: context.Background(), stdout: io.Discard, stderr: io.Discard}
				if code := runHistory(c, historyCommand, append([]string{"--history", path, "--last", "1000"}, args...)); code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
		})
	}
}

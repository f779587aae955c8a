package history

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkRecord is the cost of appending one run of a board of N
// sections (one in every 30 with two leak measures) to a history that
// already holds 100 runs.
func BenchmarkRecord(b *testing.B) {
	for _, n := range []int{30, 1000} {
		b.Run(fmt.Sprintf("sections=%d", n), func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), "h.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			for i := range 100 {
				if err := s.Record(ctx, sampleRun("b", i, n), Keep{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				if err := s.Record(ctx, sampleRun("b", 100+i, n), Keep{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAnalyze reads a board's last 100 runs of 30 sections and
// analyses them, as every run's reports do.
func BenchmarkAnalyze(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "h.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := range 100 {
		if err := s.Record(ctx, sampleRun("b", i, 30), Keep{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		runs, err := s.Runs(ctx, Query{Board: "b", Limit: 100})
		if err != nil {
			b.Fatal(err)
		}
		Analyze(runs, Options{})
	}
}

package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/history"
)

// historyWindow is how many runs of a board the reports look back over:
// the strips, flake rates and trends.
const historyWindow = 30

// historyFlags are the flags of the commands that record or read the
// history.
type historyFlags struct {
	path string
	off  bool
}

func (hf *historyFlags) register(fs *flag.FlagSet, withOff bool) {
	fs.StringVar(&hf.path, "history", "", "")
	if withOff {
		fs.BoolVar(&hf.off, "no-history", false, "")
	}
}

const historyFlagsUsage = `  --history FILE  the run history database (default: history: in
                  boards.yaml, else history.db in --out)
  --no-history    record nothing, and leave history out of the reports
`

// historyPath is where the history is: --history, else boards.yaml's
// history: (relative to boards.yaml), else history.db in out.
func historyPath(flagPath string, cfg *config.Config, cfgDir, out string) string {
	switch {
	case flagPath != "":
		return flagPath
	case cfg != nil && cfg.History != "":
		if filepath.IsAbs(cfg.History) {
			return cfg.History
		}
		return filepath.Join(cfgDir, cfg.History)
	}
	return filepath.Join(out, "history.db")
}

// recorder appends the boards of one invocation to the history and reads
// back what the reports show. It opens the store once; a store that
// cannot be opened is said once, and every board's reports say history is
// unavailable and why, and are written all the same.
type recorder struct {
	c      *cli
	path   string
	keep   history.Keep
	src    source
	store  *history.Store
	broken error
}

func newRecorder(c *cli, path string, keep config.HistoryKeep, src source) *recorder {
	return &recorder{c: c, path: path, keep: history.Keep{Runs: keep.Runs, Age: keep.Age}, src: src}
}

func (r *recorder) open() error {
	if r.store == nil && r.broken == nil {
		r.store, r.broken = history.Open(r.path)
		if r.broken != nil {
			fmt.Fprintf(r.c.stderr, "reproboard: %v\nreproboard: the boards are reported without history\n", r.broken)
		}
	}
	return r.broken
}

// record appends b (a whole board: a shard is recorded by the merge of
// all shards) and analyses its window.
func (r *recorder) record(ctx context.Context, b *board.Board) *history.Analysis {
	if r == nil {
		return nil
	}
	if b.Shard != "" {
		return nil
	}
	unavailable := func(err error) *history.Analysis {
		return &history.Analysis{Board: b.Name, Unavailable: err.Error()}
	}
	if err := r.open(); err != nil {
		return unavailable(err)
	}
	run := history.FromBoard(b)
	if err := r.store.Record(ctx, run, r.keep); err != nil {
		fmt.Fprintf(r.c.stderr, "reproboard: %v\n", err)
		return unavailable(err)
	}
	runs, err := r.store.Runs(ctx, history.Query{Board: b.Name, Limit: historyWindow})
	if err != nil {
		fmt.Fprintf(r.c.stderr, "reproboard: %v\n", err)
		return unavailable(err)
	}
	return history.Analyze(runs, history.Options{Window: historyWindow})
}

func (r *recorder) close() {
	if r != nil && r.store != nil {
		r.store.Close()
	}
}

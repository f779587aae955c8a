package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/report"
)

var mergeCommand = &command{
	name:    "merge",
	summary: "combine the JSON reports of a sharded run into one board",
	usage: `usage: reproboard merge [flags] REPORT.json...

Combines the JSON reports of the shards of one run ('reproboard run
--shard K/N', one per CI job) into one board per board name, recomputes
the exit code and writes the same reports as run. Paths in a report are
relative to its file, so download each shard's --out directory whole.

It checks that it has exactly the shards 1..N of one run of each board
(same N, same boards.yaml, same listing, each shard once): a missing,
duplicate or foreign shard is exit 2, naming it.

Flags:
` + reportFlagsUsage + historyFlagsUsage + `  --config FILE   read history: and history_keep: from it, when it exists
                  (default boards.yaml)
  --out DIR       where the history is by default (default out)
  --strict        FIXED and FLAKY sections fail the board (exit 1), even
                  if the shards ran without --strict
  --allow-partial merge even with shards missing; the board says PARTIAL
                  in every report and cannot exit 0

Each merged board is appended to the history once, as one run.
` + reportFilesNote,
	run: runMerge,
}

func runMerge(c *cli, cmd *command, args []string) int {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	strict := fs.Bool("strict", false, "")
	configPath := fs.String("config", "boards.yaml", "")
	out := fs.String("out", "out", "")
	allowPartial := fs.Bool("allow-partial", false, "")
	var rf reportFlags
	rf.register(fs)
	var hf historyFlags
	hf.register(fs, true)
	files, code, ok := c.parse(fs, cmd, args)
	if !ok {
		return code
	}
	if len(files) == 0 {
		return c.usageError(cmd, "give the JSON reports of the shards")
	}
	if err := rf.check(""); err != nil {
		return c.usageError(cmd, "%v", err)
	}
	var order []string
	groups := map[string][]*board.Board{}
	groupFiles := map[string][]string{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return c.fail(cmd, err)
		}
		b, err := report.ReadJSON(f, name)
		f.Close()
		if err != nil {
			return c.fail(cmd, err)
		}
		dir, err := filepath.Abs(filepath.Dir(name))
		if err != nil {
			return c.fail(cmd, err)
		}
		b.Resolve(dir)
		if _, seen := groups[b.Name]; !seen {
			order = append(order, b.Name)
		}
		groups[b.Name] = append(groups[b.Name], b)
		groupFiles[b.Name] = append(groupFiles[b.Name], name)
	}
	wd, err := os.Getwd()
	if err != nil {
		return c.fail(cmd, err)
	}
	rp := &reporter{c: c, flags: rf, multi: len(order) > 1, moduleDir: wd}
	src := source{}
	var rec *recorder
	if !hf.off {
		var cfg *config.Config
		cfgDir := filepath.Dir(*configPath)
		if _, err := os.Stat(*configPath); err == nil {
			if cfg, err = config.Load(*configPath); err != nil {
				return c.fail(cmd, err)
			}
		}
		keep := config.HistoryKeep{}
		if cfg != nil {
			keep = cfg.HistoryKeep
		}
		src = findSource(c.ctx, wd)
		rec = newRecorder(c, historyPath(hf.path, cfg, cfgDir, *out), keep, src)
		defer rec.close()
	}
	var codes []int
	for _, name := range order {
		parts := groups[name]
		m, err := board.Merge(parts, groupFiles[name], board.MergeOptions{AllowPartial: *allowPartial})
		if err != nil {
			return c.fail(cmd, err)
		}
		if *strict && !m.Strict {
			m.Strict = true
			m.Score()
		}
		if m.RunInfo == nil { // shards from a reproboard without run objects
			m.RunInfo = src.runInfo(time.Now(), "")
			m.RunInfo.Duration = 0
		}
		rp.addHistory(m.Name, rec.record(c.ctx, m))
		code := m.ExitCode
		if err := rp.write(m, ""); err != nil {
			fmt.Fprintf(c.stderr, "reproboard merge: board %s: %v\n", name, err)
			code = combineExit([]int{code, 2})
		}
		codes = append(codes, code)
	}
	if err := rp.finish(); err != nil {
		fmt.Fprintf(c.stderr, "reproboard merge: reports: %v\n", err)
		codes = append(codes, 2)
	}
	return combineExit(codes)
}

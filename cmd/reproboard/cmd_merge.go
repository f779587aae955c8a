package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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
relative to its file, so download each shard's --out directory whole;
merge copies the artefacts into its own --out.

It checks that it has exactly the shards 1..N of one run of each board
(same N, same boards.yaml, same listing, each shard once): a missing,
duplicate or foreign shard is exit 2, naming it.

Flags:
` + reportFlagsUsage + historyFlagsUsage + `  --config FILE   read history: and history_keep: from it, when it exists
                  (default boards.yaml)
  --out DIR       where the shards' artefacts are copied and the history
                  is by default (default out): write the reports inside it
                  and every link in them is relative and resolves inside it
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
	if err := rf.check(*out); err != nil {
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
		if err := copyArtifacts(b, dir, *out); err != nil {
			return c.fail(cmd, err)
		}
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
	rp := &reporter{c: c, flags: rf, multi: len(order) > 1}
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

// copyArtifacts copies the artefacts of shard b, whose JSON report is in
// dir, into out/artifacts/merge/<board>.<shard>/ and points b at the
// copies: the merged reports then link inside out, which is what CI
// uploads, not into the directory the shards were downloaded to.
func copyArtifacts(b *board.Board, dir, out string) error {
	label := b.Name
	if b.Shard != "" {
		label += ".shard" + strings.Replace(b.Shard, "/", "of", 1)
	}
	dest := filepath.Join(out, "artifacts", "merge", label)
	b.Events = "" // a merged board has no one events file; each shard's stays with it
	for i := range b.Sections {
		for k, p := range b.Sections[i].Artifacts {
			if p == "" {
				continue
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				rel = filepath.Base(p)
			}
			to := filepath.Join(dest, rel)
			if err := copyFile(p, to); err != nil {
				if os.IsNotExist(err) {
					continue // the report names a file the shard did not upload: the link stays, and shows it
				}
				return fmt.Errorf("copying the artefacts of %s: %v", b.Name, err)
			}
			abs, err := filepath.Abs(to)
			if err != nil {
				return err
			}
			b.Sections[i].Artifacts[k] = abs
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	o, err := os.Create(to)
	if err != nil {
		return err
	}
	_, err = io.Copy(o, in)
	return errors.Join(err, o.Close())
}

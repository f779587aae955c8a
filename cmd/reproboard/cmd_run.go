package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/outcome"
)

var runCommand = &command{
	name:    "run",
	summary: "run boards, classify their sections, write the reports",
	usage: `usage: reproboard run [flags] [BOARD...]

Runs each BOARD of boards.yaml (every board when none is named): builds
the board's target once (REPROBOARD_TARGET_BINARY tells the tests where),
lists the sections with a dry run (and checks that every known_red entry
names a real test), runs them with go test -json, classifies each section
and writes the reports. The raw events and the JSON report stay in --out.

Flags:
  --config FILE   the board config (default boards.yaml); go commands run
                  in its directory
  --target NAME   run every named board against target NAME of
                  boards.yaml instead of its own (default $REPROBOARD_TARGET;
                  the difference is said)
  --shard K/N     run only shard K of N; merge the shards' JSON reports
                  with 'reproboard merge'
` + reportFlagsUsage + historyFlagsUsage + `  --rerun-fails N re-run each RED or INCONCLUSIVE section alone, up to N
                  times, after the board's run; one that passes is FLAKY
                  (default: the board's rerun_fails in boards.yaml, else 0)
  --strict        FIXED and FLAKY sections fail the board (exit 1)
  --out DIR       raw events, JSON reports, built targets, artefacts
                  (default out)
  --timeout D     go test -timeout for each test binary (default 30m)
  --deadline D    bound on each board's whole go test run (default 2h)

Each board's run is appended to the history database, and the reports
lead with what changed since the board's last run. A shard is not
recorded: the merge of the shards records the whole board.

With several boards the exit code is the worst: 1 if any board
regressed, else 2 if any could not verify, else 0.
` + reportFilesNote,
	run: runRun,
}

func runRun(c *cli, cmd *command, args []string) int {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	configPath := fs.String("config", "boards.yaml", "")
	shard := fs.String("shard", "", "")
	targetName := fs.String("target", os.Getenv(envTarget), "")
	strict := fs.Bool("strict", false, "")
	rerun := fs.Int("rerun-fails", -1, "")
	out := fs.String("out", "out", "")
	timeout := fs.Duration("timeout", 30*time.Minute, "")
	deadline := fs.Duration("deadline", 2*time.Hour, "")
	var rf reportFlags
	rf.register(fs)
	var hf historyFlags
	hf.register(fs, true)
	names, code, ok := c.parse(fs, cmd, args)
	if !ok {
		return code
	}
	if *shard != "" {
		if _, _, err := outcome.ParseShard(*shard); err != nil {
			return c.usageError(cmd, "--%v", err)
		}
	}
	if *timeout <= 0 || *deadline <= 0 {
		return c.usageError(cmd, "--timeout and --deadline must be positive durations, e.g. 30m")
	}
	if *rerun > config.MaxRerunFails || *rerun < -1 {
		return c.usageError(cmd, "--rerun-fails %d: want 0 to %d re-runs per failed section", *rerun, config.MaxRerunFails)
	}
	// Every output is checked before anything is built or run: a report
	// path found unwritable after an hour's run loses the run.
	if err := rf.check(*out); err != nil {
		return c.usageError(cmd, "%v", err)
	}
	s, err := c.openSession(*configPath, *out)
	if err != nil {
		return c.fail(cmd, err)
	}
	s.timeout, s.deadline = *timeout, *deadline
	specs, err := s.boards(names)
	if err != nil {
		return c.usageError(cmd, "%v", err)
	}
	if *targetName != "" {
		if s.cfg.Target(*targetName) == nil {
			var known []string
			for _, t := range s.cfg.Targets {
				known = append(known, t.Name)
			}
			return c.usageError(cmd, "--target %s: %s has no such target; targets: %s", *targetName, s.cfg.Path, strings.Join(known, ", "))
		}
		s.target = *targetName
		for _, spec := range specs {
			if spec.Target != s.target {
				fmt.Fprintf(c.stderr, "board %s: target %s (--target) instead of the board's own %s\n", spec.Name, s.target, spec.Target)
			}
		}
	}
	for _, spec := range specs { // build before the dry run: a broken target shows at once
		if _, err := s.targetEnv(c.ctx, spec); err != nil {
			fmt.Fprintf(c.stderr, "reproboard run: board %s: %v\n", spec.Name, err)
		}
	}
	listings, err := s.listAll(c.ctx)
	if err != nil {
		return c.fail(cmd, err)
	}
	rp := &reporter{c: c, flags: rf, multi: len(specs) > 1}
	src := findSource(c.ctx, s.dir)
	var rec *recorder
	if !hf.off {
		rec = newRecorder(c, historyPath(hf.path, s.cfg, s.dir, s.out), s.cfg.HistoryKeep, src)
		defer rec.close()
	}
	var codes []int
	for _, spec := range specs {
		stem := spec.Name
		if *shard != "" {
			stem += ".shard" + strings.Replace(*shard, "/", "of", 1)
		}
		start := time.Now()
		listed := listings[spec.Name].Names()
		key := &board.RunKey{Config: s.cfg.Digest, Listing: board.ListingDigest(listed), Assigned: inShard(listed, *shard)}
		b, err := s.runBoard(c.ctx, runSpec{spec: spec, shard: *shard, strict: *strict, stem: stem,
			expected: key.Assigned, run: key})
		if err == nil {
			n := spec.RerunFails
			if *rerun >= 0 {
				n = *rerun
			}
			s.rerunFails(c.ctx, runSpec{spec: spec, strict: *strict, stem: stem}, b, n)
		}
		if err != nil {
			// The board could not run at all: it is still on the reports,
			// with why, as a board that verified nothing.
			fmt.Fprintf(c.stderr, "reproboard run: board %s: %v\n", spec.Name, err)
			b = board.Classify(&board.Results{Problems: []board.Problem{{Kind: board.ProblemGoTest, Message: err.Error()}}}, s.cfg.KnownRed,
				board.Options{Board: spec.Name, Target: s.targetOf(spec), Gating: spec.Gating, Strict: *strict, Shard: *shard, Run: key})
		}
		b.RunInfo = src.runInfo(start, s.binaries[spec.Target])
		rp.addHistory(b.Name, rec.record(c.ctx, b))
		code := b.ExitCode
		if err := rp.write(b, filepath.Join(s.out, stem+".json")); err != nil {
			fmt.Fprintf(c.stderr, "reproboard run: board %s: reports: %v\n", spec.Name, err)
			code = combineExit([]int{code, 2})
		}
		codes = append(codes, code)
	}
	if err := rp.finish(); err != nil {
		fmt.Fprintf(c.stderr, "reproboard run: reports: %v\n", err)
		codes = append(codes, 2)
	}
	return combineExit(codes)
}

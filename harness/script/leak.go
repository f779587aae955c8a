package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/reproboard/reproboard/harness/meter"
	"github.com/reproboard/reproboard/harness/outcome"
)

// metricFlags collects repeated -metric NAME=BUDGET flags.
type metricFlags []string

func (m *metricFlags) String() string     { return strings.Join(*m, ",") }
func (m *metricFlags) Set(s string) error { *m = append(*m, s); return nil }

type judged struct {
	metric meter.Metric
	budget meter.Budget
}

// Defaults of the adaptive op count: the first round, and the bounds that
// keep one verdict under about 15 s on a 2-core machine.
const (
	leakFirstRound = 200
	leakMaxOps     = 6400
	leakMaxTime    = 12 * time.Second
	// leakMaxSamples bounds a series: a longer run (a soak) keeps every
	// other sample and samples half as often, so judging stays fast.
	leakMaxSamples = 1000
)

var cmdLeak = command{
	usage: "leak [-n N | -max-ops N -max-time d | -duration d] [-warmup W] [-batch B] [-name NAME] [-runtime auto|native] -metric NAME=BUDGET... [-proc NAME | -pid VAR | -cmdline RE] [-timeout d] op... — repeat op, sample the process after each batch (a spawned process or MCP server by name, a pid, or the one section process whose command line matches), judge each metric's series (Theil–Sen slope against its budget, with the sensitivity the run had); by default the op count doubles from 200 until every verdict is settled or -max-ops/-max-time is reached; op is `mcp NAME call TOOL JSON` or a command line, where $N (single-quoted) is the op's index",
	run: func(c *call) error {
		n := c.flags.Int("n", 0, "a fixed number of operations (default: adaptive, see -max-ops)")
		maxOps := c.flags.Int("max-ops", leakMaxOps, "adaptive: at most this many operations")
		maxTime := c.flags.Duration("max-time", leakMaxTime, "adaptive: start no round that would end after this")
		duration := c.flags.Duration("duration", 0, "soak: run operations until this much time has passed")
		warmup := c.flags.Int("warmup", -1, "operations whose samples are discarded (default: the first fifth of the ops run)")
		batch := c.flags.Int("batch", 10, "operations between samples")
		name := c.flags.String("name", "", "names this leak line's artefacts and measures (default leak1, leak2, … in script order)")
		rtFlag := c.flags.String("runtime", "auto", "auto: recognise the target's runtime (Go, Node.js, Python, JVM); native: treat it as a program without a collector")
		procName := c.flags.String("proc", "", "a spawned process or MCP session to sample, by name")
		pidVar := c.flags.String("pid", "", "variable holding the pid to sample (default: the one section process matching -cmdline)")
		cmdline := c.flags.String("cmdline", "", "with the section marker: regexp the sampled process's command line must match")
		timeout := c.timeoutFlag()
		var metrics metricFlags
		c.flags.Var(&metrics, "metric", "NAME=BUDGET, e.g. uss=4KiB/op or file:cache/**/*.db-wal=8KiB/op (repeatable)")
		if err := c.parse(1, -1); err != nil {
			return err
		}
		if len(metrics) == 0 {
			return c.usagef("at least one -metric NAME=BUDGET")
		}
		modes := 0
		for _, set := range []bool{*n != 0, *duration != 0} {
			if set {
				modes++
			}
		}
		switch {
		case modes > 1:
			return c.usagef("-n (a fixed count) and -duration (a soak) exclude each other")
		case *n < 0 || *batch < 1 || *maxOps < 1 || *duration < 0 || *maxTime <= 0:
			return c.usagef("need n >= 1, batch >= 1, max-ops >= 1, a positive max-time and duration")
		case *n > 0 && *batch > *n:
			return c.usagef("need 1 <= batch <= n")
		case *rtFlag != "auto" && *rtFlag != "native":
			return c.usagef("-runtime %q: want auto or native", *rtFlag)
		}
		adaptive := *n == 0 && *duration == 0
		c.st.mu.Lock()
		c.st.leaks++
		ordinal := c.st.leaks
		c.st.mu.Unlock()
		// The measure line names the series when it must tell it from
		// another of the section's: given a -name, or a later leak line.
		measureName := *name
		if *name == "" {
			*name = fmt.Sprintf("leak%d", ordinal)
			if ordinal > 1 {
				measureName = *name
			}
		}
		var specs []judged
		var ms []meter.Metric
		for _, spec := range metrics {
			mname, budget, ok := strings.Cut(spec, "=")
			if !ok {
				return c.usagef("-metric %q: want NAME=BUDGET", spec)
			}
			m, err := meter.ParseMetric(mname)
			if err != nil {
				return c.usagef("-metric %q: %v", spec, err)
			}
			b, err := meter.ParseBudget(budget)
			if err != nil {
				return c.usagef("-metric %q: %v", spec, err)
			}
			specs = append(specs, judged{m, b})
			ms = append(ms, m)
		}
		tgt := &meter.Target{Dir: c.st.sec.Root}
		switch {
		case *procName != "":
			pid, err := c.handlePid(*procName)
			if err != nil {
				return err
			}
			tgt.PID = pid
		case *pidVar != "":
			p, err := c.pidVar(*pidVar)
			if err != nil {
				return err
			}
			tgt.PID = p.Pid
		default:
			tgt.Marker = c.st.sec.Marker
			if *cmdline != "" {
				re, err := regexp.Compile(*cmdline)
				if err != nil {
					return c.usagef("-cmdline: %v", err)
				}
				tgt.Cmdline = re
			}
		}
		op, err := c.leakOp(c.args)
		if err != nil {
			return err
		}

		ctx, cancel := context.WithTimeout(context.Background(), c.within(*timeout))
		defer cancel()
		rec := meter.NewRecorder(tgt, ms...)
		goal := *n
		switch {
		case adaptive:
			goal = min(leakFirstRound, *maxOps)
		case *duration > 0:
			goal = math.MaxInt
		}
		progressTotal := goal
		if *duration > 0 {
			progressTotal = 0 // a soak counts time, not ops
		}
		progress := meter.NewProgress("leak "+string(ms[0]), progressTotal)
		var opErr error
		var rt *meter.Runtime
		start := time.Now()
		done, every := 0, *batch
		warmupAt := func(ops int) int {
			if *warmup >= 0 {
				return *warmup
			}
			return ops / 5
		}
		judge := func() []meter.Verdict {
			var vs []meter.Verdict
			for i, s := range rec.Series() {
				vs = append(vs, meter.Judge(s, meter.Options{Budget: specs[i].budget, Warmup: warmupAt(done), OpErr: opErr, Runtime: rt}))
			}
			return vs
		}
		var rounds []string
		red := make([]int, len(ms)) // consecutive rounds each metric was RED
		stopped := ""
		for {
			for done < goal && opErr == nil {
				for i := 0; i < every && done < goal; i++ {
					if opErr = op(ctx, done); opErr != nil {
						opErr = fmt.Errorf("operation %d (index $N=%d) failed: %w", done+1, done, opErr)
						break
					}
					done++
				}
				if opErr != nil {
					break
				}
				snap := rec.Record(ctx, done)
				if rt == nil {
					if pid := tgt.PinnedPID(); pid != 0 {
						r := meter.Native
						if *rtFlag == "auto" {
							r = meter.DetectRuntime(pid)
						}
						rt = &r
					}
				}
				progress.Update(done, snap.Readings[ms[0]])
				if rec.Len() > leakMaxSamples {
					rec.Thin()
					every *= 2
				}
				if *duration > 0 && time.Since(start) >= *duration {
					goal = done
				}
				if adaptive && time.Since(start) >= *maxTime {
					stopped = fmt.Sprintf("stopped at -max-time %s", *maxTime)
					goal = done
				}
				if ctx.Err() != nil {
					stopped = "stopped at the section's deadline (-timeout)"
					goal = done
				}
			}
			if !adaptive || opErr != nil {
				break
			}
			vs := judge()
			open := false
			word := make([]string, len(vs))
			for i, v := range vs {
				if v.Outcome == outcome.Red {
					red[i]++
				} else {
					red[i] = 0
				}
				// A RED must hold as the run doubles: early growth of a
				// lazily sized heap is not yet a leak.
				if v.More || v.Outcome == outcome.Red && red[i] < 2 {
					open = true
				}
				word[i] = string(v.Outcome)
				if v.More {
					word[i] += "?"
				}
			}
			rounds = append(rounds, fmt.Sprintf("%d:%s", done, strings.Join(word, ",")))
			if !open || stopped != "" {
				break
			}
			next := min(2*goal, *maxOps)
			if next <= done {
				stopped = fmt.Sprintf("stopped at -max-ops %d", *maxOps)
				break
			}
			if est := time.Duration(float64(time.Since(start)) * float64(next) / float64(done)); est > *maxTime {
				stopped = fmt.Sprintf("stopped before %d ops: that round would end after -max-time %s (about %s)", next, *maxTime, est.Round(100*time.Millisecond))
				break
			}
			goal = next
			progress.SetTotal(goal)
		}
		progress.Done()
		took := time.Since(start)

		worst := outcome.Green
		var reasons []string
		dir := c.st.artifactDir()
		for i, v := range judge() {
			s := rec.Series()[i]
			m := meter.NewMeasure(s, v)
			m.Name = measureName
			line := meter.FormatMeasure(m)
			fmt.Fprintln(c.stdout(), line)
			c.st.t.Log(line)
			// One attribute per series: an attribute holds one line.
			c.st.t.Attr(outcome.AttrMeasure+"."+meter.Slug(*name)+"."+meter.Slug(string(s.Metric)), line)
			if dir != "" {
				arts, err := meter.WriteArtifacts(dir, *name, s, v)
				if err != nil {
					c.st.t.Logf("leak artefacts: %v", err)
				}
				for _, a := range arts {
					outcome.Artifact(c.st.t, a.Kind, a.Path)
				}
			}
			reasons = append(reasons, v.Reason)
			worst = worse(worst, v.Outcome)
		}
		how := fmt.Sprintf("%d ops", done)
		switch {
		case adaptive:
			how += " (adaptive, verdicts at " + strings.Join(rounds, " ")
			if stopped != "" {
				how += "; " + stopped
			}
			how += ")"
		case *duration > 0:
			how += fmt.Sprintf(" (soak of %s)", *duration)
		}
		rtText := "runtime unknown: no sample was taken"
		if rt != nil {
			rtText = rt.String()
		}
		summary := fmt.Sprintf("leak %s: %s in %s against %s (%s): %s", *name, how, took.Round(time.Millisecond), tgt, rtText, strings.Join(reasons, "; "))
		fmt.Fprintln(c.stdout(), summary)
		switch worst {
		case outcome.Green:
			return nil
		case outcome.Inconclusive:
			c.st.mark(outcome.Inconclusive, strings.Join(reasons, "; "))
			return fmt.Errorf("INCONCLUSIVE: %s", summary)
		}
		return errors.New(summary)
	},
}

// sectionArtifactDir is where a section's artefacts go: the test's
// artefact directory (kept with go test -artifacts). Go 1.26 names it
// <outputdir>/_artifacts/<package>/<test>/<random>, but falls back to
// _artifacts/<random> whenever the package path is absolute (always, as
// of go1.26), which tells a reader nothing; then the artefacts go to
// _artifacts/<section name> instead (-2, -3, … if taken) and the unused
// numbered directory is removed. "" when the test has no artefact
// directory. Every leak line of a section writes to the same one.
func (st *state) artifactDir() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.artifacts == nil {
		d := sectionArtifactDir(st.t)
		st.artifacts = &d
	}
	return *st.artifacts
}

func sectionArtifactDir(t TB) string {
	dir := artifactDir(t)
	if dir == "" {
		return ""
	}
	parent := filepath.Dir(dir)
	if filepath.Base(parent) != "_artifacts" || strings.Trim(filepath.Base(dir), "0123456789") != "" {
		return dir
	}
	base := filepath.Join(parent, filepath.FromSlash(meter.SlugPath(t.Name())))
	for i := 1; ; i++ {
		try := base
		if i > 1 {
			try = fmt.Sprintf("%s-%d", base, i)
		}
		os.MkdirAll(filepath.Dir(try), 0o777)
		if err := os.Mkdir(try, 0o777); err == nil {
			os.Remove(dir) // only if empty: something else may have used it
			return try
		} else if !errors.Is(err, fs.ErrExist) || i > 100 {
			return dir
		}
	}
}

// worse orders verdicts: RED beats INCONCLUSIVE beats GREEN.
func worse(a, b outcome.Outcome) outcome.Outcome {
	rank := map[outcome.Outcome]int{outcome.Green: 0, outcome.Inconclusive: 1, outcome.Red: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// artifactDir is the test's artefact directory (kept with go test
// -artifacts), or "" when the test has none.
func artifactDir(t TB) string {
	if a, ok := t.(interface{ ArtifactDir() string }); ok {
		return a.ArtifactDir()
	}
	return ""
}

// leakOp turns the operation words into one call: an MCP tool call on an
// open session, or a command line run to its end (exit 0 required).
func (c *call) leakOp(args []string) (func(context.Context, int) error, error) {
	if args[0] == "mcp" {
		if len(args) < 4 || len(args) > 5 || args[2] != "call" {
			return nil, c.usagef("leak's op: mcp NAME call TOOL [JSON]")
		}
		m, err := c.mcpSession(args[1])
		if err != nil {
			return nil, err
		}
		params := "{}"
		if len(args) == 5 {
			if !json.Valid([]byte(opText(args[4], 0))) {
				return nil, c.usagef("arguments %q are not valid JSON (with $N as 0)", args[4])
			}
			params = args[4]
		}
		tool := args[3]
		return func(ctx context.Context, i int) error {
			rctx, cancel := context.WithTimeout(ctx, mcpRequestTimeout)
			defer cancel()
			_, err := m.callTool(rctx, opText(tool, i), json.RawMessage(opText(params, i)))
			if err != nil {
				var te *toolError
				state := ""
				if !errors.As(err, &te) {
					// The connection failed (EOF, a closed pipe): say how
					// the server ended, if it did.
					if res, werr := m.proc.Wait(2 * time.Second); werr == nil {
						state = fmt.Sprintf(" (server pid %d exited rc=%d)", m.proc.Pid(), res.RC)
					} else {
						state = fmt.Sprintf(" (server pid %d still running)", m.proc.Pid())
					}
				}
				return fmt.Errorf("%v%s\nsession stderr:\n%s", err, state, m.stderrTail())
			}
			return nil
		}, nil
	}
	argv, err := c.argv(args)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, i int) error {
		d := time.Minute
		if dl, ok := ctx.Deadline(); ok {
			d = time.Until(dl)
		}
		opArgv := make([]string, len(argv))
		for j, a := range argv {
			opArgv[j] = opText(a, i)
		}
		res := c.st.sec.Run(c.specWithin(opArgv, d))
		if res.RC != 0 {
			return errors.New(describe(args, res))
		}
		return nil
	}, nil
}

// mark records an outcome other than RED for the script; the end of the
// script keeps it instead of deriving RED from the failure.
func (st *state) mark(o outcome.Outcome, reason string) {
	st.mu.Lock()
	st.marked = o
	st.mu.Unlock()
	outcome.Mark(st.t, o, reason)
}

// handlePid is the pid of a spawned process or an MCP session's server.
func (c *call) handlePid(name string) (int, error) {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if p, ok := c.st.procs[name]; ok {
		return p.Pid(), nil
	}
	if m, ok := c.st.mcps[name]; ok {
		return m.proc.Pid(), nil
	}
	return 0, c.usagef("no spawned process or MCP session named %s", name)
}

// opText fills an op template: $N becomes the operation's index (0, 1, …),
// so each op can be unique (a new key, a new entity name). Write it inside
// single quotes in a script, where testscript leaves $ alone.
func opText(s string, i int) string {
	return strings.ReplaceAll(s, "$N", strconv.Itoa(i))
}

package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
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

var cmdLeak = command{
	usage: "leak [-n N] [-warmup W] [-batch B] -metric NAME=BUDGET... [-proc NAME | -pid VAR | -cmdline RE] [-timeout d] op... — repeat op N times, sample the process after each batch (a spawned process or MCP server by name, a pid, or the one section process whose command line matches), judge each metric's series (Theil–Sen slope against its budget); op is `mcp NAME call TOOL JSON` or a command line",
	run: func(c *call) error {
		n := c.flags.Int("n", 200, "operations in all")
		warmup := c.flags.Int("warmup", 0, "operations whose samples are discarded (default: a fifth of n)")
		batch := c.flags.Int("batch", 10, "operations between samples")
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
		if *n < 1 || *batch < 1 || *batch > *n {
			return c.usagef("need n >= 1 and 1 <= batch <= n")
		}
		if *warmup == 0 {
			*warmup = *n / 5
		}
		var specs []judged
		var ms []meter.Metric
		for _, spec := range metrics {
			name, budget, ok := strings.Cut(spec, "=")
			if !ok {
				return c.usagef("-metric %q: want NAME=BUDGET", spec)
			}
			m, err := meter.ParseMetric(name)
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
		progress := meter.NewProgress("leak "+string(ms[0]), *n)
		var opErr error
		start := time.Now()
		done := 0
		for done < *n && opErr == nil {
			for i := 0; i < *batch && done < *n; i++ {
				if opErr = op(ctx); opErr != nil {
					opErr = fmt.Errorf("operation %d of %d failed: %w", done+1, *n, opErr)
					break
				}
				done++
			}
			if opErr == nil {
				snap := rec.Record(ctx, done)
				progress.Update(done, snap.Readings[ms[0]])
			}
		}
		progress.Done()
		took := time.Since(start)

		worst := outcome.Green
		var reasons []string
		for i, s := range rec.Series() {
			v := meter.Judge(s, meter.Options{Budget: specs[i].budget, Warmup: *warmup, OpErr: opErr})
			line := meter.FormatMeasure(meter.NewMeasure(s, v))
			fmt.Fprintln(c.stdout(), line)
			c.st.t.Log(line)
			// One attribute per metric: an attribute holds one line.
			c.st.t.Attr(outcome.AttrMeasure+"."+meter.Slug(string(s.Metric)), line)
			if dir := artifactDir(c.st.t); dir != "" {
				arts, err := meter.WriteArtifacts(dir, s, v)
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
		summary := fmt.Sprintf("leak: %d ops in %s against %s: %s", done, took.Round(time.Millisecond), tgt, strings.Join(reasons, "; "))
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
func (c *call) leakOp(args []string) (func(context.Context) error, error) {
	if args[0] == "mcp" {
		if len(args) < 4 || len(args) > 5 || args[2] != "call" {
			return nil, c.usagef("leak's op: mcp NAME call TOOL [JSON]")
		}
		m, err := c.mcpSession(args[1])
		if err != nil {
			return nil, err
		}
		params := json.RawMessage("{}")
		if len(args) == 5 {
			if !json.Valid([]byte(args[4])) {
				return nil, c.usagef("arguments %q are not valid JSON", args[4])
			}
			params = json.RawMessage(args[4])
		}
		tool := args[3]
		return func(ctx context.Context) error {
			rctx, cancel := context.WithTimeout(ctx, mcpRequestTimeout)
			defer cancel()
			_, err := m.callTool(rctx, tool, params)
			if err != nil {
				return fmt.Errorf("%v\nsession stderr:\n%s", err, m.stderrTail())
			}
			return nil
		}, nil
	}
	argv, err := c.argv(args)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		d := time.Minute
		if dl, ok := ctx.Deadline(); ok {
			d = time.Until(dl)
		}
		res := c.st.sec.Run(c.specWithin(argv, d))
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

package repro

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/reproboard/reproboard/harness/meter"
	"github.com/reproboard/reproboard/harness/meter/leakertest"
	"github.com/reproboard/reproboard/harness/script"
	"github.com/reproboard/reproboard/harness/selftest"
)

const sensitivityEnv = "REPROBOARD_SENSITIVITY_RUN"

// TestSensitivityScript is one run of BenchmarkLeakSensitivity, in its
// child process only.
func TestSensitivityScript(t *testing.T) {
	if os.Getenv(sensitivityEnv) != "1" {
		t.Skip("runs only under BenchmarkLeakSensitivity")
	}
	script.Run(t, script.Params{Dir: "../testdata/bench", NoTarget: true, Setup: func(env *testscript.Env) error {
		for _, k := range []string{"LEAKER", "LEAKER_RUNTIME", "LEAK_METRIC", "LEAK_BYTES"} {
			env.Vars = append(env.Vars, k+"="+os.Getenv(k))
		}
		return nil
	}})
}

var leakLine = regexp.MustCompile(`(?m)LEAK_MEASURE .*$`)

// BenchmarkLeakSensitivity measures what the reproduction tier catches on
// real runtimes: a leaker per runtime (testdata/leakers: Go at default
// GOGC, C, Node.js) keeps LEAK_BYTES per call and churns 256 KiB of
// garbage per call; each size is judged by `leak` with its defaults
// (adaptive op count, -max-ops 6400, -max-time 12s) against 2 KiB/op, in
// REPROBOARD_BENCH_RUNS runs (default 10). Node.js is judged twice, on
// v8heap and on uss, in separate runs. Beside it, the two-point rule of a
// first #581 repro, on the same runs: RED when RSS after 150 calls exceeds
// 3.0 x RSS after 10.
func BenchmarkLeakSensitivity(b *testing.B) {
	ls, err := leakertest.Build(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	runs := 10
	if v, err := strconv.Atoi(os.Getenv("REPROBOARD_BENCH_RUNS")); err == nil && v > 0 {
		runs = v
	}
	sizes := []int{0, 1 << 10, 2 << 10, 4 << 10, 16 << 10}
	type row struct {
		runtime, metric      string
		size                 int
		red, green, inc, bad int
		twoPointRED          int
		ops                  []int
		took, maxTook        time.Duration
	}
	type config struct {
		l      leakertest.Leaker
		metric string
	}
	var configs []config
	for _, l := range ls {
		if l.Skip != "" {
			b.Logf("%s: skipped: %s", l.Runtime, l.Skip)
			continue
		}
		configs = append(configs, config{l, l.Metric()})
		if l.Metric() != "uss" {
			configs = append(configs, config{l, "uss"})
		}
	}
	for b.Loop() {
		var rows []row
		for _, cfg := range configs {
			for _, size := range sizes {
				r := row{runtime: cfg.l.Runtime, metric: cfg.metric, size: size}
				for range runs {
					env := append(cfg.l.Env(), sensitivityEnv+"=1", "LEAK_BYTES="+strconv.Itoa(size), "LEAK_METRIC="+cfg.metric)
					child := selftest.Run(selftest.Child{Run: []string{"TestSensitivityScript"}, Env: env})
					r.took += child.Duration
					r.maxTook = max(r.maxTook, child.Duration)
					measures := map[string]meter.Measure{}
					for _, line := range leakLine.FindAllString(child.Output, -1) {
						if m, err := meter.ParseMeasure(line); err == nil {
							measures[string(m.Metric)] = m
						}
					}
					m, okM := measures[cfg.metric]
					rss, okR := measures["rss"]
					if !okM || !okR {
						r.bad++
						b.Logf("%s %s size %d: no measurement:\n%s", cfg.l.Runtime, cfg.metric, size, child.Output)
						continue
					}
					switch m.Verdict {
					case "RED":
						r.red++
					case "GREEN":
						r.green++
					default:
						r.inc++
					}
					r.ops = append(r.ops, m.Ops)
					if twoPointRule(rss.Points) {
						r.twoPointRED++
					}
				}
				rows = append(rows, r)
				fmt.Fprintf(os.Stderr, "%s/%s %s: %d RED %d GREEN %d INCONCLUSIVE\n", r.runtime, r.metric, humanize.IBytes(uint64(size)), r.red, r.green, r.inc)
			}
		}
		var t strings.Builder
		fmt.Fprintf(&t, "\nleak sensitivity: leakers keeping LEAK_BYTES per call, 256 KiB garbage per call; %d runs each; `leak` defaults (adaptive), budget 2KiB/op\n", runs)
		tw := tabwriter.NewWriter(&t, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "runtime\tmetric\tleak/op\tRED\tGREEN\tINCONCLUSIVE\tops used (min-max)\tmean s/verdict\tmax s/verdict\ttwo-point RSS rule\tno measurement")
		for _, r := range rows {
			lo, hi := 0, 0
			for i, o := range r.ops {
				if i == 0 || o < lo {
					lo = o
				}
				hi = max(hi, o)
			}
			n := max(runs, 1)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d/%d\t%d/%d\t%d-%d\t%.1f\t%.1f\t%d/%d RED\t%d\n", r.runtime, r.metric, humanize.IBytes(uint64(r.size)),
				r.red, runs, r.green, runs, r.inc, runs, lo, hi, (r.took / time.Duration(n)).Seconds(), r.maxTook.Seconds(), r.twoPointRED, runs, r.bad)
		}
		tw.Flush()
		fmt.Print(t.String())
	}
}

// twoPointRule is the rule of a first #581 repro: end RSS (150 ops) above 3.0 x
// the RSS after the 10-op warmup.
func twoPointRule(points []meter.Point) bool {
	var at10, at150 float64
	for _, p := range points {
		switch p.Ops {
		case 10:
			at10 = p.Value
		case 150:
			at150 = p.Value
		}
	}
	return at10 > 0 && at150 > 3.0*at10
}

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

	"github.com/reproboard/reproboard/harness/meter"
	"github.com/reproboard/reproboard/harness/script"
	"github.com/reproboard/reproboard/harness/selftest"
	"github.com/reproboard/reproboard/harness/target"
)

const sensitivityEnv = "REPROBOARD_SENSITIVITY_RUN"

// TestSensitivityScript is one run of BenchmarkLeakSensitivity, in its
// child process only.
func TestSensitivityScript(t *testing.T) {
	if os.Getenv(sensitivityEnv) != "1" {
		t.Skip("runs only under BenchmarkLeakSensitivity")
	}
	script.Run(t, script.Params{Dir: "../testdata/bench"})
}

var leakLine = regexp.MustCompile(`(?m)LEAK_MEASURE metric=(uss|rss) .*$`)

// BenchmarkLeakSensitivity measures how small a leak the reproduction tier
// catches: demod with #581 fixed retains DEMOD_LEAK_BYTES per query; each
// size is judged by `leak` (USS, Theil–Sen against 2 KiB/op, 400 ops) in 10
// runs. Beside it, the two-point rule of a first #581 repro, on the same runs: RED when RSS after 150
// queries exceeds 3.0 x RSS after 10.
func BenchmarkLeakSensitivity(b *testing.B) {
	tgt, err := script.Target()
	if err != nil {
		b.Fatal(err)
	}
	sizes := []int{0, 1 << 10, 2 << 10, 4 << 10, 16 << 10, 64 << 10}
	const runs = 10
	type row struct {
		size                      int
		leakRED, twoPointRED, bad int
		took                      time.Duration
		maxTook                   time.Duration
	}
	for b.Loop() {
		var rows []row
		for _, size := range sizes {
			r := row{size: size}
			for range runs {
				child := selftest.Run(selftest.Child{Run: []string{"TestSensitivityScript"}, Env: []string{sensitivityEnv + "=1",
					target.BinaryEnv + "=" + tgt.Path, "DEMOD_FIX_581=1", "DEMOD_LEAK_BYTES=" + strconv.Itoa(size)}})
				out, took := child.Output, child.Duration
				r.took += took
				r.maxTook = max(r.maxTook, took)
				measures := map[string]meter.Measure{}
				for _, line := range leakLine.FindAllString(out, -1) {
					if m, err := meter.ParseMeasure(line); err == nil {
						measures[string(m.Metric)] = m
					}
				}
				uss, okU := measures["uss"]
				rss, okR := measures["rss"]
				if !okU || !okR {
					r.bad++
					b.Logf("size %d: no measurement:\n%s", size, out)
					continue
				}
				if uss.Verdict == "RED" {
					r.leakRED++
				}
				if twoPointRule(rss.Points) {
					r.twoPointRED++
				}
			}
			rows = append(rows, r)
		}
		var t strings.Builder
		fmt.Fprintf(&t, "\nleak sensitivity: demod, #581 fixed, DEMOD_LEAK_BYTES per query; %d runs each, 400 ops, USS budget 2KiB/op\n", runs)
		tw := tabwriter.NewWriter(&t, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "leak/op\tleak (Theil-Sen on USS)\ttwo-point rule (RSS@150 > 3 x RSS@10)\tmean time/run\tmax time/run\tno measurement")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%d/%d RED\t%d/%d RED\t%s\t%s\t%d\n", humanize.IBytes(uint64(r.size)),
				r.leakRED, runs, r.twoPointRED, runs, (r.took / runs).Round(10*time.Millisecond), r.maxTook.Round(10*time.Millisecond), r.bad)
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

package meter

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/reproboard/reproboard/harness/outcome"
)

const smapsFixture = `55d0c0000000-7ffd00000000 ---p 00000000 00:00 0                          [rollup]
Rss:               20480 kB
Pss:               12288 kB
Pss_Dirty:          8192 kB
Shared_Clean:       6144 kB
Shared_Dirty:          0 kB
Private_Clean:      1024 kB
Private_Dirty:      9216 kB
Referenced:        20480 kB
Anonymous:          9216 kB
Swap:                  0 kB
`

func TestParseSmapsRollupFixture(t *testing.T) {
	sm, err := parseSmapsRollup(smapsFixture)
	if err != nil {
		t.Fatal(err)
	}
	if sm.pss != 12288<<10 || sm.privateClean+sm.privateDirty != 10240<<10 {
		t.Errorf("pss=%d uss=%d, want %d and %d", sm.pss, sm.privateClean+sm.privateDirty, 12288<<10, 10240<<10)
	}
	// An exited process or kernel thread has an empty rollup: an error, not zeros.
	if _, err := parseSmapsRollup(""); err == nil {
		t.Error("empty smaps_rollup parsed without error")
	}
	if _, err := parseSmapsRollup("Pss: 12 MB\nPrivate_Clean: 1 kB\nPrivate_Dirty: 1 kB\n"); err == nil {
		t.Error("unit MB accepted; smaps_rollup is always kB")
	}
}

var allMetrics = []Metric{RSS, USS, PSS, VMS, FDs, Threads}

func TestSampleSelf(t *testing.T) {
	snap := Sample(context.Background(), &Target{PID: os.Getpid()}, allMetrics)
	for _, m := range allMetrics {
		r := snap.Readings[m]
		if r.Err != nil || !(r.Value > 0) || r.Unit != m.Unit() {
			t.Errorf("%s = %+v, want a positive reading in %s", m, r, m.Unit())
		}
	}
	rss, uss, pss := snap.Readings[RSS].Value, snap.Readings[USS].Value, snap.Readings[PSS].Value
	if !(uss <= pss && pss <= rss) {
		t.Errorf("want uss <= pss <= rss, got uss=%v pss=%v rss=%v", uss, pss, rss)
	}
}

func TestSampleSleepChildThenDead(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep binary: %v", err)
	}
	defer cmd.Process.Kill()
	target := &Target{PID: cmd.Process.Pid}
	snap := Sample(context.Background(), target, allMetrics)
	for _, m := range allMetrics {
		if r := snap.Readings[m]; r.Err != nil || !(r.Value > 0) {
			t.Errorf("live sleep %s = %v, want a positive reading", m, r)
		}
	}
	if th := snap.Readings[Threads].Value; th != 1 {
		t.Errorf("sleep has %v threads, want 1", th)
	}

	series := Series{Metric: USS, Unit: Bytes}
	for i := range 5 {
		series.Add(i*10, Sample(context.Background(), target, []Metric{USS}).Readings[USS])
	}
	cmd.Process.Kill()
	cmd.Process.Wait() // reaped: the pid is gone
	dead := Sample(context.Background(), target, allMetrics)
	for _, m := range allMetrics {
		r := dead.Readings[m]
		if r.Err == nil || !strings.Contains(r.Err.Error(), "not running") {
			t.Errorf("dead process %s = %v, want unreadable: not running", m, r)
		}
		if r.Value == 0 {
			t.Errorf("dead process %s reads as 0; an unreadable metric must not look like a value", m)
		}
	}
	series.Add(50, dead.Readings[USS])
	v := Judge(series, Options{Budget: MustParseBudget("4KiB/op")})
	if v.Outcome != outcome.Inconclusive || !strings.Contains(v.Reason, "unreadable at 50 ops") {
		t.Errorf("verdict with a dead sample = %s, want INCONCLUSIVE unreadable at 50 ops", v.Reason)
	}
}

func TestSampleZombieIsUnreadable(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep binary: %v", err)
	}
	target := &Target{PID: cmd.Process.Pid}
	if r := Sample(context.Background(), target, []Metric{RSS}).Readings[RSS]; r.Err != nil {
		t.Fatal(r.Err)
	}
	cmd.Process.Kill()
	// Not yet reaped: the pid still exists as a zombie, with no memory.
	var r Reading
	for range 200 {
		if r = Sample(context.Background(), target, []Metric{USS}).Readings[USS]; r.Err != nil {
			break
		}
	}
	if r.Err == nil || !strings.Contains(r.Err.Error(), "exited") {
		t.Errorf("killed, unreaped child uss = %v, want unreadable: exited", r)
	}
	// A zombie's statm and fd directory read as zeros: every metric, not
	// only the smaps_rollup ones, must be unreadable.
	snap := Sample(context.Background(), target, allMetrics)
	cmd.Wait()
	for _, m := range allMetrics {
		if r := snap.Readings[m]; r.Err == nil || !strings.Contains(r.Err.Error(), "exited") {
			t.Errorf("killed, unreaped child %s = %v, want unreadable: exited", m, r)
		}
	}
}

func TestTargetReplaced(t *testing.T) {
	target := &Target{PID: os.Getpid()}
	if r := Sample(context.Background(), target, []Metric{RSS}).Readings[RSS]; r.Err != nil {
		t.Fatal(r.Err)
	}
	target.proc.Start-- // as if the pid now belonged to a later process
	r := Sample(context.Background(), target, []Metric{RSS}).Readings[RSS]
	if r.Err == nil || !strings.Contains(r.Err.Error(), "replaced") {
		t.Errorf("after a start-time change rss = %v, want unreadable: replaced", r)
	}
}

func TestTargetByMarker(t *testing.T) {
	marker := fmt.Sprintf("meter-test-%d", os.Getpid())
	c := startChild(t, MarkerEnv+"="+marker)
	c.do(t, "churn 0")
	target := &Target{Marker: marker, Cmdline: regexp.MustCompile(`\.test`)}
	snap := Sample(context.Background(), target, []Metric{RSS, FDs})
	if snap.PID != c.cmd.Process.Pid || snap.Readings[RSS].Err != nil {
		t.Fatalf("marker found pid %d (%v), want child %d", snap.PID, snap.Readings[RSS], c.cmd.Process.Pid)
	}

	// A second marked process makes the marker ambiguous; both are named.
	c2 := startChild(t, MarkerEnv+"="+marker)
	c2.do(t, "churn 0")
	r := Sample(context.Background(), &Target{Marker: marker}, []Metric{RSS}).Readings[RSS]
	for _, want := range []string{"2 processes", fmt.Sprint(c.cmd.Process.Pid), fmt.Sprint(c2.cmd.Process.Pid)} {
		if r.Err == nil || !strings.Contains(r.Err.Error(), want) {
			t.Errorf("ambiguous marker: %v, want an error naming %q", r, want)
		}
	}
	// A cmdline filter that excludes both says what it excluded.
	r = Sample(context.Background(), &Target{Marker: marker, Cmdline: regexp.MustCompile(`^daemon$`)}, []Metric{RSS}).Readings[RSS]
	if r.Err == nil || !strings.Contains(r.Err.Error(), "did not match") {
		t.Errorf("filtered marker: %v, want unreadable naming the excluded processes", r)
	}
	r = Sample(context.Background(), &Target{Marker: marker + "-none"}, []Metric{RSS}).Readings[RSS]
	if r.Err == nil || !strings.Contains(r.Err.Error(), "no process has") {
		t.Errorf("unknown marker: %v, want unreadable: no process has", r)
	}
	r = Sample(context.Background(), &Target{}, []Metric{RSS}).Readings[RSS]
	if r.Err == nil {
		t.Errorf("empty target: %v, want unreadable", r)
	}
}

// TestChildUSSGrowth measures a real process: one that keeps 256 KiB per
// op is RED against 64KiB/op, one that allocates and drops as much is not.
func TestChildUSSGrowth(t *testing.T) {
	budget := MustParseBudget("64KiB/op")
	for _, tc := range []struct {
		cmd  string
		want outcome.Outcome
	}{
		{"grow 256", outcome.Red},
		{"churn 256", outcome.Green},
	} {
		t.Run(strings.Fields(tc.cmd)[0], func(t *testing.T) {
			c := startChild(t)
			rec := NewRecorder(&Target{PID: c.cmd.Process.Pid}, USS, RSS)
			const warmup, total = 10, 40
			for ops := 0; ops <= total; ops++ {
				if ops > 0 {
					c.do(t, tc.cmd)
				}
				rec.Record(context.Background(), ops)
			}
			uss := rec.Series()[0]
			v := Judge(uss, Options{Budget: budget, Warmup: warmup})
			t.Log(FormatMeasure(NewMeasure(uss, v)))
			if v.Outcome != tc.want {
				t.Errorf("%s: %s, want %s", tc.cmd, v.Reason, tc.want)
			}
			// At least what was kept; under -race the detector's shadow memory
			// roughly doubles it.
			if tc.want == outcome.Red && (v.Slope < 200<<10 || v.Slope > 1<<20) {
				t.Errorf("slope %s/op, want 256KiB/op (up to ~2x under -race)", Bytes.Human(v.Slope))
			}
		})
	}
}

func TestFileGlobSize(t *testing.T) {
	dir := t.TempDir()
	write := func(rel string, n int) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cache/a.db-wal", 100)
	write("cache/x/b.db-wal", 20)
	write("cache/x/y/c.db-wal", 3)
	write("cache/x/y/c.db", 1000)
	write("other/d.db-wal", 5000)
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	for _, tc := range []struct {
		glob string
		want int64
		err  string
	}{
		{"cache/**/*.db-wal", 123, ""},
		{"cache/*.db-wal", 100, ""},
		{"cache/*/*.db-wal", 20, ""},
		{"**/*.db-wal", 5123, ""},
		{"cache/x/y/c.db", 1000, ""},
		{"empty/*.db-wal", 0, ""},    // the dir exists: a real zero
		{"cache/gone.db-wal", 0, ""}, // a literal file that is absent: zero
		{"missing/*.db-wal", 0, "does not exist"},
		{"cache/[.db-wal", 0, "bad glob"},
	} {
		n, err := globSize(dir, tc.glob)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: err %v, want %q", tc.glob, err, tc.err)
		case tc.err == "" && (err != nil || n != tc.want):
			t.Errorf("%s = %d, %v; want %d", tc.glob, n, err, tc.want)
		}
	}
	// Through Sample: file metrics need no process.
	m := FileMetric("cache/**/*.db-wal")
	snap := Sample(context.Background(), &Target{Dir: dir}, []Metric{m, FileMetric("missing/*")})
	if r := snap.Readings[m]; r.Err != nil || r.Value != 123 || r.Unit != Bytes {
		t.Errorf("file metric = %+v, want 123 bytes", r)
	}
	if r := snap.Readings[FileMetric("missing/*")]; r.Err == nil {
		t.Errorf("missing dir = %+v, want unreadable", r)
	}
}

func TestParseMetric(t *testing.T) {
	for _, ok := range []string{"rss", "uss", "pss", "vms", "fds", "threads", "file:cache/**/*.db-wal"} {
		if _, err := ParseMetric(ok); err != nil {
			t.Errorf("ParseMetric(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "heap", "file:", "file:a/[b"} {
		if _, err := ParseMetric(bad); err == nil {
			t.Errorf("ParseMetric(%q) = nil error", bad)
		}
	}
	if FDs.Unit() != Count || USS.Unit() != Bytes || FileMetric("x").Unit() != Bytes {
		t.Error("wrong metric units")
	}
}

func BenchmarkSample(b *testing.B) {
	c := startChild(b)
	c.do(b, "grow 1024")
	target := &Target{PID: c.cmd.Process.Pid}
	ctx := context.Background()
	for b.Loop() {
		snap := Sample(ctx, target, allMetrics)
		if r := snap.Readings[USS]; r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

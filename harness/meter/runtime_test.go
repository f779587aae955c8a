package meter

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Go target is known by its build information, and its GOGC and
// GOMEMLIMIT are read from its own environment, not the meter's.
func TestDetectRuntimeGo(t *testing.T) {
	c := startChild(t, "GOGC=10")
	c.do(t, "grow 1")
	r := DetectRuntime(c.cmd.Process.Pid)
	assert.Equal(t, "go", r.Name)
	assert.True(t, strings.HasPrefix(r.Version, "go1."), r.Version)
	assert.Equal(t, []string{"GOGC=10", "GOMEMLIMIT=off"}, r.Knobs)
	assert.InDelta(t, 1.1, r.GainMin, 1e-9)
	assert.InDelta(t, 4<<20*0.1/1.1, r.Floor, 1)

	c = startChild(t, "GOGC=100", "GOMEMLIMIT=1MiB")
	c.do(t, "grow 1")
	r = DetectRuntime(c.cmd.Process.Pid)
	assert.Equal(t, []string{"GOGC=100", "GOMEMLIMIT=1MiB"}, r.Knobs)
	assert.InDelta(t, 1<<20/2.0, r.Floor, 1, "a memory limit below the floor lowers it")
	assert.Contains(t, r.String(), "GOGC=100 GOMEMLIMIT=1MiB")
	assert.NotContains(t, r.Token(), " ")
}

// A program without a known collector is native; Node.js is known by its
// executable and is lazily sized.
func TestDetectRuntimeByExecutable(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	assert.Equal(t, Native, DetectRuntime(cmd.Process.Pid))

	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the Node.js half of this test needs it")
	}
	cmd = exec.Command(node, "--max-old-space-size=64", "-e", "setTimeout(() => {}, 30000)")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var r Runtime
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if r = DetectRuntime(cmd.Process.Pid); r.Name == "node" {
			break
		}
	}
	assert.Equal(t, "node", r.Name, "waited 5s for node's /proc/PID/exe")
	assert.True(t, r.Lazy)
	assert.Equal(t, []string{"--max-old-space-size=64"}, r.Knobs)
	assert.Less(t, r.GainMin, r.GainMax)
}

// A Go floor makes a short run blind: INCONCLUSIVE with how many ops
// would see the budget, and GOGC named; a long one is GREEN.
func TestJudgeGoFloor(t *testing.T) {
	rt := goRuntime("go1.26.8", map[string]string{})
	b := MustParseBudget("2KiB/op")
	short := synth(400, 10, 0, 1, func(int) float64 { return 12 * mib })
	v := Judge(short, Options{Budget: b, Warmup: 80, Runtime: &rt})
	assert.Equal(t, "INCONCLUSIVE", string(v.Outcome), v.Reason)
	assert.Equal(t, "floor", v.LimitedBy)
	assert.True(t, v.More)
	assert.Regexp(t, `could not have seen 2KiB/op: .*A leak of 2KiB/op would not show in 400 ops of this program: a Go heap at GOGC=100 GOMEMLIMIT=off does not grow until its live data passes 2\.0 MiB; run >= \d+ ops .* set GOGC=10`, v.Reason)
	long := synth(v.NeedOps, 10, 0, 1, func(int) float64 { return 12 * mib })
	v = Judge(long, Options{Budget: b, Warmup: v.NeedOps / 5, Runtime: &rt})
	assert.Equal(t, "GREEN", string(v.Outcome), v.Reason)

	// The footprint of a Go heap is twice what it retains at GOGC=100:
	// 3 KiB/op of USS is 1.5 KiB/op retained, within budget.
	grow := synth(4000, 10, 0, 1, func(o int) float64 { return 12*mib + 3*kib*float64(o) })
	v = Judge(grow, Options{Budget: b, Warmup: 800, Runtime: &rt})
	assert.Equal(t, "GREEN", string(v.Outcome), v.Reason)
	assert.Contains(t, v.Reason, "1.5KiB/op retained")
}

// Below a Go heap's floor its footprint moves with GC timing alone, so a
// steady growth that has not passed the floor convicts nothing: 3.2 KiB/op
// of USS over 200 ops (640 KB, as a non-leaking Go server showed on a
// loaded machine) is INCONCLUSIVE, not RED. The same slope kept up past
// the floor is RED.
func TestJudgeGrowthUnderGoFloorIsNotRED(t *testing.T) {
	rt := goRuntime("go1.26.8", map[string]string{})
	b := MustParseBudget("16B/op")
	under := synth(200, 10, 0, 1, func(o int) float64 { return 6*mib + 3.2*kib*float64(o) })
	v := Judge(under, Options{Budget: b, Warmup: 40, Runtime: &rt})
	assert.Equal(t, "INCONCLUSIVE", string(v.Outcome), v.Reason)
	assert.True(t, v.More)
	assert.Contains(t, v.Reason, "has not passed it")
	past := synth(6400, 10, 0, 1, func(o int) float64 { return 6*mib + 3.2*kib*float64(o) })
	v = Judge(past, Options{Budget: b, Warmup: 1280, Runtime: &rt})
	assert.Equal(t, "RED", string(v.Outcome), v.Reason)
}

// Thinning keeps every other sample, in order.
func TestRecorderThin(t *testing.T) {
	r := NewRecorder(&Target{}, USS)
	for i := range 7 {
		r.series[0].Add(i*10, Reading{Value: float64(i)})
	}
	r.Thin()
	var ops []int
	for _, p := range r.Series()[0].Points {
		ops = append(ops, p.Ops)
	}
	assert.Equal(t, []int{0, 20, 40, 60}, ops)
	assert.Equal(t, 4, r.Len())
}

package meter

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
)

// Runtime is what the meter knows of a target's language runtime: how it
// hides or magnifies retained memory in the footprint (rss, uss, pss)
// seen from outside, and the knobs that change that.
//
// Floor is the retained memory a garbage collector's heap floor hides: a
// Go heap never shrinks below its minimum goal (4 MiB x GOGC/100), so the
// first Floor bytes of live data a leak adds move the footprint by
// nothing. Above it, the footprint grows by between GainMin and GainMax
// bytes per byte retained: a Go heap is (1+GOGC/100) times its live data,
// V8 lets its old space grow up to 4 times the live data before it
// collects it (its heap growing factor, 1.1 to 4).
type Runtime struct {
	Name    string   // go, node, python, jvm, or native (no collector known)
	Version string   // go1.26.8; "" when not known
	Knobs   []string // the settings read from the target: GOGC=100, GOMEMLIMIT=off, --max-old-space-size=…
	Floor   float64  // retained bytes a heap floor hides; 0 when none is known
	GainMin float64  // footprint bytes per retained byte, at least
	GainMax float64  // and at most
	Lazy    bool     // the heap grows lazily at start (V8, the JVM): early growth is not yet a leak
	Advice  string   // what to set in the target's environment to see smaller leaks
}

// Native is a program without a known collector: what it retains is what
// its footprint grows by (C, C++, Rust).
var Native = Runtime{Name: "native", GainMin: 1, GainMax: 1}

// String is the runtime as a verdict names it: "go1.26.8 GOGC=100
// GOMEMLIMIT=off".
func (r Runtime) String() string {
	s := r.Name
	if r.Version != "" {
		s = r.Version
	}
	if len(r.Knobs) > 0 {
		s += " " + strings.Join(r.Knobs, " ")
	}
	return s
}

// Token is String without spaces, for a LEAK_MEASURE value.
func (r Runtime) Token() string { return strings.ReplaceAll(r.String(), " ", ",") }

// gain is how the footprint relates to what is retained; 1 for metrics a
// runtime does not shape (vms, fds, files).
func (r Runtime) gains(m Metric) (lo, hi float64) {
	if (m == RSS || m == USS || m == PSS) && r.GainMin > 0 && r.GainMax >= r.GainMin {
		return r.GainMin, r.GainMax
	}
	return 1, 1
}

func (r Runtime) floor(m Metric) float64 {
	if m == RSS || m == USS || m == PSS {
		return r.Floor
	}
	return 0
}

// DetectRuntime recognises the runtime of process pid: a Go binary by its
// build information (debug/buildinfo on /proc/PID/exe), with GOGC and
// GOMEMLIMIT from /proc/PID/environ; Node.js, Python and the JVM by their
// executable's name, with their heap flags from the command line and
// environment. Anything else is Native.
func DetectRuntime(pid int) Runtime {
	// The executable is read before the command line and environment: a
	// process caught between fork and exec shows its parent's, and once the
	// executable is the new program, so are they.
	exe := procPath(pid, "exe")
	name, _ := os.Readlink(exe)
	bi, biErr := buildinfo.ReadFile(exe)
	env := readEnviron(pid)
	args := readCmdline(pid)
	if biErr == nil {
		return goRuntime(bi.GoVersion, env)
	}
	base := strings.TrimSuffix(filepath.Base(name), " (deleted)")
	switch {
	case base == "node" || base == "nodejs":
		return nodeRuntime(args, env)
	case strings.HasPrefix(base, "python"):
		return Runtime{Name: "python", Version: base, GainMin: 1, GainMax: 1,
			Advice: "CPython frees by reference count, but pymalloc keeps freed arenas: a step, then a plateau, is not a leak; PYTHONMALLOC=malloc makes the footprint follow the heap"}
	case base == "java":
		r := Runtime{Name: "jvm", GainMin: 1, GainMax: 1, Lazy: true,
			Advice: "the JVM grows its heap lazily up to -Xmx and does not give it back: set -Xms equal to -Xmx and judge a heap metric (JMX) rather than the footprint"}
		for _, a := range args {
			if strings.HasPrefix(a, "-Xmx") || strings.HasPrefix(a, "-Xms") {
				r.Knobs = append(r.Knobs, a)
			}
		}
		return r
	}
	return Native
}

// goMinHeap is the Go runtime's minimum heap goal at GOGC=100.
const goMinHeap = 4 << 20

func goRuntime(version string, env map[string]string) Runtime {
	r := Runtime{Name: "go", Version: version}
	gogc, gogcText := 100.0, "GOGC=100"
	if v, ok := env["GOGC"]; ok {
		gogcText = "GOGC=" + v
		if strings.EqualFold(v, "off") {
			gogc = -1
		} else if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			gogc = float64(n)
		}
	}
	limit := math.Inf(1)
	limitText := "GOMEMLIMIT=off"
	if v, ok := env["GOMEMLIMIT"]; ok && v != "off" {
		limitText = "GOMEMLIMIT=" + v
		if n, err := humanize.ParseBytes(strings.TrimSuffix(v, "B") + "B"); err == nil {
			limit = float64(n)
		}
	}
	r.Knobs = []string{gogcText, limitText}
	if gogc < 0 {
		// No collection until the memory limit, if any: garbage grows the
		// footprint like a leak.
		r.GainMin, r.GainMax = 1, 1
		r.Advice = "GOGC=off: nothing is collected, so garbage grows the footprint like a leak; unset GOGC"
		return r
	}
	g := 1 + gogc/100
	r.GainMin, r.GainMax = g, g
	// The live heap the minimum goal hides: goal = max(live*g, 4MiB*GOGC/100).
	r.Floor = goMinHeap * gogc / 100 / g
	if !math.IsInf(limit, 1) {
		r.Floor = math.Min(r.Floor, limit/g)
	}
	r.Advice = "set GOGC=10 in the target's environment (its heap floor is then 10 times lower)"
	return r
}

func nodeRuntime(args []string, env map[string]string) Runtime {
	r := Runtime{Name: "node", GainMin: 1.1, GainMax: 4, Lazy: true}
	flags := append(strings.Fields(env["NODE_OPTIONS"]), args...)
	for _, a := range flags {
		if strings.HasPrefix(a, "--max-old-space-size") || a == "--expose-gc" || strings.HasPrefix(a, "--max-semi-space-size") {
			r.Knobs = append(r.Knobs, a)
		}
	}
	r.Advice = "V8 sizes its heap lazily and lets its old space grow up to 4 times the live data (heap growing factor 1.1-4), so USS brackets what is retained only loosely: judge a heap metric after a forced GC (--expose-gc) or cap the heap with --max-old-space-size"
	return r
}

func readEnviron(pid int) map[string]string {
	b, err := os.ReadFile(procPath(pid, "environ"))
	env := map[string]string{}
	if err != nil {
		return env
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			env[k] = v
		}
	}
	return env
}

func readCmdline(pid int) []string {
	b, err := os.ReadFile(procPath(pid, "cmdline"))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// describeFloor says in words what a floor hides, for reasons.
func (r Runtime) describeFloor() string {
	if r.Name == "go" {
		return fmt.Sprintf("a Go heap at %s does not grow until its live data passes %s", strings.Join(r.Knobs, " "), humanize.IBytes(uint64(r.Floor)))
	}
	return fmt.Sprintf("the %s heap hides the first %s retained", r.Name, humanize.IBytes(uint64(r.Floor)))
}

package meter

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shirou/gopsutil/v4/process"

	"github.com/reproboard/reproboard/harness/backstop"
)

// Where each number comes from: the process's identity (pid and start
// time), its state and the marker scan are harness/backstop's; vms, fds and
// threads are gopsutil's; rss, uss and pss are read from
// /proc/PID/smaps_rollup, which gopsutil has no reader for. RSS is not
// gopsutil's MemoryInfo().RSS: that is statm's per-CPU batched counter,
// which can read 0 for a small process.

// MarkerEnv is the environment variable that marks the processes a section
// started, so a sampler can find its daemon without being handed a pid.
const MarkerEnv = backstop.MarkerVar

// Target is the process a sampler measures, by PID or by marker, plus the
// base directory of file: metrics. The first successful Sample pins the
// process (pid and start time); later samples of a different process at the
// same pid, or of an exited one, are unreadable, never a new baseline.
type Target struct {
	PID     int            // the process; or 0 to find it by Marker
	Marker  string         // find the one live process with REPROBOARD_SECTION=Marker
	Cmdline *regexp.Regexp // with Marker: keep only processes whose command line (first 120 bytes, as backstop.Proc.Cmd) matches
	Dir     string         // base of file: globs; "" is the working directory

	mu   sync.Mutex       // held for the process part of a sample
	proc backstop.Proc    // the pinned process; Pid 0 until pinned
	ps   *process.Process // gopsutil's handle on proc
}

// String names the target the way error messages refer to it.
func (t *Target) String() string {
	switch {
	case t.PID != 0:
		return "pid " + strconv.Itoa(t.PID)
	case t.Marker != "" && t.Cmdline != nil:
		return fmt.Sprintf("process with %s=%s and cmdline ~ %s", MarkerEnv, t.Marker, t.Cmdline)
	case t.Marker != "":
		return fmt.Sprintf("process with %s=%s", MarkerEnv, t.Marker)
	}
	return "no process"
}

// Reading is one metric's value in one sample. A metric that could not be
// read has Err set and Value NaN: it is never reported as 0.
type Reading struct {
	Value float64
	Unit  Unit
	Err   error
}

func (r Reading) String() string {
	if r.Err != nil {
		return "unreadable: " + r.Err.Error()
	}
	return r.Unit.Human(r.Value)
}

func unreadable(u Unit, err error) Reading { return Reading{Value: nan(), Unit: u, Err: err} }

// Snapshot is one sample of several metrics of a target.
type Snapshot struct {
	PID      int // the pinned process, 0 if none was found
	Time     time.Time
	Readings map[Metric]Reading
}

// Sample reads metrics of the target now. It never fails as a whole: each
// metric that cannot be read carries its own error.
func Sample(ctx context.Context, t *Target, metrics []Metric) Snapshot {
	snap := Snapshot{Time: time.Now(), Readings: make(map[Metric]Reading, len(metrics))}
	var procMetrics []Metric
	for _, m := range metrics {
		g, ok := m.glob()
		if !ok {
			procMetrics = append(procMetrics, m)
			continue
		}
		if err := ctx.Err(); err != nil {
			snap.Readings[m] = unreadable(m.Unit(), err)
			continue
		}
		if n, err := globSize(t.Dir, g); err != nil {
			snap.Readings[m] = unreadable(m.Unit(), err)
		} else {
			snap.Readings[m] = Reading{Value: float64(n), Unit: m.Unit()}
		}
	}
	if len(procMetrics) > 0 {
		t.sample(ctx, &snap, procMetrics)
	}
	return snap
}

// sample reads the process metrics, then checks the process is still the
// pinned one and has not exited. That check after the reads is what makes
// them values: an exited process can leave files that read as zeros (a
// zombie's statm and fd directory), and a process that is alive with the
// same start time afterwards was alive throughout. A dead process's reads
// fail or are overwritten, so a pinned target needs no check before.
func (t *Target) sample(ctx context.Context, snap *Snapshot, metrics []Metric) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var procErr error
	if t.proc.Pid == 0 {
		procErr = t.pin()
	}
	snap.PID = t.proc.Pid
	var (
		sm    *smapsRollup
		smErr error
	)
	for _, m := range metrics {
		u := m.Unit()
		if err := ctx.Err(); err != nil {
			snap.Readings[m] = unreadable(u, err)
			continue
		}
		if procErr != nil {
			snap.Readings[m] = unreadable(u, procErr)
			continue
		}
		var v float64
		var err error
		switch m {
		case VMS:
			var mi *process.MemoryInfoStat
			if mi, err = t.ps.MemoryInfo(); err == nil {
				v = float64(mi.VMS)
			}
		case Threads:
			var n int32
			n, err = t.ps.NumThreads()
			v = float64(n)
		case FDs:
			var n int32
			n, err = t.ps.NumFDs()
			v = float64(n)
		case RSS, USS, PSS:
			if sm == nil && smErr == nil {
				sm, smErr = readSmapsRollup(t.proc.Pid)
			}
			switch {
			case smErr != nil:
				err = smErr
			case m == RSS:
				v = float64(sm.rss)
			case m == USS:
				v = float64(sm.privateClean + sm.privateDirty)
			default:
				v = float64(sm.pss)
			}
		case V8Heap:
			v, err = readV8Heap(t.proc.Pid, readEnviron(t.proc.Pid))
		default:
			err = fmt.Errorf("unknown metric %q", m)
		}
		if err != nil {
			if m == VMS || m == Threads || m == FDs {
				err = fmt.Errorf("process %d: %s: %w", t.proc.Pid, m, err)
			}
			snap.Readings[m] = unreadable(u, err)
		} else {
			snap.Readings[m] = Reading{Value: v, Unit: u}
		}
	}
	if procErr != nil {
		return
	}
	if err := check(t.proc); err != nil {
		for _, m := range metrics {
			snap.Readings[m] = unreadable(m.Unit(), err)
		}
	}
}

// pin finds the process, by pid or marker, and records its identity.
func (t *Target) pin() error {
	var p backstop.Proc
	switch {
	case t.PID != 0:
		var err error
		if p, err = backstop.Identify(t.PID); err != nil {
			if errors.Is(err, backstop.ErrGone) {
				return fmt.Errorf("process %d is not running", t.PID)
			}
			return err
		}
	case t.Marker != "":
		var err error
		if p, err = t.findMarked(); err != nil {
			return err
		}
	default:
		return errors.New("target names no process: set PID or Marker")
	}
	if err := check(p); err != nil {
		return err
	}
	ps, err := process.NewProcess(int32(p.Pid))
	if err != nil {
		if errors.Is(err, process.ErrorProcessNotRunning) {
			return fmt.Errorf("process %d is not running", p.Pid)
		}
		return fmt.Errorf("process %d: %w", p.Pid, err)
	}
	t.proc, t.ps = p, ps
	return nil
}

// check says why p can no longer be measured: gone, replaced by a later
// process at the same pid, or exited and not yet reaped.
func check(p backstop.Proc) error {
	start, state, err := backstop.State(p.Pid)
	switch {
	case errors.Is(err, backstop.ErrGone):
		return fmt.Errorf("process %d is not running", p.Pid)
	case err != nil:
		return fmt.Errorf("process %d: %w", p.Pid, err)
	case start != p.Start:
		return fmt.Errorf("process %d was replaced: start time changed from %d to %d clock ticks (pid reused after the measured process exited)", p.Pid, p.Start, start)
	case backstop.Finished(state):
		return fmt.Errorf("process %s has exited (state %c, not yet reaped)", describe(p), state)
	}
	return nil
}

// describe is "PID (command line)", or the pid alone if the command line
// could not be read.
func describe(p backstop.Proc) string {
	if p.Cmd == "" {
		return strconv.Itoa(p.Pid)
	}
	return fmt.Sprintf("%d (%s)", p.Pid, p.Cmd)
}

// findMarked finds the one live process carrying MarkerEnv=t.Marker whose
// command line matches t.Cmdline. backstop skips the sampling process
// itself: children inherit the section's environment, so the test binary
// would otherwise always match too.
func (t *Target) findMarked() (backstop.Proc, error) {
	where := fmt.Sprintf("%s=%s", MarkerEnv, t.Marker)
	procs, err := backstop.WithMarker(t.Marker)
	if err != nil {
		return backstop.Proc{}, fmt.Errorf("looking for a process with %s: %w", where, err)
	}
	var matched []backstop.Proc
	var filtered []string
	for _, p := range procs {
		if t.Cmdline != nil && !t.Cmdline.MatchString(p.Cmd) {
			filtered = append(filtered, describe(p))
			continue
		}
		matched = append(matched, p)
	}
	if t.Cmdline != nil {
		where += fmt.Sprintf(" with cmdline ~ %s", t.Cmdline)
	}
	switch len(matched) {
	case 1:
		return matched[0], nil
	case 0:
		msg := "no process has " + where
		if len(filtered) > 0 {
			msg += "; marked but cmdline did not match: " + strings.Join(filtered, ", ")
		}
		return backstop.Proc{}, errors.New(msg)
	}
	descs := make([]string, len(matched))
	for i, p := range matched {
		descs[i] = describe(p)
	}
	return backstop.Proc{}, fmt.Errorf("%d processes have %s, want exactly one (narrow it with a cmdline regexp): %s", len(matched), where, strings.Join(descs, ", "))
}

type smapsRollup struct{ rss, pss, privateClean, privateDirty int64 }

// readSmapsRollup is ours because gopsutil has no smaps_rollup reader.
func readSmapsRollup(pid int) (*smapsRollup, error) {
	b, err := os.ReadFile(procPath(pid, "smaps_rollup"))
	if err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil, fmt.Errorf("process %d has exited", pid)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("process %d: no smaps_rollup (process gone, or kernel older than 4.14)", pid)
		}
		return nil, fmt.Errorf("process %d: %v", pid, err)
	}
	sm, err := parseSmapsRollup(string(b))
	if err != nil {
		return nil, fmt.Errorf("process %d: %v", pid, err)
	}
	return sm, nil
}

// parseSmapsRollup reads the "Key: N kB" lines of smaps_rollup. A file
// without Pss or the Private lines (a kernel thread, an exiting process) is
// an error rather than zeros.
func parseSmapsRollup(s string) (*smapsRollup, error) {
	var sm smapsRollup
	seen := 0
	for line := range strings.Lines(s) {
		key, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch key {
		case "Rss":
			dst = &sm.rss
		case "Pss":
			dst = &sm.pss
		case "Private_Clean":
			dst = &sm.privateClean
		case "Private_Dirty":
			dst = &sm.privateDirty
		default:
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return nil, fmt.Errorf("smaps_rollup: line %q: want \"%s: N kB\"", strings.TrimSpace(line), key)
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("smaps_rollup: line %q: %v", strings.TrimSpace(line), err)
		}
		*dst = v * 1024
		seen++
	}
	if seen < 4 {
		return nil, errors.New("smaps_rollup: missing Rss, Pss, Private_Clean or Private_Dirty (empty for exited processes and kernel threads)")
	}
	return &sm, nil
}

func procPath(pid int, name string) string {
	return "/proc/" + strconv.Itoa(pid) + "/" + name
}

// PinnedPID is the pid of the process the first successful sample pinned,
// or 0 before one.
func (t *Target) PinnedPID() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.proc.Pid
}

package meter

import (
	"bytes"
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
)

// Sampling reads /proc directly. gopsutil's process package would need
// go.sum entries the module does not carry yet, and every number we need is
// one small file away: stat (vms, threads, start time), smaps_rollup (rss,
// uss, pss) and the fd directory. RSS comes from smaps_rollup, not stat:
// stat's is a per-CPU batched counter that can read 0 for a small process.

// MarkerEnv is the environment variable that marks the processes a section
// started, so a sampler can find its daemon without being handed a pid.
const MarkerEnv = "REPROBOARD_SECTION"

// Target is the process a sampler measures, by PID or by marker, plus the
// base directory of file: metrics. The first successful Sample pins the
// process (pid and start time); later samples of a different process at the
// same pid, or of an exited one, are unreadable, never a new baseline.
type Target struct {
	PID     int            // the process; or 0 to find it by Marker
	Marker  string         // find the one process with REPROBOARD_SECTION=Marker
	Cmdline *regexp.Regexp // with Marker: keep only processes whose cmdline matches
	Dir     string         // base of file: globs; "" is the working directory

	mu     sync.Mutex
	pinned int
	start  uint64 // clock ticks after boot, field 22 of /proc/PID/stat
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
	var (
		st      *procStat
		procErr error
		sm      *smapsRollup
		smErr   error
		resolve sync.Once
		rollup  sync.Once
	)
	proc := func() (*procStat, error) {
		resolve.Do(func() { snap.PID, st, procErr = t.resolve() })
		return st, procErr
	}
	for _, m := range metrics {
		u := m.Unit()
		if err := ctx.Err(); err != nil {
			snap.Readings[m] = unreadable(u, err)
			continue
		}
		if g, ok := m.glob(); ok {
			n, err := globSize(t.Dir, g)
			if err != nil {
				snap.Readings[m] = unreadable(u, err)
			} else {
				snap.Readings[m] = Reading{Value: float64(n), Unit: u}
			}
			continue
		}
		st, err := proc()
		if err != nil {
			snap.Readings[m] = unreadable(u, err)
			continue
		}
		var v float64
		switch m {
		case VMS:
			v = float64(st.vsize)
		case Threads:
			v = float64(st.threads)
		case RSS, USS, PSS:
			rollup.Do(func() { sm, smErr = readSmapsRollup(snap.PID) })
			if smErr != nil {
				err = smErr
			} else if m == RSS {
				v = float64(sm.rss)
			} else if m == USS {
				v = float64(sm.privateClean + sm.privateDirty)
			} else {
				v = float64(sm.pss)
			}
		case FDs:
			var n int
			n, err = countFDs(snap.PID)
			v = float64(n)
		default:
			err = fmt.Errorf("unknown metric %q", m)
		}
		if err != nil {
			snap.Readings[m] = unreadable(u, err)
		} else {
			snap.Readings[m] = Reading{Value: v, Unit: u}
		}
	}
	return snap
}

// resolve finds and pins the process on first use, and afterwards checks it
// is still the same one.
func (t *Target) resolve() (int, *procStat, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pinned == 0 {
		pid := t.PID
		if pid == 0 {
			if t.Marker == "" {
				return 0, nil, errors.New("target names no process: set PID or Marker")
			}
			var err error
			if pid, err = findMarked(t.Marker, t.Cmdline); err != nil {
				return 0, nil, err
			}
		}
		st, err := readStat(pid)
		if err != nil {
			return 0, nil, err
		}
		if err := st.alive(pid); err != nil {
			return 0, nil, err
		}
		t.pinned, t.start = pid, st.start
		return pid, st, nil
	}
	pid := t.pinned
	st, err := readStat(pid)
	if err != nil {
		return pid, nil, err
	}
	if st.start != t.start {
		return pid, nil, fmt.Errorf("process %d was replaced: start time changed from %d to %d clock ticks (pid reused after the measured process exited)", pid, t.start, st.start)
	}
	if err := st.alive(pid); err != nil {
		return pid, nil, err
	}
	return pid, st, nil
}

// procStat holds the fields of /proc/PID/stat we use.
type procStat struct {
	comm    string
	state   byte
	threads int64
	start   uint64
	vsize   uint64
}

func (s *procStat) alive(pid int) error {
	if s.state == 'Z' || s.state == 'X' {
		return fmt.Errorf("process %d (%s) has exited (state %c, not yet reaped)", pid, s.comm, s.state)
	}
	return nil
}

func readStat(pid int) (*procStat, error) {
	b, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("process %d is not running", pid)
		}
		return nil, fmt.Errorf("process %d: %v", pid, err)
	}
	st, err := parseStat(string(b))
	if err != nil {
		return nil, fmt.Errorf("process %d: %v", pid, err)
	}
	return st, nil
}

// parseStat reads /proc/PID/stat. The command name may itself contain
// spaces and parentheses, so fields are counted after the last ')'.
func parseStat(s string) (*procStat, error) {
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return nil, fmt.Errorf("stat: no (comm) in %.60q", s)
	}
	f := strings.Fields(s[closing+1:])
	// f[0] is field 3 (state), so field N is f[N-3].
	const need = 23 - 3 + 1
	if len(f) < need {
		return nil, fmt.Errorf("stat: %d fields after comm, want at least %d", len(f), need)
	}
	st := &procStat{comm: s[open+1 : closing], state: f[0][0]}
	var err error
	num := func(field int) int64 {
		v, e := strconv.ParseInt(f[field-3], 10, 64)
		if e != nil && err == nil {
			err = fmt.Errorf("stat field %d %q: %v", field, f[field-3], e)
		}
		return v
	}
	st.threads = num(20)
	st.start = uint64(num(22))
	st.vsize = uint64(num(23))
	if err != nil {
		return nil, err
	}
	return st, nil
}

type smapsRollup struct{ rss, pss, privateClean, privateDirty int64 }

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

func countFDs(pid int) (int, error) {
	d, err := os.Open(procPath(pid, "fd"))
	if err != nil {
		return 0, fmt.Errorf("process %d: open fds: %v", pid, err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, fmt.Errorf("process %d: open fds: %v", pid, err)
	}
	return len(names), nil
}

func procPath(pid int, name string) string {
	return "/proc/" + strconv.Itoa(pid) + "/" + name
}

// findMarked scans /proc for the one process carrying MarkerEnv=marker.
// The sampling process itself is skipped: children inherit the section's
// environment, so the test binary would otherwise always match too.
func findMarked(marker string, cmdline *regexp.Regexp) (int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return 0, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return 0, err
	}
	want := []byte("\x00" + MarkerEnv + "=" + marker + "\x00")
	self := os.Getpid()
	var matched, filtered []string
	pid := 0
	for _, name := range names {
		p, err := strconv.Atoi(name)
		if err != nil || p == self {
			continue
		}
		env, err := os.ReadFile(procPath(p, "environ"))
		if err != nil { // gone, or another user's: not ours to measure
			continue
		}
		env = append(append([]byte{0}, env...), 0)
		if !bytes.Contains(env, want) {
			continue
		}
		cl := readCmdline(p)
		desc := fmt.Sprintf("%d (%s)", p, cl)
		if cmdline != nil && !cmdline.MatchString(cl) {
			filtered = append(filtered, desc)
			continue
		}
		matched = append(matched, desc)
		pid = p
	}
	where := fmt.Sprintf("%s=%s", MarkerEnv, marker)
	if cmdline != nil {
		where += fmt.Sprintf(" with cmdline ~ %s", cmdline)
	}
	switch len(matched) {
	case 1:
		return pid, nil
	case 0:
		msg := "no process has " + where
		if len(filtered) > 0 {
			msg += "; marked but cmdline did not match: " + strings.Join(filtered, ", ")
		}
		return 0, errors.New(msg)
	}
	return 0, fmt.Errorf("%d processes have %s, want exactly one (narrow it with a cmdline regexp): %s", len(matched), where, strings.Join(matched, ", "))
}

func readCmdline(pid int) string {
	b, err := os.ReadFile(procPath(pid, "cmdline"))
	if err != nil {
		return "?"
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

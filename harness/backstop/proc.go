// Package backstop guarantees that no process a section started outlives
// it: processes are identified by pid and start time (pids are reused),
// found again through the section's marker variable however they detached,
// and stopped with SIGTERM, a short grace, then SIGKILL.
package backstop

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// MarkerVar is inherited by every process a section starts; its value is
// "<run>/<section>".
const MarkerVar = "REPROBOARD_SECTION"

// SupervisorVar is set in the environment of a section's supervisor
// processes (and removed from what they run). A marker search skips them:
// a supervisor ends by itself once its tree is empty.
const SupervisorVar = "REPROBOARD_SUPERVISE"

// Proc identifies one process: a pid alone is not an identity, because the
// kernel reuses pids; pid plus start time (clock ticks since boot) is.
type Proc struct {
	Pid   int
	Start uint64
	Cmd   string // command line, for reports
}

func (p Proc) String() string {
	if p.Cmd == "" {
		return fmt.Sprintf("pid %d", p.Pid)
	}
	return fmt.Sprintf("pid %d (%s)", p.Pid, p.Cmd)
}

// ErrGone says the process does not exist (any more).
var ErrGone = errors.New("no such process")

// stat is the part of /proc/PID/stat the backstop needs.
type stat struct {
	state byte
	ppid  int
	start uint64
}

// readStat parses /proc/PID/stat. The command name (field 2) may hold
// spaces and parentheses, so fields are counted after the last ')'.
func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return stat{}, ErrGone
		}
		return stat{}, err
	}
	return parseStat(b)
}

func parseStat(b []byte) (stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("malformed stat: %q", b)
	}
	fields := strings.Fields(string(b[i+1:]))
	// After ')' come field 3 (state) onwards; start time is field 22.
	if len(fields) < 20 {
		return stat{}, fmt.Errorf("malformed stat: %d fields after the command", len(fields))
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return stat{}, fmt.Errorf("malformed stat ppid %q", fields[1])
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return stat{}, fmt.Errorf("malformed stat starttime %q", fields[19])
	}
	st := stat{state: fields[0][0], ppid: ppid, start: start}
	// A process in do_exit has PF_EXITING (field 9, flags) set before its
	// memory and files are torn down, while its state may still read R or
	// D: what is left to read of it then reads as zeros. Count it as dead.
	if flags, err := strconv.ParseUint(fields[6], 10, 64); err == nil && flags&pfExiting != 0 && st.state != 'Z' {
		st.state = 'X'
	}
	return st, nil
}

// pfExiting is the kernel's PF_EXITING task flag.
const pfExiting = 0x4

// StartTime returns the start time of pid (field 22 of /proc/PID/stat).
func StartTime(pid int) (uint64, error) {
	st, err := readStat(pid)
	return st.start, err
}

// State reads pid's start time and state letter (R running, S sleeping,
// D disk wait, T stopped, Z zombie, X dead, ...) in one read of
// /proc/PID/stat. err is ErrGone when pid does not exist.
func State(pid int) (start uint64, state byte, err error) {
	st, err := readStat(pid)
	return st.start, st.state, err
}

// Finished reports whether a state letter from State is a process that
// has ended: a zombie (Z) or dead or exiting (X), of which only the exit
// status is, or soon will be, left.
func Finished(state byte) bool { return state == 'Z' || state == 'X' }

// Identify records pid's identity now.
func Identify(pid int) (Proc, error) {
	st, err := readStat(pid)
	if err != nil {
		return Proc{}, fmt.Errorf("identify pid %d: %w", pid, err)
	}
	return Proc{Pid: pid, Start: st.start, Cmd: cmdline(pid)}, nil
}

// Alive reports whether p still runs: same pid, same start time, and not a
// zombie (a zombie has finished; only its exit status is left).
func (p Proc) Alive() bool {
	st, err := readStat(p.Pid)
	if err != nil {
		return false
	}
	return st.start == p.Start && !Finished(st.state)
}

// Same reports whether pid still names the process p identified.
func (p Proc) Same() bool {
	st, err := readStat(p.Pid)
	return err == nil && st.start == p.Start
}

func cmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	s := strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// pids lists the numeric entries of /proc.
func pids() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(entries))
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// environOf returns the reproboard variables (MarkerVar, RunLockVar) of
// pid's initial environment.
func environOf(pid int) map[string]string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, kv := range bytes.Split(b, []byte{0}) {
		for _, k := range []string{MarkerVar, RunLockVar, SupervisorVar} {
			if v, ok := bytes.CutPrefix(kv, []byte(k+"=")); ok {
				out[k] = string(v)
			}
		}
	}
	return out
}

// markerOf returns the value of MarkerVar in pid's initial environment.
func markerOf(pid int) (string, bool) {
	m, ok := environOf(pid)[MarkerVar]
	return m, ok
}

// Marked lists the live processes whose marker satisfies match, skipping
// this process (the harness may carry a marker of its own).
func Marked(match func(marker string) bool) ([]Proc, error) {
	all, err := pids()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []Proc
	for _, pid := range all {
		if pid == self {
			continue
		}
		env := environOf(pid)
		m, ok := env[MarkerVar]
		if _, sup := env[SupervisorVar]; sup || !ok || !match(m) {
			continue
		}
		p, err := Identify(pid)
		if err != nil || !p.Alive() {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// WithMarker lists the live processes carrying exactly this marker value.
func WithMarker(marker string) ([]Proc, error) {
	return Marked(func(m string) bool { return m == marker })
}

package backstop

import (
	"fmt"
	"sort"
	"strings"
	"syscall"
	"time"
)

// DefaultGrace is how long SIGTERM gets before SIGKILL.
const DefaultGrace = 2 * time.Second

// killWait bounds the wait for SIGKILL to take effect.
const killWait = 3 * time.Second

// Report says what a stop had to do.
type Report struct {
	Terminated []Proc // ended after SIGTERM
	Killed     []Proc // needed SIGKILL
	Survivors  []Proc // still alive after SIGKILL: a failure
}

// Stopped lists every process the backstop had to end.
func (r Report) Stopped() []Proc { return append(append([]Proc(nil), r.Terminated...), r.Killed...) }

// Empty is true when nothing was left running.
func (r Report) Empty() bool {
	return len(r.Terminated)+len(r.Killed)+len(r.Survivors) == 0
}

func (r Report) String() string {
	var b strings.Builder
	list := func(what string, ps []Proc) {
		if len(ps) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s:", what)
		for _, p := range ps {
			fmt.Fprintf(&b, " %s;", p)
		}
		b.WriteString("\n")
	}
	list("backstop stopped (SIGTERM)", r.Terminated)
	list("backstop killed (SIGKILL)", r.Killed)
	list("backstop could NOT stop", r.Survivors)
	return strings.TrimSuffix(b.String(), "\n")
}

// Stop ends every live process of procs: SIGTERM, up to grace for them to
// exit, then SIGKILL. A pid whose start time no longer matches is a
// different process and is never signalled. Processes are signalled in
// reverse start order, children before the parents that might restart them.
func Stop(procs []Proc, grace time.Duration) Report {
	if grace <= 0 {
		grace = DefaultGrace
	}
	var live []Proc
	seen := map[int]bool{}
	for _, p := range procs {
		if !seen[p.Pid] && p.Alive() {
			seen[p.Pid] = true
			if c := cmdline(p.Pid); c != "" {
				p.Cmd = c // what it runs now: it may have exec'd since it was recorded
			}
			live = append(live, p)
		}
	}
	var r Report
	if len(live) == 0 {
		return r
	}
	sort.Slice(live, func(i, j int) bool { return live[i].Start > live[j].Start })
	for _, p := range live {
		signal(p, syscall.SIGTERM)
	}
	left := waitGone(live, grace)
	gone := map[int]bool{}
	for _, p := range live {
		gone[p.Pid] = true
	}
	for _, p := range left {
		gone[p.Pid] = false
	}
	for _, p := range live {
		if gone[p.Pid] {
			r.Terminated = append(r.Terminated, p)
		}
	}
	for _, p := range left {
		signal(p, syscall.SIGKILL)
	}
	r.Survivors = waitGone(left, killWait)
	surv := map[int]bool{}
	for _, p := range r.Survivors {
		surv[p.Pid] = true
	}
	for _, p := range left {
		if !surv[p.Pid] {
			r.Killed = append(r.Killed, p)
		}
	}
	return r
}

// signal sends sig to p only if pid still names p; the check and the kill
// race only by the time between two syscalls, and the pid cannot be reused
// before p is reaped, which for our children happens no earlier than Reap.
func signal(p Proc, sig syscall.Signal) {
	if p.Same() {
		_ = syscall.Kill(p.Pid, sig)
	}
}

// Signal sends sig to p after checking its start time.
func Signal(p Proc, sig syscall.Signal) error {
	if !p.Same() {
		return fmt.Errorf("%s: %w (or its pid now names another process)", p, ErrGone)
	}
	return syscall.Kill(p.Pid, sig)
}

// waitGone polls until no process of ps is alive or d passes; it returns
// those still alive. It reaps nothing: a zombie counts as ended, and its
// exit status belongs to its parent (a section's exec.Cmd, or the
// supervisor of the section that started it), never to the backstop.
func waitGone(ps []Proc, d time.Duration) []Proc {
	deadline := time.Now().Add(d)
	for {
		var left []Proc
		for _, p := range ps {
			if p.Alive() {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Descendants lists the live descendants of the roots (not the roots
// themselves), found by parent pid in /proc. Under a child subreaper every
// orphan of its tree is reparented to it, so this is the whole tree.
func Descendants(roots []Proc) []Proc {
	all, err := pids()
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, pid := range all {
		if st, err := readStat(pid); err == nil {
			children[st.ppid] = append(children[st.ppid], pid)
		}
	}
	var out []Proc
	seen := map[int]bool{}
	var walk func(pid int)
	walk = func(pid int) {
		for _, c := range children[pid] {
			if seen[c] {
				continue
			}
			seen[c] = true
			if p, err := Identify(c); err == nil && p.Alive() {
				out = append(out, p)
			}
			walk(c)
		}
	}
	for _, r := range roots {
		if r.Same() {
			walk(r.Pid)
		}
	}
	return out
}

package backstop

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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

// waitGone polls until no process of ps is alive or d passes, reaping our
// own zombies on the way; it returns those still alive.
func waitGone(ps []Proc, d time.Duration) []Proc {
	deadline := time.Now().Add(d)
	for {
		ReapOrphans()
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

var (
	subreaperOnce sync.Once
	subreaperErr  error
	owned         sync.Map // pid -> true: children an exec.Cmd waits for
)

// BecomeSubreaper makes this process the child subreaper of its
// descendants, so a daemon that double-forks away from a section's command
// is reparented here instead of to init and can still be found. Not every
// kernel or sandbox allows it; the marker search works regardless.
func BecomeSubreaper() error {
	subreaperOnce.Do(func() {
		subreaperErr = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	})
	return subreaperErr
}

// Own tells ReapOrphans that an exec.Cmd will wait for pid; Disown undoes it.
func Own(pid int)    { owned.Store(pid, true) }
func Disown(pid int) { owned.Delete(pid) }

// ReapOrphans collects the exit status of zombie children of this process
// that no exec.Cmd waits for: orphans reparented here as subreaper. Only
// those pids are waited for, never -1, so no exec.Cmd loses its status.
//
// A child started by code that does not call Own (testscript's own exec,
// or an exec.Cmd between Start and Own) is a zombie only until its Wait
// collects it, which is at once; an orphan stays one. So a zombie is
// reaped only once it has stayed one for orphanAge: a fresh zombie may be
// some exec.Cmd's, and taking its status would fail that Wait with ECHILD.
func ReapOrphans() int {
	self := os.Getpid()
	all, err := pids()
	if err != nil {
		return 0
	}
	now := time.Now()
	n := 0
	for _, pid := range all {
		if _, mine := owned.Load(pid); mine {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.ppid != self || st.state != 'Z' {
			continue
		}
		key := zombieKey{pid, st.start}
		first, seen := zombies.LoadOrStore(key, now)
		if !seen || now.Sub(first.(time.Time)) < orphanAge {
			continue
		}
		var ws unix.WaitStatus
		if got, _ := unix.Wait4(pid, &ws, unix.WNOHANG, nil); got == pid {
			n++
		}
		zombies.Delete(key)
	}
	// Forget zombies that are gone (collected by their own Wait).
	zombies.Range(func(k, _ any) bool {
		if st, err := readStat(k.(zombieKey).pid); err != nil || st.start != k.(zombieKey).start || st.state != 'Z' {
			zombies.Delete(k)
		}
		return true
	})
	return n
}

// orphanAge is how long a child must stay a zombie before ReapOrphans
// takes it for an orphan.
const orphanAge = time.Second

type zombieKey struct {
	pid   int
	start uint64
}

// zombies holds when each unowned zombie child was first seen.
var zombies sync.Map

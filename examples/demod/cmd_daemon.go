package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/reproboard/reproboard/examples/demod/internal/config"
	"github.com/reproboard/reproboard/examples/demod/internal/daemon"
	"github.com/reproboard/reproboard/examples/demod/internal/logx"
	"github.com/reproboard/reproboard/examples/demod/internal/rendezvous"
	"github.com/reproboard/reproboard/examples/demod/internal/wire"
)

const daemonUsage = "usage: demod daemon <start|stop|status> [--port=N]"

const portError = "error: --port requires a value between 1 and 65535"

// Client-side waits of `daemon start` and `daemon stop`. startReplyWait
// outlasts the daemon's 3 s settings-writer budget with room to spare.
const (
	startReplyWait    = 15 * time.Second
	writerGivesUpWait = 1 * time.Second
	stopExitWait      = 10 * time.Second
)

// parseDaemon checks `demod daemon ...` arguments before anything runs.
func parseDaemon(args []string, stderr io.Writer) (func(*app) int, bool) {
	if len(args) == 0 {
		fmt.Fprintln(stderr, daemonUsage)
		return nil, false
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "start":
		port, ok := parsePort(rest, stderr)
		if !ok {
			return nil, false
		}
		return func(a *app) int { return a.daemonStart(port) }, true
	case "stop", "status":
		if len(rest) > 0 {
			fmt.Fprintf(stderr, "error: unknown daemon option: %s\n%s\n", rest[0], daemonUsage)
			return nil, false
		}
		if sub == "stop" {
			return (*app).daemonStop, true
		}
		return (*app).daemonStatus, true
	case "run-internal":
		// Hidden: the detached daemon process itself, spawned by a client.
		mode := daemon.Ephemeral
		for _, arg := range rest {
			switch arg {
			case "--mode=" + daemon.Ephemeral:
				mode = daemon.Ephemeral
			case "--mode=" + daemon.SessionManaged:
				mode = daemon.SessionManaged
			case "--mode=" + daemon.Permanent:
				mode = daemon.Permanent
			default:
				fmt.Fprintf(stderr, "error: unknown daemon option: %s\n", arg)
				return nil, false
			}
		}
		return func(a *app) int { return a.daemonRun(mode) }, true
	}
	fmt.Fprintf(stderr, "error: unknown daemon option: %s\n%s\n", sub, daemonUsage)
	return nil, false
}

// parsePort accepts --port=N or --port N; 0 means no UI port was given.
func parsePort(args []string, stderr io.Writer) (int, bool) {
	port := 0
	for i := 0; i < len(args); i++ {
		arg := args[i]
		var val string
		switch {
		case strings.HasPrefix(arg, "--port="):
			val = strings.TrimPrefix(arg, "--port=")
		case arg == "--port":
			if i+1 < len(args) {
				i++
				val = args[i]
			}
		default:
			fmt.Fprintf(stderr, "error: unknown daemon option: %s\n%s\n", arg, daemonUsage)
			return 0, false
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > 65535 {
			fmt.Fprintln(stderr, portError)
			return 0, false
		}
		port = n
	}
	return port, true
}

func (a *app) daemonStatus() int {
	st, err := rendezvous.Status(a.paths)
	if err != nil {
		if pid, mode, ok := a.staleClaim(); ok {
			fmt.Fprintf(a.stdout, "daemon: active (%s)\n  pid: %d\n  build: demod %s\n  committed clients: 0\n", mode, pid, version)
			return 0
		}
		rendezvous.ClearStale(a.paths)
		fmt.Fprintln(a.stdout, "daemon: not running")
		return 1
	}
	// The build line stands where the real program prints its own: guards
	// must accept lines between the pid and the client count.
	fmt.Fprintf(a.stdout, "daemon: active (%s)\n  pid: %d\n  build: demod %s\n  committed clients: %d\n", st.Mode, st.PID, version, len(st.Clients))
	return 0
}

// staleClaim is the stale-state test breakage: believe the pid file of a
// daemon that no longer answers.
func (a *app) staleClaim() (int, string, bool) {
	if !a.env.Broken("stale-state") {
		return 0, "", false
	}
	return rendezvous.ReadPIDFile(a.paths)
}

func (a *app) daemonStop() int {
	if _, err := rendezvous.Status(a.paths); err != nil {
		rendezvous.ClearStale(a.paths)
		fmt.Fprintln(a.stdout, "daemon: not running (nothing to stop)")
		return 0
	}
	resp, err := a.once(wire.Request{Op: wire.OpStop}, 10*time.Second)
	if errors.Is(err, wire.ErrNoAnswer) {
		fmt.Fprintln(a.stdout, "daemon: not running (nothing to stop)")
		return 0
	}
	if err != nil {
		return a.fail("daemon stop: %v", err)
	}
	if resp.Code == wire.CodeRefused {
		fmt.Fprintf(a.stdout, "daemon: NOT stopped — %d committed client(s) still use it.\n", len(resp.Clients))
		for _, pid := range resp.Clients {
			fmt.Fprintf(a.stdout, "- pid %d\n", pid)
		}
		return 1
	}
	if !resp.OK {
		return a.fail("daemon stop: %s", resp.Error)
	}
	fmt.Fprintf(a.stdout, "daemon: stopping (pid %d)\n", resp.PID)
	a.waitGone(resp.PID)
	return 0
}

// waitGone waits (bounded) until the daemon has released its lock and its
// process has exited, so the next command sees it gone; a slow exit is
// reported, not fatal.
func (a *app) waitGone(pid int) {
	deadline := time.Now().Add(stopExitWait)
	for rendezvous.LockHeld(a.paths) || processRuns(pid) {
		if time.Now().After(deadline) {
			fmt.Fprintf(a.stderr, "warning: daemon pid %d still holds %s after %s\n", pid, a.paths.Lock, stopExitWait)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processRuns reports whether pid is a live process: neither gone nor a
// zombie waiting for its parent.
func processRuns(pid int) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	// The state follows the command name, which is in parentheses.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z' && stat[i+2] != 'X'
	}
	return true
}

func (a *app) daemonStart(port int) int {
	// The daemon reports bad caps in its log; the user starting it should
	// see them too, once.
	config.Load(os.Getenv, config.NewWarner(func(m string) { fmt.Fprintln(a.stderr, m) }))
	if _, err := rendezvous.Status(a.paths); err != nil {
		if pid, mode, ok := a.staleClaim(); ok {
			fmt.Fprintf(a.stdout, "daemon: already active (%s, pid %d)\n", mode, pid)
			return 0
		}
	}
	wait := startReplyWait
	if a.env.Broken("writer-gives-up") {
		wait = writerGivesUpWait
	}
	var last error
	for range rendezvousAttempts {
		_, spawned, err := a.ensure(daemon.Permanent)
		if err != nil {
			return a.fail("%v", err)
		}
		if !spawned && a.env.Broken("start-new-pid") {
			a.restart()
			continue
		}
		resp, err := a.once(wire.Request{Op: wire.OpStart, Port: port}, wait)
		if retriable(err) {
			last = err
			continue
		}
		if err != nil {
			return a.fail("daemon start: %v", err)
		}
		if !resp.OK {
			return a.fail("daemon start: %s", resp.Error)
		}
		if resp.Already {
			fmt.Fprintf(a.stdout, "daemon: already active (permanent, pid %d)\n", resp.PID)
		} else {
			// A second line, as the real program prints one: guards must
			// not pin the output to a single line.
			fmt.Fprintf(a.stdout, "daemon: started (permanent, pid %d)\n  log: %s\n", resp.PID, a.logPath())
		}
		return 0
	}
	return a.fail("daemon start: the daemon went away %d times in a row; last error: %v", rendezvousAttempts, last)
}

// restart is the start-new-pid test breakage: stop whatever runs so the
// next rendezvous spawns a new daemon.
func (a *app) restart() {
	resp, err := a.once(wire.Request{Op: wire.OpStop}, 10*time.Second)
	if err == nil {
		a.waitGone(resp.PID)
	}
	a.env.Break = "" // once
}

// daemonRun is the detached daemon process.
func (a *app) daemonRun(mode string) int {
	if err := os.MkdirAll(a.env.CacheDir, 0o700); err != nil {
		return a.fail("DEMOD_CACHE_DIR %s: %v", a.env.CacheDir, err)
	}
	log, err := logx.Open(a.logPath())
	if err != nil {
		return a.fail("opening the daemon log: %v", err)
	}
	defer log.Close()
	// Re-read the caps with a warner: the daemon owns them and says once,
	// in its log, which bad values it replaced.
	a.env = config.Load(os.Getenv, config.NewWarner(func(m string) { log.Warn("config.invalid", "msg", m) }))
	if err := daemon.Run(a.env, mode, log); err != nil {
		log.Error("daemon.failed", "err", err)
		return a.fail("daemon: %v", err)
	}
	return 0
}

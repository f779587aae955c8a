package main_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reproboard/reproboard/harness/section"
)

// `daemon stop` returns only once the daemon's process has exited: the
// next command must not meet a daemon still on its way out. Checked the
// moment stop returns, from this process (no exec in between).
func TestStopReturnsAfterTheDaemonExited(t *testing.T) {
	sec := section.ForTest(t, section.Config{CacheVar: "DEMOD_CACHE_DIR", RuntimeVar: "DEMOD_RUNTIME_DIR"})
	start := sec.Run(section.Spec{Args: []string{binary, "daemon", "start"}, Timeout: time.Minute})
	m := regexp.MustCompile(`pid (\d+)`).FindStringSubmatch(start.Stdout)
	if start.RC != 0 || m == nil {
		t.Fatalf("daemon start: rc=%d\n%s", start.RC, start.Excerpt())
	}
	pid, _ := strconv.Atoi(m[1])
	stop := sec.Run(section.Spec{Args: []string{binary, "daemon", "stop"}, Timeout: time.Minute})
	state := procState(pid)
	if stop.RC != 0 {
		t.Fatalf("daemon stop: rc=%d\n%s", stop.RC, stop.Excerpt())
	}
	if state != "" && state != "Z" && state != "X" {
		t.Fatalf("daemon stop returned while the daemon (pid %d) was still running (state %s)", pid, state)
	}
}

// procState is the process's state letter, "" when it is gone.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return "?"
}

package main_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// TestBreaksAreCaught proves each DEMOD_TEST_BREAK switch produces the
// regression a guard is meant to catch, by running the guard's own check
// and expecting it to fail.
func TestBreaksAreCaught(t *testing.T) {
	t.Parallel()
	breaks := map[string]func(t *testing.T, s *sandbox){
		"restart-under-storm": func(t *testing.T, s *sandbox) {
			pid := pidFrom(s.must("daemon", "start").stdout)
			for range 10 {
				s.run("cli", "list_projects", "{}")
			}
			st := s.run("daemon", "status")
			if st.code == 0 && pidFrom(st.stdout) == pid {
				t.Errorf("the permanent daemon survived the storm with pid %d; the break did nothing: %s", pid, st)
			}
		},
		"stop-ignores-sessions": func(t *testing.T, s *sandbox) {
			s.must("daemon", "start")
			m := s.mcp()
			m.initialize()
			if r := s.run("daemon", "stop"); r.code != 0 || !strings.Contains(r.stdout, "daemon: stopping") {
				t.Errorf("stop should have ignored the attached session: %s", r)
			}
		},
		"start-new-pid": func(t *testing.T, s *sandbox) {
			pid := pidFrom(s.must("daemon", "start").stdout)
			again := s.must("daemon", "start")
			if got := pidFrom(again.stdout); got == pid || got == 0 {
				t.Errorf("second start should have restarted the daemon (old pid %d): %s", pid, again)
			}
		},
		"stale-state": func(t *testing.T, s *sandbox) {
			pid := pidFrom(s.must("daemon", "start").stdout)
			if err := syscallKill(pid); err != nil {
				t.Fatal(err)
			}
			waitDead(t, pid)
			st := s.run("daemon", "status")
			if st.code != 0 || pidFrom(st.stdout) != pid {
				t.Errorf("status should keep reporting the dead pid %d: %s", pid, st)
			}
			if start := s.run("daemon", "start"); pidFrom(start.stdout) != pid {
				t.Errorf("start should refuse, claiming the dead pid %d: %s", pid, start)
			}
		},
		"hook-fails-closed": func(t *testing.T, s *sandbox) {
			if r := s.runInput(`{}`, "hook-augment"); r.code != 1 || !strings.Contains(r.stderr, "error:") {
				t.Errorf("hook-augment should fail closed: %s", r)
			}
		},
		"port-blocks": func(t *testing.T, s *sandbox) {
			blocker, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer blocker.Close()
			r := s.run("daemon", "start", fmt.Sprintf("--port=%d", blocker.Addr().(*net.TCPAddr).Port))
			if r.code == 0 {
				t.Errorf("start with an occupied port should fail: %s", r)
			}
			s.waitNotRunning(10 * time.Second)
		},
		"writer-gives-up": func(t *testing.T, s *sandbox) {
			r, exitedUnderLock := s.startUnderHeldWriter(1500 * time.Millisecond)
			if !exitedUnderLock || r.code == 0 {
				t.Errorf("the client should have given up under the held writer (exited under lock: %v): %s", exitedUnderLock, r)
			}
		},
	}
	for name, check := range breaks {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			check(t, newSandbox(t, "DEMOD_TEST_BREAK="+name))
		})
	}
}

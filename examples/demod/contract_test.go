package main_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const daemonUsage = "usage: demod daemon <start|stop|status> [--port=N]"

// TestParameterSurface: the rows of the contract that must fail before
// anything is spawned.
func TestParameterSurface(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	rows := []struct {
		args   []string
		code   int
		stderr []string
	}{
		{[]string{"daemon"}, 1, []string{daemonUsage}},
		{[]string{"daemon", "bogus"}, 1, []string{"error: unknown daemon option: bogus", daemonUsage}},
		{[]string{"daemon", "start", "--port=0"}, 1, []string{"error: --port requires a value between 1 and 65535"}},
		{[]string{"daemon", "start", "--port=65536"}, 1, []string{"error: --port requires a value between 1 and 65535"}},
		{[]string{"daemon", "start", "--port=http"}, 1, []string{"error: --port requires a value between 1 and 65535"}},
		{[]string{"daemon", "status", "--force"}, 1, []string{"error: unknown daemon option: --force"}},
		{[]string{"frobnicate"}, 1, []string{"error: unknown command: frobnicate"}},
		{[]string{"cli", "no_such_tool", "{}"}, 1, []string{"unknown tool: no_such_tool"}},
		{[]string{"cli", "list_projects", "{not json"}, 1, []string{"error: the arguments of list_projects must be a JSON object"}},
		{[]string{"cli", "list_projects", "[1,2]"}, 1, []string{"error: the arguments of list_projects must be a JSON object"}},
	}
	for _, row := range rows {
		r := s.run(row.args...)
		if r.code != row.code {
			t.Errorf("demod %s: want exit %d, got %s", strings.Join(row.args, " "), row.code, r)
		}
		for _, want := range row.stderr {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("demod %s: stderr lacks %q:\n%s", strings.Join(row.args, " "), want, r)
			}
		}
	}
	// None of those may have started a daemon.
	if _, err := os.Stat(filepath.Join(s.runtime, "demod.sock")); err == nil {
		t.Error("a rejected invocation left a daemon socket behind")
	}
	if pids := s.marked(); len(pids) != 0 {
		t.Errorf("rejected invocations left processes running: %v", pids)
	}
}

func TestNothingRunning(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	if r := s.run("daemon", "status"); r.code != 1 || r.stdout != "daemon: not running\n" {
		t.Errorf("status with no daemon: %s", r)
	}
	if r := s.run("daemon", "stop"); r.code != 0 || r.stdout != "daemon: not running (nothing to stop)\n" {
		t.Errorf("stop with no daemon: %s", r)
	}
}

func TestRuntimeDirIsValidated(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	file := filepath.Join(s.root, "plainfile")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(s.root, "link")
	if err := os.Symlink(s.runtime, link); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{
		file:                            "not a directory",
		link:                            "is a symlink",
		filepath.Join(s.root, "absent"): "does not exist",
	} {
		bad := *s
		bad.env = append(append([]string{}, s.env...), "DEMOD_RUNTIME_DIR="+dir)
		r := bad.run("daemon", "status")
		if r.code != 1 || !strings.Contains(r.stderr, "error: DEMOD_RUNTIME_DIR "+dir+": "+want) {
			t.Errorf("DEMOD_RUNTIME_DIR=%s: want exit 1 and %q, got %s", dir, want, r)
		}
	}
	if _, err := os.Stat(filepath.Join(s.root, "absent")); err == nil {
		t.Error("demod created the missing runtime dir")
	}
}

func TestHookFailsOpenOnce(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	payload := `{"hook_event_name":"PreToolUse","tool_name":"Grep","tool_input":{"pattern":"Alpha"}}`
	first := s.runInput(payload, "hook-augment")
	if first.code != 0 || !strings.HasPrefix(first.stdout, `{"systemMessage":"`) || !strings.Contains(first.stderr, "no demod daemon is running") {
		t.Fatalf("first absent-daemon hook: want exit 0, a systemMessage and the stderr notice; got %s", first)
	}
	if _, err := os.Stat(filepath.Join(s.cache, ".hook-daemon-absent-notice")); err != nil {
		t.Fatalf("marker not stamped: %v", err)
	}
	if second := s.runInput(payload, "hook-augment"); second.code != 0 || second.stdout != "" {
		t.Errorf("second absent-daemon hook must stay silent: %s", second)
	}
	if pids := s.marked(); len(pids) != 0 {
		t.Errorf("hook-augment started processes: %v", pids)
	}

	// With a daemon that knows Alpha, the hook augments.
	s.must("daemon", "start")
	s.must("cli", "index_repository", fmt.Sprintf(`{"path":%q}`, s.fixture()))
	up := s.runInput(payload, "hook-augment")
	if up.code != 0 || !strings.Contains(up.stdout, "Alpha") {
		t.Errorf("hook with a daemon up should name Alpha: %s", up)
	}
}

func TestPermanentDaemonLifecycle(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	start := s.must("daemon", "start")
	pid := pidFrom(start.stdout)
	if start.stdout != fmt.Sprintf("daemon: started (permanent, pid %d)\n", pid) || pid == 0 || !alive(pid) {
		t.Fatalf("daemon start: %s", start)
	}
	if again := s.must("daemon", "start"); again.stdout != fmt.Sprintf("daemon: already active (permanent, pid %d)\n", pid) {
		t.Errorf("second start must report the same daemon: %s", again)
	}
	want := fmt.Sprintf("daemon: active (permanent)\n  pid: %d\n  committed clients: 0\n", pid)
	if st := s.must("daemon", "status"); st.stdout != want {
		t.Errorf("status: got %q, want %q", st.stdout, want)
	}

	idx := s.must("cli", "index_repository", fmt.Sprintf(`{"path":%q}`, s.fixture()))
	if !strings.Contains(idx.stdout, `"functions": 3`) || !strings.Contains(idx.stdout, `"project": "repo"`) {
		t.Errorf("index_repository: %s", idx)
	}
	search := s.must("cli", "search_graph", `{"project":"repo","name_pattern":"^(Alpha|gamma)$","limit":5}`)
	if !strings.Contains(search.stdout, `"total": 2`) || strings.Contains(search.stdout+search.stderr, "daemon start") {
		t.Errorf("search_graph: %s", search)
	}
	if lp := s.must("cli", "list_projects", "{}"); !strings.Contains(lp.stdout, `"name": "repo"`) {
		t.Errorf("list_projects: %s", lp)
	}

	// Sequential and parallel storms leave the same daemon in place.
	for i := range 10 {
		if r := s.run("cli", "list_projects", "{}"); r.code != 0 {
			t.Fatalf("sequential client %d: %s", i, r)
		}
	}
	for _, r := range s.parallel(6, "cli", "list_projects", "{}") {
		if r.code != 0 {
			t.Fatalf("parallel client: %s", r)
		}
	}
	if got := pidFrom(s.must("daemon", "status").stdout); got != pid {
		t.Fatalf("after the storms status reports pid %d, want the original %d", got, pid)
	}

	stop := s.must("daemon", "stop")
	if stop.stdout != fmt.Sprintf("daemon: stopping (pid %d)\n", pid) {
		t.Errorf("stop: %s", stop)
	}
	waitDead(t, pid)
	s.waitNotRunning(5 * time.Second)
	for _, f := range []string{"demod.sock", "demod.pid"} {
		if _, err := os.Stat(filepath.Join(s.runtime, f)); err == nil {
			t.Errorf("%s left behind after a clean stop", f)
		}
	}
}

// parallel runs n copies of a command at once.
func (s *sandbox) parallel(n int, args ...string) []result {
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i] = s.run(args...) })
	}
	wg.Wait()
	return results
}

func TestColdStormSharesOneEphemeralDaemonThatRetires(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	for i, r := range s.parallel(6, "cli", "list_projects", "{}") {
		if r.code != 0 || !strings.Contains(r.stdout, `"projects"`) || strings.Contains(r.stdout+r.stderr, "daemon start") {
			t.Errorf("cold client %d: %s", i, r)
		}
	}
	if n := strings.Count(s.log(), " daemon.started "); n != 1 {
		t.Errorf("want exactly one daemon started by 6 racing cold clients, the log shows %d:\n%s", n, s.log())
	}
	s.waitNotRunning(10 * time.Second)
	waitFor(t, "the retired ephemeral daemon's process to exit", 10*time.Second, func() (bool, string) {
		pids := s.marked()
		return len(pids) == 0, fmt.Sprintf("marked processes %v", pids)
	})
	if !strings.Contains(s.log(), "daemon.idle_retire") {
		t.Errorf("the daemon did not log an idle retirement:\n%s", s.log())
	}
}

func TestKill9Recovery(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	pid := pidFrom(s.must("daemon", "start").stdout)
	if err := syscallKill(pid); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pid)
	if _, err := os.Stat(filepath.Join(s.runtime, "demod.sock")); err != nil {
		t.Fatalf("kill -9 should leave a stale socket to recover from: %v", err)
	}
	if r := s.run("daemon", "status"); r.code != 1 || r.stdout != "daemon: not running\n" {
		t.Errorf("status after kill -9: %s", r)
	}
	if cold := s.run("cli", "list_projects", "{}"); cold.code != 0 || strings.Contains(cold.stdout+cold.stderr, "daemon start") {
		t.Errorf("cold client after kill -9: %s", cold)
	}
	restart := s.must("daemon", "start")
	if fresh := pidFrom(restart.stdout); fresh == 0 || fresh == pid || !strings.Contains(restart.stdout, "daemon: started (permanent") {
		t.Errorf("start after kill -9 must give a fresh daemon (old pid %d): %s", pid, restart)
	}
}

func TestStopRefusesWhileMCPSessionAttached(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	pid := pidFrom(s.must("daemon", "start").stdout)
	m := s.mcp()
	m.initialize()
	refused := s.run("daemon", "stop")
	want := fmt.Sprintf("daemon: NOT stopped — 1 committed client(s) still use it.\n- pid %d\n", m.cmd.Process.Pid)
	if refused.code != 1 || refused.stdout != want {
		t.Fatalf("stop with an MCP session attached: want exit 1 and %q, got %s", want, refused)
	}
	if st := s.must("daemon", "status"); !strings.Contains(st.stdout, "committed clients: 1") || pidFrom(st.stdout) != pid {
		t.Errorf("status with a session: %s", st)
	}
	if code := m.close(); code != 0 {
		t.Errorf("MCP session exit code after stdin EOF: %d; stderr:\n%s", code, m.errb.String())
	}
	waitFor(t, "`daemon stop` to succeed once the session closed", 10*time.Second, func() (bool, string) {
		r := s.run("daemon", "stop")
		return r.code == 0 && strings.Contains(r.stdout, "daemon: stopping (pid"), r.String()
	})
	waitDead(t, pid)
}

func TestColdMCPSessionUsesAnEphemeralDaemon(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	m := s.mcp()
	m.initialize()
	st := s.must("daemon", "status")
	if !strings.Contains(st.stdout, "daemon: active (ephemeral)") || !strings.Contains(st.stdout, "committed clients: 1") {
		t.Fatalf("status during a cold MCP session: %s", st)
	}
	// Longer than the idle period: an attached session keeps the daemon.
	time.Sleep(time.Second)
	if r := m.request(1, "tools/call", `{"name":"list_projects","arguments":{}}`); !strings.Contains(r, `projects`) || strings.Contains(r, `"isError":true`) {
		t.Errorf("tools/call through the session: %s", r)
	}
	if code := m.close(); code != 0 {
		t.Errorf("session exit code %d", code)
	}
	s.waitNotRunning(10 * time.Second)
}

// TestStartPromotesAnEphemeralDaemon pins the documented choice: `daemon
// start` with an ephemeral daemon up makes it permanent, keeping its pid
// and its attached sessions.
func TestStartPromotesAnEphemeralDaemon(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	m := s.mcp()
	m.initialize()
	pid := pidFrom(s.must("daemon", "status").stdout)
	start := s.must("daemon", "start")
	if start.stdout != fmt.Sprintf("daemon: started (permanent, pid %d)\n", pid) {
		t.Errorf("start with ephemeral pid %d up: %s", pid, start)
	}
	want := fmt.Sprintf("daemon: active (permanent)\n  pid: %d\n  committed clients: 1\n", pid)
	if st := s.must("daemon", "status"); st.stdout != want {
		t.Errorf("status after the promotion: got %q, want %q", st.stdout, want)
	}
	if code := m.close(); code != 0 {
		t.Errorf("session exit code %d", code)
	}
	time.Sleep(time.Second) // longer than the idle period: a permanent daemon stays
	if st := s.must("daemon", "status"); pidFrom(st.stdout) != pid {
		t.Errorf("the promoted daemon retired like an ephemeral one: %s", st)
	}
}

func TestOccupiedPortDoesNotBlockStart(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	blocker, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := blocker.Addr().(*net.TCPAddr).Port
	start := s.must("daemon", "start", fmt.Sprintf("--port=%d", port))
	pid := pidFrom(start.stdout)
	if !strings.Contains(start.stdout, "daemon: started (permanent, pid") {
		t.Fatalf("start with an occupied port: %s", start)
	}
	if st := s.must("daemon", "status"); pidFrom(st.stdout) != pid {
		t.Errorf("status pid differs from start's %d: %s", pid, st)
	}
	waitFor(t, "the daemon to log its UI bind retry", 5*time.Second, func() (bool, string) {
		return strings.Contains(s.log(), "ui.bind_retry"), tail(s.log(), 500)
	})
	blocker.Close()
	client := http.Client{Timeout: time.Second}
	waitFor(t, "the status page to come up once the port was freed", 15*time.Second, func() (bool, string) {
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, resp.Status)
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		body := string(buf[:n])
		return strings.Contains(body, fmt.Sprintf(`"pid":%d`, pid)), b.String() + " " + body
	})
}

func TestInvalidIdleFallsBackWithOneWarning(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, "DEMOD_EPHEMERAL_IDLE=-2s")
	start := s.must("daemon", "start")
	if n := strings.Count(start.stderr, "DEMOD_EPHEMERAL_IDLE"); n != 1 {
		t.Errorf("daemon start should warn once about DEMOD_EPHEMERAL_IDLE, warned %d times: %s", n, start)
	}
	s.must("cli", "list_projects", "{}")
	s.must("cli", "list_projects", "{}")
	if n := strings.Count(s.log(), "config.invalid"); n != 1 {
		t.Errorf("the daemon log should hold exactly one config.invalid line, has %d:\n%s", n, s.log())
	}
	if !strings.Contains(s.log(), "idle=5s") {
		t.Errorf("the daemon did not fall back to the 5s default:\n%s", s.log())
	}
}

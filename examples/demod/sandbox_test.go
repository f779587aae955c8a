package main_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is the demod built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "demod-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binary = filepath.Join(dir, "demod")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building demod: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sandbox is one test's private world: cache, runtime dir and home under a
// short /tmp root (socket paths stay far below 104 bytes), and a marker
// variable every process it starts inherits, daemons included, so cleanup
// can find and kill them by pid.
type sandbox struct {
	t       *testing.T
	root    string
	cache   string
	runtime string
	mark    string
	env     []string
}

func newSandbox(t *testing.T, extraEnv ...string) *sandbox {
	t.Helper()
	root, err := os.MkdirTemp("/tmp", "dmd")
	if err != nil {
		t.Fatal(err)
	}
	s := &sandbox{t: t, root: root, cache: filepath.Join(root, "cache"), runtime: filepath.Join(root, "rt")}
	for _, d := range []string{s.runtime, filepath.Join(root, "home"), filepath.Join(root, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s.mark = "DEMOD_TEST_SANDBOX=" + root
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "DEMOD_") || strings.HasPrefix(kv, "XDG_") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "TMPDIR=") {
			continue
		}
		s.env = append(s.env, kv)
	}
	s.env = append(s.env,
		"DEMOD_CACHE_DIR="+s.cache,
		"DEMOD_RUNTIME_DIR="+s.runtime,
		"DEMOD_EPHEMERAL_IDLE=500ms",
		"HOME="+filepath.Join(root, "home"),
		"TMPDIR="+filepath.Join(root, "tmp"),
		s.mark,
	)
	s.env = append(s.env, extraEnv...)
	t.Cleanup(s.cleanup)
	return s
}

// cleanup stops the daemon the polite way, then kills by pid whatever
// still carries this sandbox's marker, and fails the test if anything
// survives that.
func (s *sandbox) cleanup() {
	s.run("daemon", "stop")
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := s.marked()
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			s.t.Errorf("processes of sandbox %s still alive 5s after SIGKILL: %v", s.root, pids)
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !s.t.Failed() {
		os.RemoveAll(s.root)
	} else {
		s.t.Logf("sandbox kept for inspection: %s; daemon log tail:\n%s", s.root, tail(s.log(), 1500))
	}
}

// marked lists live (non-zombie) processes carrying the sandbox marker.
func (s *sandbox) marked() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	needle := []byte(s.mark + "\x00")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, needle) {
			continue
		}
		if alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("rc=%d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// commandTimeout bounds every demod command a test runs.
const commandTimeout = 30 * time.Second

func (s *sandbox) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = s.env
	cmd.Dir = s.root
	return cmd
}

func (s *sandbox) run(args ...string) result { return s.runInput("", args...) }

func (s *sandbox) runInput(stdin string, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := s.command(ctx, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if ctx.Err() != nil {
		code = 124
		errb.WriteString(fmt.Sprintf("\n[timed out after %s]", commandTimeout))
	} else if err != nil && code < 0 {
		s.t.Fatalf("demod %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// must runs a command that has to exit 0.
func (s *sandbox) must(args ...string) result {
	s.t.Helper()
	r := s.run(args...)
	if r.code != 0 {
		s.t.Fatalf("demod %s: want exit 0, got %s", strings.Join(args, " "), r)
	}
	return r
}

var pidRe = regexp.MustCompile(`pid[: ]+(\d+)`)

func pidFrom(text string) int {
	m := pidRe.FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func (s *sandbox) log() string {
	b, _ := os.ReadFile(filepath.Join(s.cache, "logs", "demod-daemon.log"))
	return string(b)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("...(%d chars elided)...\n%s", len(s)-n, s[len(s)-n:])
}

// waitFor polls check until it succeeds; on timeout the failure says what
// was awaited and what was seen last.
func waitFor(t *testing.T, what string, timeout time.Duration, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, seen := check()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *sandbox) waitNotRunning(timeout time.Duration) {
	s.t.Helper()
	waitFor(s.t, "`daemon status` to say not running", timeout, func() (bool, string) {
		r := s.run("daemon", "status")
		return r.code == 1 && strings.Contains(r.stdout, "daemon: not running"), r.String()
	})
}

func waitDead(t *testing.T, pid int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("pid %d to exit", pid), 10*time.Second, func() (bool, string) {
		return !alive(pid), fmt.Sprintf("pid %d still alive", pid)
	})
}

// fixture writes a tiny repository to index.
func (s *sandbox) fixture() string {
	s.t.Helper()
	dir := filepath.Join(s.root, "repo")
	files := map[string]string{
		"a.go": "package a\n\nfunc Alpha() {}\nfunc Beta() {}\n",
		"b.py": "def gamma():\n    pass\n",
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
	return dir
}

// mcpSession is `demod` with no arguments, driven over its stdin/stdout.
type mcpSession struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	errb  *syncBuffer
	done  chan struct{}
}

// syncBuffer collects a child's stderr while the test may read it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (s *sandbox) mcp() *mcpSession {
	s.t.Helper()
	cmd := s.command(context.Background())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	m := &mcpSession{t: s.t, cmd: cmd, stdin: stdin, lines: make(chan string, 1024), errb: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = m.errb
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			m.lines <- sc.Text()
		}
		close(m.lines)
	}()
	go func() { _ = cmd.Wait(); close(m.done) }()
	s.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-m.done
	})
	return m
}

func (m *mcpSession) send(line string) {
	m.t.Helper()
	if _, err := io.WriteString(m.stdin, line+"\n"); err != nil {
		m.t.Fatalf("writing to the MCP session: %v", err)
	}
}

// request sends a JSON-RPC request and returns its answer line.
func (m *mcpSession) request(id int, method, params string) string {
	m.t.Helper()
	m.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	want := fmt.Sprintf(`"id":%d,`, id)
	timeout := time.After(10 * time.Second)
	var last string
	for {
		select {
		case line, ok := <-m.lines:
			if !ok {
				m.t.Fatalf("MCP session closed stdout before answering %s #%d; stderr:\n%s", method, id, m.errb.String())
			}
			if strings.Contains(line, want) {
				return line
			}
			last = line
		case <-timeout:
			m.t.Fatalf("no answer to %s #%d within 10s; last line: %q", method, id, last)
		}
	}
}

func (m *mcpSession) initialize() {
	m.t.Helper()
	if r := m.request(0, "initialize", `{"capabilities":{}}`); !strings.Contains(r, `"result"`) {
		m.t.Fatalf("initialize answer has no result: %s", r)
	}
	m.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// close ends stdin and returns the exit code once the session exits.
func (m *mcpSession) close() int {
	m.t.Helper()
	m.stdin.Close()
	select {
	case <-m.done:
		return m.cmd.ProcessState.ExitCode()
	case <-time.After(10 * time.Second):
		m.t.Fatalf("MCP session still running 10s after stdin EOF; stderr:\n%s", m.errb.String())
		return -1
	}
}

package daemon

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reproboard/reproboard/examples/demod/internal/rendezvous"
	"github.com/reproboard/reproboard/examples/demod/internal/store"
	"github.com/reproboard/reproboard/examples/demod/internal/tools"
	"github.com/reproboard/reproboard/examples/demod/internal/wire"
)

// serve runs an in-process daemon on a socket under /tmp (short path).
func serve(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "dmdsrv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	st, err := store.Open(filepath.Join(dir, "store.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	opts.Service = tools.NewService(st, tools.Options{})
	if opts.Mode == "" {
		opts.Mode = Permanent
	}
	sock := filepath.Join(dir, "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := New(opts)
	go s.Serve(ln)
	t.Cleanup(s.Shutdown)
	return s, sock
}

func dial(t *testing.T, sock string) *wire.Conn {
	t.Helper()
	c, err := wire.Dial(sock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// once sends one request on a fresh connection, like a one-shot client.
func once(t *testing.T, sock string, req wire.Request) wire.Response {
	t.Helper()
	c := dial(t, sock)
	defer c.Close()
	return call(t, c, req)
}

func call(t *testing.T, c *wire.Conn, req wire.Request) wire.Response {
	t.Helper()
	resp, err := c.Call(req, 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", req.Op, err)
	}
	return resp
}

// waitEmpty waits until both registries are empty, reporting what it saw last.
func waitEmpty(t *testing.T, s *Server) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		clients, sessions := s.Counts()
		if clients == 0 && sessions == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("registries not empty 5s after the last disconnect: %d clients, %d sessions", clients, sessions)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRegistriesAreBoundedUnderChurn: 500 clients come and go, half of
// them committed; when they are gone, nothing of them is left.
func TestRegistriesAreBoundedUnderChurn(t *testing.T) {
	s, sock := serve(t, Options{})
	for i := range 500 {
		c := dial(t, sock)
		if i%2 == 0 {
			call(t, c, wire.Request{Op: wire.OpAttach})
		}
		if resp := call(t, c, wire.Request{Op: wire.OpCall, Tool: "list_projects"}); !resp.OK {
			t.Fatalf("cycle %d: %+v", i, resp)
		}
		c.Close()
	}
	waitEmpty(t, s)
	s.mu.Lock()
	users := s.users
	s.mu.Unlock()
	if users != 0 {
		t.Errorf("%d users still counted after every client left", users)
	}
}

func TestStopRefusesWhileCommittedAndNamesThePeer(t *testing.T) {
	s, sock := serve(t, Options{})
	session := dial(t, sock)
	call(t, session, wire.Request{Op: wire.OpAttach})

	resp := once(t, sock, wire.Request{Op: wire.OpStop})
	if resp.Code != wire.CodeRefused || !slices.Equal(resp.Clients, []int{os.Getpid()}) {
		t.Fatalf("stop with a committed client: %+v; want refused naming pid %d (this process, by SO_PEERCRED)", resp, os.Getpid())
	}
	session.Close()
	waitEmpty(t, s)
	if resp := once(t, sock, wire.Request{Op: wire.OpStop}); !resp.OK {
		t.Fatalf("stop after the session left: %+v", resp)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the daemon did not begin to exit within 5s of an accepted stop")
	}
}

func TestEphemeralRetiresWhenUnusedEvenIfPolled(t *testing.T) {
	s, sock := serve(t, Options{Mode: Ephemeral, Idle: 300 * time.Millisecond})
	c := dial(t, sock)
	call(t, c, wire.Request{Op: wire.OpCall, Tool: "list_projects"})
	// While a user is connected the daemon stays, however long that is.
	time.Sleep(600 * time.Millisecond)
	select {
	case <-s.Done():
		t.Fatal("retired while a client was connected")
	default:
	}
	c.Close()
	// Status polls are not use: they must not keep it alive.
	deadline := time.Now().Add(5 * time.Second)
	for {
		select {
		case <-s.Done():
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("ephemeral daemon polled with status did not retire within 5s of its last user leaving")
		}
		if p, err := wire.Dial(sock, time.Second); err == nil {
			_, _ = p.Call(wire.Request{Op: wire.OpStatus}, time.Second)
			p.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestStartPromotesEphemeralThenSaysAlready(t *testing.T) {
	_, sock := serve(t, Options{Mode: Ephemeral, Idle: time.Hour})
	first := once(t, sock, wire.Request{Op: wire.OpStart})
	second := once(t, sock, wire.Request{Op: wire.OpStart})
	if !first.OK || first.Already || first.Mode != Permanent {
		t.Errorf("first start: %+v; want started, permanent", first)
	}
	if !second.OK || !second.Already || second.PID != first.PID {
		t.Errorf("second start: %+v; want already active, same pid %d", second, first.PID)
	}
}

func TestClientCapTurnsExtraConnectionsAway(t *testing.T) {
	s, sock := serve(t, Options{MaxClients: 3})
	var held []*wire.Conn
	for range 3 {
		c := dial(t, sock)
		call(t, c, wire.Request{Op: wire.OpStatus})
		held = append(held, c)
	}
	extra := dial(t, sock)
	resp, err := extra.Call(wire.Request{Op: wire.OpStatus}, 2*time.Second)
	extra.Close()
	if err != nil || resp.Code != wire.CodeBusy {
		t.Errorf("4th client with a cap of 3: %+v, %v; want a busy answer", resp, err)
	}
	for _, c := range held {
		c.Close()
	}
	waitEmpty(t, s)
}

func TestRemovedSocketRetiresTheDaemon(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "dmdsrv")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	p := rendezvous.For(dir)
	s, _ := serve(t, Options{Paths: &p})
	// serve listened elsewhere; give the watcher a socket file of its own.
	ln, err := net.Listen("unix", p.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s2 := New(Options{Paths: &p, Service: s.opts.Service, Mode: Permanent})
	go s2.Serve(ln)
	defer s2.Shutdown()
	time.Sleep(100 * time.Millisecond)
	if err := os.Remove(p.Socket); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s2.Done():
		if !strings.Contains(s2.Reason(), "removed or replaced") {
			t.Errorf("retired for the wrong reason: %s", s2.Reason())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a daemon whose socket was removed kept running 5s later")
	}
}

// BenchmarkCommittedSearchFixed is one MCP session repeating a query
// against the #581-fixed daemon, client and server in one process. Its
// allocations are the background a memory meter must see a leak through.
func BenchmarkCommittedSearchFixed(b *testing.B) {
	dir, err := os.MkdirTemp("/tmp", "dmdbench")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(filepath.Join(dir, "store.db"), store.Options{TruncateEvery: 50})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	src := filepath.Join(dir, "proj")
	if err := os.MkdirAll(src, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a.go"), []byte("package a\nfunc A() {}\nfunc B() {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	s := New(Options{Mode: Permanent, Service: tools.NewService(st, tools.Options{Fix581: true})})
	ln, err := net.Listen("unix", filepath.Join(dir, "d.sock"))
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(ln)
	defer s.Shutdown()
	c, err := wire.Dial(filepath.Join(dir, "d.sock"), time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, req := range []wire.Request{
		{Op: wire.OpAttach},
		{Op: wire.OpCall, Tool: "index_repository", Args: []byte(`{"path":"` + src + `"}`)},
	} {
		if resp, err := c.Call(req, 5*time.Second); err != nil || !resp.OK {
			b.Fatalf("%s: %+v %v", req.Op, resp, err)
		}
	}
	req := wire.Request{Op: wire.OpCall, Tool: "search_graph", Args: []byte(`{"project":"proj","name_pattern":".*","limit":10}`)}
	b.ReportAllocs()
	for b.Loop() {
		if resp, err := c.Call(req, 5*time.Second); err != nil || !resp.OK {
			b.Fatalf("search: %+v %v", resp, err)
		}
	}
}

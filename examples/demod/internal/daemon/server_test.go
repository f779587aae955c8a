package daemon

import (
	"context"
	"fmt"
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
	"github.com/reproboard/reproboard/harness/lifecycle"
	"github.com/reproboard/reproboard/harness/section"
	"github.com/reproboard/reproboard/harness/wait"
)

func TestMain(m *testing.M) { os.Exit(section.Main(m)) }

// newService opens a store in dir and serves the tools over it.
func newService(t testing.TB, dir string, st store.Options, opts tools.Options) *tools.Service {
	t.Helper()
	db, err := store.Open(filepath.Join(dir, "store.db"), st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return tools.NewService(db, opts)
}

// serve runs an in-process daemon on the rendezvous socket of a section's
// runtime dir (a short /tmp path). Every goroutine started while it runs
// must be gone when the test ends.
func serve(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	lifecycle.NoGoroutineLeak(t)
	sec := section.ForTest(t, section.Config{})
	if opts.Service == nil {
		opts.Service = newService(t, sec.Cache, store.Options{}, tools.Options{})
	}
	if opts.Mode == "" {
		opts.Mode = Permanent
	}
	p := rendezvous.For(sec.Runtime)
	opts.Paths = &p
	ln, err := net.Listen("unix", p.Socket)
	if err != nil {
		t.Fatal(err)
	}
	s := New(opts)
	go s.Serve(ln)
	t.Cleanup(s.Shutdown)
	return s, p.Socket
}

func dial(t testing.TB, sock string) *wire.Conn {
	t.Helper()
	c, err := wire.Dial(sock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// once sends one request on a fresh connection, like a one-shot client.
func once(t testing.TB, sock string, req wire.Request) wire.Response {
	t.Helper()
	c := dial(t, sock)
	defer c.Close()
	return call(t, c, req)
}

func call(t testing.TB, c *wire.Conn, req wire.Request) wire.Response {
	t.Helper()
	resp, err := c.Call(req, 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", req.Op, err)
	}
	return resp
}

// waitFor fails t unless check is done within timeout.
func waitFor(t testing.TB, what string, timeout time.Duration, check func() wait.Result) {
	t.Helper()
	if err := wait.For(context.Background(), what, timeout, 10*time.Millisecond, check); err != nil {
		t.Fatal(err)
	}
}

// registries are the sizes of the server's client and session registries
// and its user count, which must all return to 0 when every client left.
func registries(s *Server) (clients, sessions, users int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients), len(s.sessions), s.users
}

func waitEmpty(t testing.TB, s *Server) {
	t.Helper()
	waitFor(t, "the registries to empty after the last disconnect", 5*time.Second, func() wait.Result {
		clients, sessions, users := registries(s)
		if clients+sessions+users == 0 {
			return wait.Done()
		}
		return wait.Continue("%d clients, %d sessions, %d users", clients, sessions, users)
	})
}

func retired(s *Server) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

func waitRetired(t testing.TB, s *Server, what string) {
	t.Helper()
	waitFor(t, what, 5*time.Second, func() wait.Result {
		if retired(s) {
			return wait.Done()
		}
		return wait.Continue("still serving")
	})
}

// TestRegistriesAreBoundedUnderChurn: 500 clients come and go, half of
// them committed; when they are gone, nothing of them is left.
func TestRegistriesAreBoundedUnderChurn(t *testing.T) {
	s, sock := serve(t, Options{})
	lifecycle.RegistryBounded(t, 500, func(i int) {
		c := dial(t, sock)
		defer c.Close()
		if i%2 == 0 {
			call(t, c, wire.Request{Op: wire.OpAttach})
		}
		if resp := call(t, c, wire.Request{Op: wire.OpCall, Tool: "list_projects"}); !resp.OK {
			t.Fatalf("cycle %d: %+v", i, resp)
		}
	}, func() int {
		clients, sessions, users := registries(s)
		return clients + sessions + users
	})
	if t.Failed() {
		clients, sessions, users := registries(s)
		t.Logf("left: %d clients, %d sessions, %d users", clients, sessions, users)
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
	waitRetired(t, s, "the daemon to begin to exit after an accepted stop")
}

func TestEphemeralRetiresWhenUnusedEvenIfPolled(t *testing.T) {
	s, sock := serve(t, Options{Mode: Ephemeral, Idle: 300 * time.Millisecond})
	c := dial(t, sock)
	call(t, c, wire.Request{Op: wire.OpCall, Tool: "list_projects"})
	// Twice the idle period with a user connected: the daemon must stay.
	time.Sleep(600 * time.Millisecond)
	if retired(s) {
		t.Fatalf("retired while a client was connected: %s", s.Reason())
	}
	c.Close()
	// Status polls are not use: they must not keep it alive.
	polls := 0
	waitFor(t, "the ephemeral daemon to retire with only status polls coming in", 5*time.Second, func() wait.Result {
		if retired(s) {
			return wait.Done()
		}
		if p, err := wire.Dial(sock, time.Second); err == nil {
			if _, err := p.Call(wire.Request{Op: wire.OpStatus}, time.Second); err == nil {
				polls++
			}
			p.Close()
		}
		return wait.Continue("still serving after %d status polls", polls)
	})
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
	s, sock := serve(t, Options{})
	once(t, sock, wire.Request{Op: wire.OpStatus})
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	waitRetired(t, s, "a daemon whose socket was removed to exit")
	if !strings.Contains(s.Reason(), "removed or replaced") {
		t.Errorf("retired for the wrong reason: %s", s.Reason())
	}
}

// indexed serves a #581-fixed daemon with a small project indexed, and
// returns a committed client's connection to it.
func indexed(t testing.TB, dir string) (*wire.Conn, func()) {
	t.Helper()
	src := filepath.Join(dir, "proj")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a.go"), []byte("package a\nfunc A() {}\nfunc B() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Options{Mode: Permanent, Service: newService(t, dir, store.Options{TruncateEvery: 50}, tools.Options{Fix581: true})})
	sock := filepath.Join(dir, "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	c := dial(t, sock)
	for _, req := range []wire.Request{
		{Op: wire.OpAttach},
		{Op: wire.OpCall, Tool: "index_repository", Args: []byte(fmt.Sprintf(`{"repo_path":%q}`, src))},
	} {
		if resp := call(t, c, req); !resp.OK {
			t.Fatalf("%s: %+v", req.Op, resp)
		}
	}
	return c, func() { c.Close(); s.Shutdown() }
}

var searchAll = wire.Request{Op: wire.OpCall, Tool: "search_graph", Args: []byte(`{"project":"proj","name_pattern":".*","limit":10}`)}

// TestFixedCommittedSearchRetainsNothing: with #581 fixed, the daemon's
// whole query path (socket, wire, session, cache, store) keeps nothing per
// query of a long committed session.
func TestFixedCommittedSearchRetainsNothing(t *testing.T) {
	c, stop := indexed(t, section.ForTest(t, section.Config{}).Root)
	defer stop()
	lifecycle.HeapGrowth(t, 1000, func(i int) {
		if resp := call(t, c, searchAll); !resp.OK {
			t.Fatalf("query %d: %+v", i, resp)
		}
	}, lifecycle.Every(50))
}

// BenchmarkCommittedSearchFixed is one MCP session repeating a query
// against the #581-fixed daemon, client and server in one process. Its
// allocations are the background a memory meter must see a leak through.
func BenchmarkCommittedSearchFixed(b *testing.B) {
	c, stop := indexed(b, section.ForTest(b, section.Config{}).Root)
	defer stop()
	b.ReportAllocs()
	for b.Loop() {
		if resp := call(b, c, searchAll); !resp.OK {
			b.Fatalf("search: %+v", resp)
		}
	}
}

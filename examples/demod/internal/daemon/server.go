// Package daemon is the demod daemon: it serves the tools to one-shot and
// committed clients over the rendezvous socket, tracks who is attached, and
// retires when asked or, if ephemeral, when nobody has used it for a while.
package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reproboard/reproboard/examples/demod/internal/config"
	"github.com/reproboard/reproboard/examples/demod/internal/configdb"
	"github.com/reproboard/reproboard/examples/demod/internal/logx"
	"github.com/reproboard/reproboard/examples/demod/internal/rendezvous"
	"github.com/reproboard/reproboard/examples/demod/internal/tools"
	"github.com/reproboard/reproboard/examples/demod/internal/wire"
)

// Modes of a daemon.
const (
	Permanent = "permanent" // started by `daemon start`; runs until `daemon stop`
	Ephemeral = "ephemeral" // started by a cold client; retires when idle
	// SessionManaged is started by an MCP session; it retires when idle,
	// as an ephemeral one does.
	SessionManaged = "session-managed"
)

// oneShotIdle drops a non-committed connection that stops talking, so a
// stuck one-shot client cannot keep an ephemeral daemon alive forever.
const oneShotIdle = 60 * time.Second

// stormLimit is how many tool calls the restart-under-storm breakage serves.
const stormLimit = 5

// Options configure a Server.
type Options struct {
	Mode       string
	Idle       time.Duration // ephemeral retirement delay
	MaxClients int
	Break      string
	Log        *logx.Logger
	Service    *tools.Service
	Config     *configdb.DB      // nil: ports are not persisted
	Paths      *rendezvous.Paths // nil: no pid file to keep current; else its Socket is watched
	WALSize    func() int64      // for the status page; nil reports 0
}

// Server is a running daemon.
type Server struct {
	opts Options
	pid  int
	ui   *ui

	mu        sync.Mutex
	mode      string
	announced bool // a `daemon start` has been answered with "started"
	nextID    uint64
	clients   map[uint64]*client // every open connection
	sessions  map[uint64]*client // committed clients only
	users     int                // connections that used a tool or attached
	idleSince time.Time          // when users last dropped to 0
	calls     int
	closing   bool
	ln        net.Listener

	done     chan struct{}
	doneOnce sync.Once
	reason   string
	handlers sync.WaitGroup
}

type client struct {
	id        uint64
	conn      net.Conn
	pid       int // from SO_PEERCRED, not from anything the client says
	committed bool
	user      bool // counted in Server.users
	session   *tools.Session
}

// New makes a server; Serve starts it.
func New(opts Options) *Server {
	if opts.Log == nil {
		opts.Log = logx.Discard()
	}
	if opts.MaxClients <= 0 {
		opts.MaxClients = config.DefaultMaxClients
	}
	s := &Server{
		opts:      opts,
		pid:       os.Getpid(),
		mode:      opts.Mode,
		clients:   map[uint64]*client{},
		sessions:  map[uint64]*client{},
		idleSince: time.Now(),
		done:      make(chan struct{}),
	}
	s.ui = newUI(opts.Log, s.statusPage)
	return s
}

// Done is closed when the daemon has decided to exit.
func (s *Server) Done() <-chan struct{} { return s.done }

// Reason says why Done was closed.
func (s *Server) Reason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// Counts returns the sizes of the client and session registries.
func (s *Server) Counts() (clients, sessions int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients), len(s.sessions)
}

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	// The socket's identity is taken before serving: one removed before the
	// watcher's first look would otherwise never be noticed.
	go s.watch(s.socketIdentity())
	for {
		conn, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			s.RequestShutdown("listener closed")
			return
		}
		if err != nil {
			// Running out of descriptors is transient; dying would drop
			// every attached session.
			s.opts.Log.Warn("accept.failed", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		c := &client{conn: conn, pid: peerPID(conn)}
		if !s.register(c) {
			continue
		}
		s.handlers.Add(1)
		go s.handle(c)
	}
}

// register adds c to the registry, or turns it away when the daemon is
// retiring or full.
func (s *Server) register(c *client) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		c.conn.Close()
		return false
	}
	if len(s.clients) >= s.opts.MaxClients {
		s.opts.Log.Warn("client.rejected", "reason", "max_clients", "peer_pid", c.pid)
		go turnAway(c.conn, s.opts.MaxClients)
		return false
	}
	s.nextID++
	c.id = s.nextID
	s.clients[c.id] = c
	return true
}

// turnAway answers one request with "busy" and hangs up; answering before
// the request arrives would make the client's write fail instead.
func turnAway(conn net.Conn, limit int) {
	defer conn.Close()
	sc := wire.NewServerConn(conn)
	if _, err := sc.Next(2 * time.Second); err != nil {
		return
	}
	_ = sc.Reply(wire.Response{Code: wire.CodeBusy, Error: "demod daemon is at its client limit (" + strconv.Itoa(limit) + "); retry later"})
}

func (s *Server) unregister(c *client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.clients, c.id)
	if c.committed {
		delete(s.sessions, c.id)
		s.opts.Log.Info("client.detached", "peer_pid", c.pid, "committed_clients", len(s.sessions))
	}
	if c.user {
		s.users--
		if s.users == 0 {
			s.idleSince = time.Now()
		}
	}
}

// markUser counts c as using the daemon. Only users keep an ephemeral
// daemon alive: a guard polling `daemon status` must not.
func (s *Server) markUser(c *client) {
	if !c.user {
		c.user = true
		s.users++
	}
}

func (s *Server) handle(c *client) {
	defer s.handlers.Done()
	defer s.unregister(c)
	defer c.conn.Close()
	// One client's bad request must not take the daemon, and every other
	// client's session, down with it.
	defer func() {
		if r := recover(); r != nil {
			s.opts.Log.Error("client.panic", "peer_pid", c.pid, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	sc := wire.NewServerConn(c.conn)
	for {
		idle := oneShotIdle
		if c.committed {
			idle = 0
		}
		req, err := sc.Next(idle)
		if err != nil {
			return
		}
		resp, after := s.dispatch(c, *req)
		if err := sc.Reply(resp); err != nil {
			return
		}
		if after != "" {
			s.RequestShutdown(after)
		}
	}
}

// dispatch answers one request; a non-empty second result asks the daemon
// to exit once the answer is written.
func (s *Server) dispatch(c *client, req wire.Request) (wire.Response, string) {
	switch req.Op {
	case wire.OpStatus:
		return s.status(), ""
	case wire.OpStart:
		return s.start(req.Port)
	case wire.OpStop:
		return s.stop(c)
	case wire.OpAttach:
		return s.attach(c), ""
	case wire.OpCall:
		return s.call(c, req)
	case wire.OpHook:
		res, err := s.opts.Service.Augment(context.Background(), req.Args)
		if err != nil {
			return fail(err), ""
		}
		return wire.Response{OK: true, PID: s.pid, Result: res}, ""
	}
	return wire.Response{Code: wire.CodeBadArgs, Error: "unknown op: " + req.Op}, ""
}

// status answers who the daemon is; Result carries the status page's
// counters (cache, leak, WAL) for meters and tests.
func (s *Server) status() wire.Response {
	page, _ := json.Marshal(s.statusPage())
	s.mu.Lock()
	defer s.mu.Unlock()
	return wire.Response{OK: true, PID: s.pid, Mode: s.mode, Clients: s.committedPIDs(), Result: page}
}

func (s *Server) committedPIDs() []int {
	pids := make([]int, 0, len(s.sessions))
	for _, c := range s.sessions {
		pids = append(pids, c.pid)
	}
	slices.Sort(pids)
	return pids
}

func (s *Server) attach(c *client) wire.Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !c.committed {
		s.markUser(c)
		c.committed = true
		c.session = s.opts.Service.NewSession()
		s.sessions[c.id] = c
		s.opts.Log.Info("client.attached", "peer_pid", c.pid, "committed_clients", len(s.sessions))
	}
	return wire.Response{OK: true, PID: s.pid, Mode: s.mode}
}

func (s *Server) call(c *client, req wire.Request) (wire.Response, string) {
	if !tools.Known(req.Tool) {
		return wire.Response{Code: wire.CodeUnknownTool, Error: "unknown tool: " + req.Tool}, ""
	}
	s.mu.Lock()
	if c.session == nil {
		// A one-shot's session lives as long as its connection.
		s.markUser(c)
		c.session = s.opts.Service.NewSession()
	}
	sess := c.session
	s.mu.Unlock()
	res, err := sess.Call(context.Background(), req.Tool, req.Args)
	after := ""
	s.mu.Lock()
	s.calls++
	if s.opts.Break == "restart-under-storm" && s.mode == Permanent && s.calls >= stormLimit {
		after = "test break restart-under-storm"
	}
	s.mu.Unlock()
	if err != nil {
		return fail(err), after
	}
	return wire.Response{OK: true, PID: s.pid, Result: res}, after
}

func fail(err error) wire.Response {
	var te *tools.Error
	if errors.As(err, &te) {
		return wire.Response{Code: te.Code, Error: te.Msg}
	}
	return wire.Response{Code: wire.CodeFailed, Error: err.Error()}
}

// start makes the daemon permanent (promoting an ephemeral one, so its
// clients keep their sessions) and applies the UI port. The answer comes
// only after the port is saved: the client waits for it.
func (s *Server) start(port int) (wire.Response, string) {
	s.mu.Lock()
	if s.mode == Permanent && s.announced {
		s.mu.Unlock()
		if port > 0 {
			s.opts.Log.Info("start.already_active", "requested_port", port, "note", "port kept as is")
		}
		return wire.Response{OK: true, Already: true, PID: s.pid, Mode: Permanent}, ""
	}
	promoted := s.mode != Permanent
	s.mode = Permanent
	s.announced = true
	s.mu.Unlock()
	if s.opts.Paths != nil {
		_ = rendezvous.WritePIDFile(*s.opts.Paths, s.pid, Permanent)
	}
	s.opts.Log.Info("daemon.permanent", "pid", s.pid, "promoted", promoted, "port", port)

	if port == 0 && s.opts.Config != nil {
		if v, ok, err := s.opts.Config.Get("ui_port"); err == nil && ok {
			port, _ = strconv.Atoi(v)
		}
	} else if port > 0 && s.opts.Config != nil {
		if err := s.opts.Config.Set("ui_port", strconv.Itoa(port)); err != nil {
			// The daemon is useful without a saved port; say so and go on.
			s.opts.Log.Error("config_db.save_failed", "key", "ui_port", "err", err)
		}
	}
	if port > 0 {
		if s.opts.Break == "port-blocks" {
			if err := s.ui.bindOnce(port); err != nil {
				return wire.Response{Code: wire.CodeFailed, Error: "cannot bind the UI port: " + err.Error()}, "test break port-blocks"
			}
		} else {
			s.ui.start(port)
		}
	}
	return wire.Response{OK: true, PID: s.pid, Mode: Permanent}, ""
}

func (s *Server) stop(c *client) (wire.Response, string) {
	s.mu.Lock()
	pids := s.committedPIDs()
	s.mu.Unlock()
	if len(pids) > 0 && s.opts.Break != "stop-ignores-sessions" {
		s.opts.Log.Warn("stop.refused", "committed_clients", len(pids), "pids", pids, "asked_by", c.pid)
		return wire.Response{Code: wire.CodeRefused, PID: s.pid, Clients: pids,
			Error: "committed clients still use the daemon"}, ""
	}
	return wire.Response{OK: true, PID: s.pid}, "stop requested by pid " + strconv.Itoa(c.pid)
}

// RequestShutdown makes the daemon stop accepting and exit; idempotent.
func (s *Server) RequestShutdown(reason string) {
	s.mu.Lock()
	s.closing = true
	if s.reason == "" {
		s.reason = reason
	}
	ln := s.ln
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	s.doneOnce.Do(func() { close(s.done) })
}

// Shutdown closes every connection and waits (bounded) for the handlers.
func (s *Server) Shutdown() {
	s.RequestShutdown("shutdown")
	s.mu.Lock()
	for _, c := range s.clients {
		c.conn.Close()
	}
	s.mu.Unlock()
	s.ui.stop()
	waited := make(chan struct{})
	go func() { s.handlers.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		s.opts.Log.Warn("daemon.handlers_still_running", "after", "5s")
	}
}

// watch retires an ephemeral daemon once nobody has used it for the idle
// period, and any daemon whose socket was removed or replaced: nobody can
// reach it any more (its runtime dir was deleted), so it would run forever.
// closing is set under the same lock that registers clients, so a
// connection is either served or closed, never half-served.
func (s *Server) watch(owned os.FileInfo) {
	tick := min(max(s.opts.Idle/5, 10*time.Millisecond), 250*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		s.mu.Lock()
		retire := s.mode != Permanent && s.users == 0 && time.Since(s.idleSince) >= s.opts.Idle
		if retire {
			s.closing = true
		}
		s.mu.Unlock()
		if retire {
			s.opts.Log.Info("daemon.idle_retire", "idle", s.opts.Idle)
			s.RequestShutdown("ephemeral and idle for " + s.opts.Idle.String())
			return
		}
		if s.opts.Paths != nil && !os.SameFile(owned, s.socketIdentity()) {
			s.opts.Log.Warn("daemon.orphaned", "socket", s.opts.Paths.Socket)
			s.RequestShutdown("socket " + s.opts.Paths.Socket + " was removed or replaced")
			return
		}
	}
}

// socketIdentity is the socket file as it is now; nil if unwatched or gone.
func (s *Server) socketIdentity() os.FileInfo {
	if s.opts.Paths == nil {
		return nil
	}
	fi, err := os.Stat(s.opts.Paths.Socket)
	if err != nil {
		return nil
	}
	return fi
}

// peerPID is the connecting process's pid as the kernel saw it.
func peerPID(conn net.Conn) int {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return 0
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	_ = raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

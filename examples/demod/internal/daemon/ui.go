package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/reproboard/reproboard/examples/demod/internal/logx"
)

// ui is the optional HTTP status page on 127.0.0.1:port. Binding never
// blocks the daemon: an occupied port is retried in the background.
type ui struct {
	log  *logx.Logger
	page func() any

	mu      sync.Mutex
	port    int
	srv     *http.Server
	quit    chan struct{}
	stopped bool
}

func newUI(log *logx.Logger, page func() any) *ui {
	return &ui{log: log, page: page, quit: make(chan struct{})}
}

func (u *ui) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(u.page())
	})
	return mux
}

// start binds port in the background, retrying while it is occupied.
func (u *ui) start(port int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.stopped {
		return
	}
	if u.port != 0 {
		if u.port != port {
			u.log.Info("ui.port_change_ignored", "port", u.port, "requested", port)
		}
		return
	}
	u.port = port
	go u.bindLoop(port)
}

func (u *ui) bindLoop(port int) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	backoff := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			u.serve(ln)
			return
		}
		if attempt == 1 || attempt%20 == 0 {
			u.log.Warn("ui.bind_retry", "addr", addr, "attempt", attempt, "err", err)
		}
		select {
		case <-u.quit:
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// bindOnce is the port-blocks test breakage: bind now or fail the start.
func (u *ui) bindOnce(port int) error {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	u.mu.Lock()
	u.port = port
	u.mu.Unlock()
	u.serve(ln)
	return nil
}

func (u *ui) serve(ln net.Listener) {
	u.mu.Lock()
	if u.stopped {
		u.mu.Unlock()
		ln.Close()
		return
	}
	u.srv = &http.Server{Handler: u.handler(), ReadHeaderTimeout: 5 * time.Second}
	srv := u.srv
	u.mu.Unlock()
	u.log.Info("ui.listening", "addr", ln.Addr().String())
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			u.log.Error("ui.serve_failed", "err", err)
		}
	}()
}

func (u *ui) stop() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.stopped {
		return
	}
	u.stopped = true
	close(u.quit)
	if u.srv != nil {
		_ = u.srv.Close()
	}
}

// statusPage is what the UI serves.
func (s *Server) statusPage() any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var entries int
	var cached int64
	for _, c := range s.clients {
		if c.session != nil {
			n, b := c.session.CacheStats()
			entries += n
			cached += b
		}
	}
	wal := int64(0)
	if s.opts.WALSize != nil {
		wal = s.opts.WALSize()
	}
	// The Go heap as the runtime sees it: live bytes after the last GC, and
	// bytes allocated so far (per-op garbage is a meter's noise floor).
	heap := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(heap)
	return map[string]any{
		"pid": s.pid, "mode": s.mode, "committed_clients": s.committedPIDs(),
		"go_heap_live_bytes": heap[0].Value.Uint64(), "go_heap_allocs_bytes": heap[1].Value.Uint64(),
		"connections": len(s.clients), "cache_entries": entries, "cache_bytes": cached,
		"leaked_bytes": s.opts.Service.LeakedBytes(), "wal_bytes": wal,
	}
}

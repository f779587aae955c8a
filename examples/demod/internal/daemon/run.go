package daemon

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/reproboard/reproboard/examples/demod/internal/config"
	"github.com/reproboard/reproboard/examples/demod/internal/configdb"
	"github.com/reproboard/reproboard/examples/demod/internal/logx"
	"github.com/reproboard/reproboard/examples/demod/internal/rendezvous"
	"github.com/reproboard/reproboard/examples/demod/internal/store"
	"github.com/reproboard/reproboard/examples/demod/internal/tools"
)

// lockWait bounds how long a new daemon waits for a retiring one to let go.
const lockWait = 10 * time.Second

// Run is the daemon process's whole life: take the daemon lock, open the
// databases, answer on the socket, and clean up on the way out (the lock
// is released last, so nobody sees the lock free with our socket still up).
func Run(env config.Env, mode string, log *logx.Logger) error {
	p := rendezvous.For(env.RuntimeDir)
	pid := os.Getpid()
	lock, err := rendezvous.AcquireLock(p.Lock, lockWait, func() bool {
		_, err := rendezvous.Status(p)
		return err == nil
	})
	if rendezvous.IsGaveUp(err) {
		log.Info("daemon.not_needed", "pid", pid, "reason", "another daemon answers on "+p.Socket)
		return nil
	}
	if err != nil {
		return err
	}
	defer lock.Release()

	cfg, err := configdb.Open(filepath.Join(env.CacheDir, "_config.db"), log)
	if err != nil {
		// Settings are a convenience; the tools work without them.
		log.Error("config_db.open_failed", "err", err)
		cfg = nil
	} else {
		defer cfg.Close()
	}
	storeOpts := store.Options{}
	if env.Fix581 {
		storeOpts.TruncateEvery = env.CheckpointEvery
	}
	st, err := store.Open(filepath.Join(env.CacheDir, "store.db"), storeOpts)
	if err != nil {
		return fmt.Errorf("opening the store: %w", err)
	}
	defer st.Close()
	svc := tools.NewService(st, tools.Options{Fix581: env.Fix581, CacheMax: env.QueryCacheMax, LeakBytes: env.LeakBytes})

	// Only the lock holder may touch the socket path: a leftover from a
	// kill -9 is ours to remove now.
	_ = os.Remove(p.Socket)
	ln, err := net.Listen("unix", p.Socket)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", p.Socket, err)
	}
	_ = os.Chmod(p.Socket, 0o600)
	defer os.Remove(p.PIDFile)
	defer os.Remove(p.Socket)
	if err := rendezvous.WritePIDFile(p, pid, mode); err != nil {
		log.Warn("daemon.pid_file_failed", "err", err)
	}

	srv := New(Options{
		Mode: mode, Idle: env.EphemeralIdle, MaxClients: env.MaxClients, Break: env.Break,
		Log: log, Service: svc, Config: cfg, Paths: &p, WALSize: st.WALSize,
	})
	log.Info("daemon.started", "pid", pid, "mode", mode, "socket", p.Socket,
		"fix_581", env.Fix581, "idle", env.EphemeralIdle, "break", env.Break)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		select {
		case sig := <-sigs:
			srv.RequestShutdown("signal " + sig.String())
		case <-srv.Done():
		}
	}()

	go srv.Serve(ln)
	<-srv.Done()
	srv.Shutdown()
	log.Info("daemon.exited", "pid", pid, "reason", srv.Reason())
	return nil
}

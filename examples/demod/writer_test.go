package main_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// holdConfigWriter takes _config.db's write lock on a dedicated connection,
// as another process's BEGIN IMMEDIATE would; release closes it.
func (s *sandbox) holdConfigWriter() (release func()) {
	s.t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.cache, "_config.db"))
	if err != nil {
		s.t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		s.t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { conn.Close(); db.Close() }) }
	s.t.Cleanup(release)
	return release
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startUnderHeldWriter runs `daemon start --port` while _config.db's write
// lock is held, releasing it hold after the daemon logged its wait (or
// when the client exits first). It returns the client's result and
// whether the client exited while the lock was still held.
func (s *sandbox) startUnderHeldWriter(hold time.Duration) (result, bool) {
	s.t.Helper()
	warm := s.must("daemon", "start") // creates _config.db
	s.must("daemon", "stop")
	waitDead(s.t, pidFrom(warm.stdout))
	release := s.holdConfigWriter()

	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := s.command(ctx, "daemon", "start", fmt.Sprintf("--port=%d", freePort(s.t)))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	exitedUnderLock := false
	var waitedAt time.Time
	deadline := time.Now().Add(15 * time.Second)
loop:
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			exitedUnderLock = true
			break loop
		case <-time.After(20 * time.Millisecond):
		}
		if waitedAt.IsZero() && strings.Contains(s.log(), "config_db.busy_wait") {
			waitedAt = time.Now()
		}
		if !waitedAt.IsZero() && time.Since(waitedAt) >= hold {
			break
		}
	}
	if waitedAt.IsZero() && !exitedUnderLock {
		s.t.Fatalf("the daemon never logged config_db.busy_wait within 15s; log:\n%s", tail(s.log(), 1500))
	}
	release()
	select {
	case <-exited:
	case <-time.After(commandTimeout):
		s.t.Fatal("daemon start still running 30s after the writer released the lock")
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}, exitedUnderLock
}

func TestStartWaitsForAHeldConfigWriter(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	r, exitedUnderLock := s.startUnderHeldWriter(1500 * time.Millisecond)
	if exitedUnderLock || r.code != 0 || !strings.Contains(r.stdout, "daemon: started (permanent, pid") {
		t.Fatalf("daemon start --port must wait out the writer (exited under lock: %v): %s", exitedUnderLock, r)
	}
	if !strings.Contains(s.log(), "config_db.busy_resolved") {
		t.Errorf("the daemon did not log that the wait resolved:\n%s", tail(s.log(), 1500))
	}
	s.must("daemon", "stop")
}

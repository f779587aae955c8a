package configdb

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reproboard/reproboard/examples/demod/internal/logx"
	"github.com/reproboard/reproboard/harness/wait"
)

// syncBuffer is a log sink the test can read while the writer runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// holdWriteLock takes _config.db's write lock from another connection,
// the way another process's BEGIN IMMEDIATE would.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			conn.Close() // closing drops the lock, whatever state the transaction is in
			db.Close()
		})
	}
	t.Cleanup(release)
	return release
}

func TestSetWaitsForAHeldWriterAndLogsIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "_config.db")
	var log syncBuffer
	d, err := Open(path, logx.New(&log))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	release := holdWriteLock(t, path)

	done := make(chan error, 1)
	go func() { done <- d.Set("ui_port", "8080") }()
	err = wait.For(context.Background(), "Set to log config_db.busy_wait", 2*time.Second, 10*time.Millisecond, func() wait.Result {
		if strings.Contains(log.String(), "config_db.busy_wait") {
			return wait.Done()
		}
		return wait.Continue("log %q", log.String())
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the writer keeps the lock a while longer
	select {
	case err := <-done:
		t.Fatalf("Set returned while the writer still held the lock: %v", err)
	default:
	}
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Set after the writer left: %v", err)
		}
	case <-time.After(BusyBudget):
		t.Fatal("Set did not finish after the writer released the lock")
	}
	if v, ok, err := d.Get("ui_port"); err != nil || !ok || v != "8080" {
		t.Errorf("ui_port = %q, %v, %v; want 8080", v, ok, err)
	}
	if !strings.Contains(log.String(), "config_db.busy_resolved") {
		t.Errorf("resolution not logged:\n%s", log.String())
	}
}

func TestSetGivesUpAfterItsBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "_config.db")
	var log syncBuffer
	d, err := Open(path, logx.New(&log))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.budget = 200 * time.Millisecond
	holdWriteLock(t, path)
	start := time.Now()
	err = d.Set("ui_port", "1")
	if err == nil || !IsBusy(err) {
		t.Fatalf("want a busy error after the budget, got %v", err)
	}
	if took := time.Since(start); took < d.budget || took > d.budget+time.Second {
		t.Errorf("gave up after %s, want about %s", took, d.budget)
	}
	if !strings.Contains(log.String(), "config_db.busy_gave_up") {
		t.Errorf("giving up not logged:\n%s", log.String())
	}
}

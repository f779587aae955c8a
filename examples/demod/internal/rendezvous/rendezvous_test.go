package rendezvous

import (
	"os"
	"testing"
	"time"
)

func TestClearStaleOnlyWhenTheLockIsFree(t *testing.T) {
	p := For(t.TempDir())
	for _, f := range []string{p.Socket, p.PIDFile} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	live, ok, err := TryLock(p.Lock)
	if err != nil || !ok {
		t.Fatalf("taking the daemon lock: %v %v", ok, err)
	}
	if ClearStale(p) || !LockHeld(p) {
		t.Fatal("ClearStale touched a live daemon's files")
	}
	if _, err := os.Stat(p.Socket); err != nil {
		t.Fatalf("live socket removed: %v", err)
	}
	live.Release() // what the kernel does when the daemon is killed
	if !ClearStale(p) {
		t.Fatal("stale files not cleared once the lock was free")
	}
	for _, f := range []string{p.Socket, p.PIDFile} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", f, err)
		}
	}
}

func TestAcquireLockIsBoundedAndSaysWhy(t *testing.T) {
	p := For(t.TempDir())
	held, _, _ := TryLock(p.Lock)
	defer held.Release()
	start := time.Now()
	_, err := AcquireLock(p.Lock, 200*time.Millisecond, nil)
	if err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("want a bounded failure, got %v after %s", err, time.Since(start))
	}
	if _, err := AcquireLock(p.Lock, time.Second, func() bool { return true }); !IsGaveUp(err) {
		t.Errorf("giveUp did not end the wait: %v", err)
	}
}

func TestPIDFileRoundTrip(t *testing.T) {
	p := For(t.TempDir())
	if err := WritePIDFile(p, 4242, "permanent"); err != nil {
		t.Fatal(err)
	}
	if pid, mode, ok := ReadPIDFile(p); !ok || pid != 4242 || mode != "permanent" {
		t.Errorf("got %d %q %v", pid, mode, ok)
	}
}

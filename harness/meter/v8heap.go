package meter

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

//go:embed v8heap.js
var v8heapJS []byte

// V8HeapDirEnv names the directory where a Node.js target preloaded with
// the probe (V8HeapSetup) writes its heap after a forced GC.
const V8HeapDirEnv = "REPROBOARD_V8HEAP_DIR"

// V8HeapSetup writes the V8 heap probe into dir and returns the
// environment that loads it into a Node.js process started with it:
// NODE_OPTIONS=--require=dir/v8heap.js and REPROBOARD_V8HEAP_DIR=dir.
// The v8heap metric then reads that process's heap in use after a full
// collection, which lazy heap sizing does not move.
func V8HeapSetup(dir string) (nodeOptions string, env []string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	p := filepath.Join(dir, "v8heap.js")
	if err := os.WriteFile(p, v8heapJS, 0o600); err != nil {
		return "", nil, err
	}
	return "--require=" + p, []string{V8HeapDirEnv + "=" + dir}, nil
}

// v8heapTimeout bounds one reading: a full GC of a large heap takes a while.
const v8heapTimeout = 5 * time.Second

// readV8Heap asks process pid for its heap after a forced GC (SIGUSR2 to
// the probe) and waits for the answer in its file.
func readV8Heap(pid int, environ map[string]string) (float64, error) {
	dir := environ[V8HeapDirEnv]
	if dir == "" {
		return 0, fmt.Errorf("process %d has no %s: start the Node.js target with NODE_OPTIONS=$NODE_V8HEAP (the V8 heap probe) to read v8heap", pid, V8HeapDirEnv)
	}
	file := filepath.Join(dir, strconv.Itoa(pid)+".heap")
	before, _, _ := readHeapFile(file)
	if err := syscall.Kill(pid, syscall.SIGUSR2); err != nil {
		return 0, fmt.Errorf("process %d: signalling the V8 heap probe: %v", pid, err)
	}
	deadline := time.Now().Add(v8heapTimeout)
	last := "no answer"
	for {
		seq, v, err := readHeapFile(file)
		switch {
		case err == nil && seq > before:
			return v, nil
		case err != nil && !os.IsNotExist(err):
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("process %d: the V8 heap probe did not answer in %s (waited for %s; last saw: %s): is it a Node.js process started with NODE_OPTIONS=$NODE_V8HEAP?", pid, v8heapTimeout, file, last)
		}
		time.Sleep(time.Millisecond)
	}
}

func readHeapFile(file string) (int, float64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("%s: want \"seq bytes\", got %q", file, b)
	}
	seq, err1 := strconv.Atoi(f[0])
	v, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%s: want \"seq bytes\", got %q", file, b)
	}
	return seq, v, nil
}

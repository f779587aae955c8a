// Package logx writes the daemon log: one greppable line per event,
// `time level event key=value ...`.
package logx

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Logger appends event lines to a writer; safe for concurrent use.
type Logger struct {
	mu sync.Mutex
	w  io.Writer
	c  io.Closer
}

// New logs to w.
func New(w io.Writer) *Logger { return &Logger{w: w} }

// Discard drops every line (tests that do not read the log).
func Discard() *Logger { return New(io.Discard) }

// Open appends to path, creating its directory. O_APPEND keeps lines from
// several processes (client, daemon, the daemon's own stderr) whole.
func Open(path string) (*Logger, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &Logger{w: f, c: f}, nil
}

// Close closes the underlying file, if Open made one.
func (l *Logger) Close() error {
	if l.c == nil {
		return nil
	}
	return l.c.Close()
}

// Info logs an informational event.
func (l *Logger) Info(event string, kv ...any) { l.log("INFO", event, kv) }

// Warn logs an event someone may need to act on.
func (l *Logger) Warn(event string, kv ...any) { l.log("WARN", event, kv) }

// Error logs a failure.
func (l *Logger) Error(event string, kv ...any) { l.log("ERROR", event, kv) }

func (l *Logger) log(level, event string, kv []any) {
	var b strings.Builder
	b.WriteString(time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	b.WriteByte(' ')
	b.WriteString(level)
	b.WriteByte(' ')
	b.WriteString(event)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=%s", kv[i], value(kv[i+1]))
	}
	b.WriteByte('\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, b.String())
}

// value quotes only when needed, so `grep key=value` works for plain values.
func value(v any) string {
	s := fmt.Sprint(v)
	if s == "" || strings.ContainsAny(s, " \t\n\"=") {
		return strconv.Quote(s)
	}
	return s
}

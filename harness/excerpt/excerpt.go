// Package excerpt keeps and shows the end of a command's output: runtimes
// print their preamble first and the error last, so a failure shows the
// tail, and a target that prints gigabytes must not grow the harness.
package excerpt

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// DefaultLimit is how many bytes of output a failure shows.
const DefaultLimit = 1500

// Excerpt returns the last limit bytes of text (DefaultLimit when limit <= 0),
// preceded by a header "...(N chars elided)...\n" when anything was cut. The
// cut never splits a UTF-8 character.
func Excerpt(text string, limit int) string {
	if limit <= 0 {
		limit = DefaultLimit
	}
	if len(text) <= limit {
		return text
	}
	cut := len(text) - limit
	for cut < len(text) && !utf8.RuneStart(text[cut]) {
		cut++
	}
	return fmt.Sprintf("...(%d chars elided)...\n%s", cut, text[cut:])
}

// DefaultKeep is how many bytes a Tail keeps when none is given.
const DefaultKeep = 64 << 10

// Tail is an io.Writer that keeps only the last Keep bytes written and
// counts them all. It is safe for concurrent writers (stdout and stderr of
// one process share one Tail).
type Tail struct {
	mu    sync.Mutex
	keep  int
	buf   []byte // ring of capacity keep
	start int    // index of the oldest byte in buf when full
	total int64
}

// NewTail returns a Tail keeping the last keep bytes (DefaultKeep if <= 0).
func NewTail(keep int) *Tail {
	if keep <= 0 {
		keep = DefaultKeep
	}
	return &Tail{keep: keep}
}

// Write never fails and never grows past keep bytes.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.total += int64(n)
	if n >= t.keep {
		t.buf = append(t.buf[:0], p[n-t.keep:]...)
		t.start = 0
		return n, nil
	}
	if room := t.keep - len(t.buf); room > 0 {
		take := min(room, len(p))
		t.buf = append(t.buf, p[:take]...)
		p = p[take:]
	}
	for len(p) > 0 { // full: overwrite the oldest bytes
		c := copy(t.buf[t.start:], p)
		p = p[c:]
		t.start = (t.start + c) % t.keep
	}
	return n, nil
}

// Total is the number of bytes ever written.
func (t *Tail) Total() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// String returns the kept bytes; when earlier bytes were dropped it starts
// with the header "...(N chars elided)...\n" and at a UTF-8 boundary.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := make([]byte, 0, len(t.buf))
	kept = append(kept, t.buf[t.start:]...)
	kept = append(kept, t.buf[:t.start]...)
	dropped := t.total - int64(len(kept))
	if dropped == 0 {
		return string(kept)
	}
	i := 0
	for i < len(kept) && !utf8.RuneStart(kept[i]) {
		i++
	}
	return fmt.Sprintf("...(%d chars elided)...\n%s", dropped+int64(i), kept[i:])
}

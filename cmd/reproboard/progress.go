package main

import (
	"fmt"
	"io"
	"sync"

	"github.com/reproboard/reproboard/harness/board"
)

// progress shows a run as it goes: on a terminal one line that updates in
// place ("[done/total] current-section"), elsewhere (CI logs) one line per
// finished section.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	total   int
	done    int
	current string
	dirty   bool
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, tty: isTerminal(w), total: total}
}

func (p *progress) started(test string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.current = test
	p.redraw()
}

// finished counts an executed section; skipped ones (dry run, another
// shard) are not sections of this run.
func (p *progress) finished(s board.Section) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if p.tty {
		p.redraw()
		return
	}
	fmt.Fprintf(p.w, "%-12s  %s  %.1fs\n", s.Outcome, s.Test, s.Duration)
}

func (p *progress) redraw() {
	if !p.tty {
		return
	}
	line := fmt.Sprintf("[%d/%d] %s", p.done, p.total, p.current)
	if len(line) > 120 {
		line = line[:117] + "..."
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", line)
	p.dirty = true
}

// clear removes the updating line before the report is printed.
func (p *progress) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dirty {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.dirty = false
	}
}

package meter

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// Progress shows a long run's advance on one rewritten terminal line. It
// writes only when stderr is a terminal, so CI logs and `go test -json`
// output stay free of carriage returns. A nil *Progress does nothing.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	total int
	last  time.Time
	wrote bool
}

// NewProgress returns a progress line for a run of total ops, or nil when
// stderr is not a terminal.
func NewProgress(label string, total int) *Progress {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil
	}
	return newProgress(os.Stderr, label, total)
}

func newProgress(w io.Writer, label string, total int) *Progress {
	return &Progress{w: w, label: label, total: total}
}

// Update shows ops done and the latest reading, at most ten times a second.
func (p *Progress) Update(ops int, r Reading) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.wrote && now.Sub(p.last) < 100*time.Millisecond && ops < p.total {
		return
	}
	p.last, p.wrote = now, true
	if p.total > 0 {
		fmt.Fprintf(p.w, "\r\x1b[K%s %d/%d ops %s", p.label, ops, p.total, r)
	} else {
		fmt.Fprintf(p.w, "\r\x1b[K%s %d ops %s", p.label, ops, r)
	}
}

// Done ends the progress line.
func (p *Progress) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wrote {
		fmt.Fprint(p.w, "\n")
	}
}

// SetTotal changes the ops the line counts towards (an adaptive run's
// next round).
func (p *Progress) SetTotal(total int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.total = total
	p.mu.Unlock()
}

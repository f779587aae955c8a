package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/report"
)

// progress shows a run as it goes: on a terminal one line that updates in
// place and never wraps ("[done/total] running: the sections running
// longest, with their times"), elsewhere (CI logs) one line per finished
// section.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	width   int // columns; the line stays one shorter, so it never wraps
	total   int
	done    int
	running map[string]time.Time // section -> when it started
	parents map[string]bool      // tests that turned out to have subtests
	dirty   bool
	now     func() time.Time
	stop    chan struct{}
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, tty: isTerminal(w), width: termWidth(w), total: total,
		running: map[string]time.Time{}, parents: map[string]bool{}, now: time.Now}
	if p.width <= 0 {
		p.width = report.DefaultWidth
	}
	if p.tty {
		// The times on the line grow while nothing starts or ends.
		p.stop = make(chan struct{})
		go func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-p.stop:
					return
				case <-tick.C:
					p.mu.Lock()
					p.redraw()
					p.mu.Unlock()
				}
			}
		}()
	}
	return p
}

// started records a test that began. A test whose subtest begins is a
// parent, not a section: it leaves the line.
func (p *progress) started(test string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for anc := test; strings.Contains(anc, "/"); {
		anc = anc[:strings.LastIndex(anc, "/")]
		delete(p.running, anc)
		p.parents[anc] = true
	}
	if !p.parents[test] {
		p.running[test] = p.now()
	}
	p.redraw()
}

// finished counts an executed section; skipped ones (dry run, another
// shard) are not sections of this run.
func (p *progress) finished(s board.Section) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	delete(p.running, s.Test)
	if p.tty {
		p.redraw()
		return
	}
	fmt.Fprintf(p.w, "%-12s  %s  %.1fs\n", s.Outcome, s.Test, s.Duration)
}

// line is the progress line: the count, then the sections running
// longest, as many as fit in width-1 columns.
func (p *progress) line() string {
	head := fmt.Sprintf("[%d/%d]", p.done, p.total)
	if len(p.running) == 0 {
		return head
	}
	names := make([]string, 0, len(p.running))
	for name := range p.running {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := p.running[a].Compare(p.running[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	now := p.now()
	limit := p.width - 1
	line := fmt.Sprintf("%s %d running:", head, len(names))
	for i, name := range names {
		item := fmt.Sprintf(" %s %ds", name, int(now.Sub(p.running[name]).Seconds()))
		if i > 0 {
			item = "," + item
		}
		more := ""
		if i < len(names)-1 {
			more = fmt.Sprintf(", +%d", len(names)-1-i)
		}
		if len([]rune(line+item+more)) > limit {
			if i == 0 { // the longest-running one always shows, shortened
				room := limit - len([]rune(line+more)) - len(fmt.Sprintf("  %ds", int(now.Sub(p.running[name]).Seconds())))
				return line + fmt.Sprintf(" %s %ds", report.FitMiddle(name, max(room, 1)), int(now.Sub(p.running[name]).Seconds())) + more
			}
			return line + fmt.Sprintf(", +%d", len(names)-i)
		}
		line += item
	}
	return line
}

func (p *progress) redraw() {
	if !p.tty {
		return
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", p.line())
	p.dirty = true
}

// clear removes the updating line before the report is printed.
func (p *progress) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	if p.dirty {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.dirty = false
	}
}

// Package wait is reproboard's one waiter: every wait is bounded, and when
// it gives up it says what it waited for and what it saw last (the style of
// gotest.tools/poll).
package wait

import (
	"context"
	"fmt"
	"time"
)

// Result is what one check says.
type Result struct {
	done bool
	err  error
	seen string
}

// Done ends the wait successfully.
func Done() Result { return Result{done: true} }

// Continue says "not yet" and what was seen, for the timeout message.
func Continue(seen string, args ...any) Result {
	if len(args) > 0 {
		seen = fmt.Sprintf(seen, args...)
	}
	return Result{seen: seen}
}

// Fail ends the wait with err: waiting longer cannot help.
func Fail(err error) Result { return Result{err: err} }

// TimeoutError is returned when the wait gave up.
type TimeoutError struct {
	What     string
	After    time.Duration
	LastSeen string
}

func (e *TimeoutError) Error() string {
	seen := e.LastSeen
	if seen == "" {
		seen = "(nothing)"
	}
	return fmt.Sprintf("timed out after %s waiting for %s; last saw: %s", e.After.Round(time.Millisecond), e.What, seen)
}

// DefaultEvery is the pause between checks.
const DefaultEvery = 50 * time.Millisecond

// For calls check until it is done or fails, or until timeout (or ctx)
// ends the wait. The first check runs at once.
func For(ctx context.Context, what string, timeout, every time.Duration, check func() Result) error {
	if every <= 0 {
		every = DefaultEvery
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		r := check()
		if r.err != nil {
			return r.err
		}
		if r.done {
			return nil
		}
		last = r.seen
		select {
		case <-ctx.Done():
			return &TimeoutError{What: what, After: time.Since(start), LastSeen: last}
		case <-time.After(every):
		}
	}
}

// Pending reports whether the check said "not yet".
func (r Result) Pending() bool { return !r.done && r.err == nil }

// Seen is what a "not yet" check saw; ok is false for Done and Fail.
func (r Result) Seen() (seen string, ok bool) { return r.seen, r.Pending() }

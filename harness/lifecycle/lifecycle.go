// Package lifecycle checks, inside a Go test, that code under test gives
// back what it takes across many cycles: heap (HeapGrowth), goroutines
// (NoGoroutineLeak) and entries of a registry (RegistryBounded).
//
// The defaults are meant to be right for almost every test; a failure says
// what was measured, what it waited for and what it saw last, and names the
// culprit (the leaked goroutines' stacks, the registry's size).
//
// Helpers mark the section RED or INCONCLUSIVE with outcome.Mark when they
// fail, and never mark GREEN: the board keeps the last mark, and a passing
// helper must not hide an earlier failure.
package lifecycle

import (
	"fmt"
	"testing"
	"time"

	"github.com/reproboard/reproboard/harness/meter"
)

// Option tunes a helper; each says which helpers it applies to.
type Option func(*config)

type config struct {
	every     int
	warmup    int // -1: default
	budget    meter.Budget
	budgetErr error
	timeout   time.Duration
	max       int // -1: no max
	ignore    []string
}

// Defaults.
const (
	DefaultEvery   = 10                    // HeapGrowth samples every 10 cycles
	DefaultBudget  = "1KiB/op"             // HeapGrowth's live-heap budget per cycle
	DefaultTimeout = 2 * time.Second       // bounded waits of NoGoroutineLeak and RegistryBounded
	pollEvery      = 10 * time.Millisecond // waits check this often
)

// Every makes HeapGrowth force a GC and sample the live heap every k cycles.
func Every(k int) Option { return func(c *config) { c.every = k } }

// Warmup makes HeapGrowth discard the samples of the first cycles (caches
// filling, sync.Once). Default: a tenth of the cycles, at least one batch.
func Warmup(cycles int) Option { return func(c *config) { c.warmup = cycles } }

// Budget sets HeapGrowth's budget in human units: "1KiB/op" per cycle, or
// "2MiB" in total over the measured cycles.
func Budget(s string) Option {
	return func(c *config) {
		c.budget, c.budgetErr = meter.ParseBudget(s)
		if c.budgetErr == nil && c.budget.Unit != meter.Bytes {
			c.budgetErr = fmt.Errorf("budget %q is a count; the heap is measured in bytes (e.g. 1KiB/op)", s)
		}
	}
}

// Timeout bounds the waits of NoGoroutineLeak and RegistryBounded.
func Timeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// Max makes RegistryBounded fail as soon as size() exceeds n during churn.
func Max(n int) Option { return func(c *config) { c.max = n } }

// IgnoreGoroutine makes NoGoroutineLeak ignore goroutines whose stack
// mentions fn (a function name such as "net/http.(*persistConn).readLoop").
func IgnoreGoroutine(fn string) Option { return func(c *config) { c.ignore = append(c.ignore, fn) } }

func configure(t testing.TB, opts []Option) *config {
	t.Helper()
	c := &config{every: DefaultEvery, warmup: -1, budget: meter.MustParseBudget(DefaultBudget), timeout: DefaultTimeout, max: -1}
	for _, o := range opts {
		o(c)
	}
	if c.budgetErr != nil {
		t.Fatalf("lifecycle: %v", c.budgetErr)
	}
	if c.every < 1 {
		t.Fatalf("lifecycle: Every(%d): want 1 or more cycles between samples", c.every)
	}
	if c.timeout <= 0 {
		t.Fatalf("lifecycle: Timeout(%s): want a positive duration", c.timeout)
	}
	return c
}

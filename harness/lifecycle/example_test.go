package lifecycle_test

import (
	"sync"
	"testing"

	"github.com/reproboard/reproboard/harness/lifecycle"
)

// In a Go test of your own code: the live heap after GC, every k cycles,
// must not grow past the budget per cycle; goroutines started by the code
// under test must be gone when the test ends.
func ExampleHeapGrowth() {
	testCache := func(t *testing.T) {
		lifecycle.NoGoroutineLeak(t)
		cache := map[int][]byte{}
		lifecycle.HeapGrowth(t, 2000, func(i int) {
			cache[i%100] = make([]byte, 512) // bounded: 100 entries at most
		}, lifecycle.Budget("64B/op"))
	}
	_ = testCache
}

// A registry (sessions, connections, subscriptions) is empty again after
// churn: every cycle adds and removes one entry.
func ExampleRegistryBounded() {
	testSessions := func(t *testing.T) {
		var mu sync.Mutex
		sessions := map[int]bool{}
		lifecycle.RegistryBounded(t, 500, func(i int) {
			mu.Lock()
			sessions[i] = true
			delete(sessions, i) // the close path under test
			mu.Unlock()
		}, func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(sessions)
		}, lifecycle.Max(0))
	}
	_ = testSessions
}

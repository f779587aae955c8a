package selftest

import (
	"os"
	"testing"
	"time"

	"github.com/reproboard/reproboard/harness/outcome"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChild is the child the tests below run.
func TestChild(t *testing.T) {
	if os.Getenv("SELFTEST_CHILD") == "" {
		t.Skip("child only")
	}
	t.Run("a.b", func(t *testing.T) {
		t.Attr("reproboard.outcome", "GREEN")
		t.Attr("reproboard.outcome", os.Getenv("SELFTEST_CHILD"))
		if os.Getenv("SELFTEST_CHILD") == "RED" {
			t.Fatal("failing on purpose")
		}
	})
	t.Run("ab", func(t *testing.T) { t.Fatal("must not run: the pattern is exact") })
	t.Run("selected", func(t *testing.T) {
		outcome.Select(t)
		t.Attr("ran", "yes")
	})
}

// A parent running as one shard of a board, or in its dry run, starts its
// child to run in full: the child must not skip as another shard's.
func TestChildDoesNotInheritShardOrDryRun(t *testing.T) {
	shard := "1/2"
	if outcome.InShard("TestChild/selected", 1, 2) {
		shard = "2/2"
	}
	for _, env := range [][2]string{{outcome.EnvShard, shard}, {outcome.EnvDryRun, "1"}} {
		t.Run(env[0], func(t *testing.T) {
			t.Setenv(env[0], env[1])
			r := Run(Child{Run: []string{"TestChild", "selected"}, Env: []string{"SELFTEST_CHILD=GREEN"}})
			require.NoError(t, r.Err, r.Output)
			assert.Equal(t, "yes", r.Attr("TestChild/selected", "ran"), r.Output)
		})
	}
}

func TestRunPassingChild(t *testing.T) {
	r := Run(Child{Run: []string{"TestChild", "a.b"}, Env: []string{"SELFTEST_CHILD=GREEN"}})
	require.NoError(t, r.Err, r.Output)
	assert.Equal(t, "GREEN", r.Attr("TestChild/a.b", "reproboard.outcome"))
	assert.NotContains(t, r.Output, "must not run")
	d, ok := r.Elapsed("TestChild/a.b")
	assert.True(t, ok)
	assert.Less(t, d, time.Minute)
}

func TestRunFailingChild(t *testing.T) {
	r := Run(Child{Run: []string{"TestChild", "a.b"}, Env: []string{"SELFTEST_CHILD=RED"}})
	require.Error(t, r.Err)
	assert.Equal(t, "RED", r.Attr("TestChild/a.b", "reproboard.outcome"), "the last attr wins")
	assert.Contains(t, r.Output, "failing on purpose")
	assert.Equal(t, "", r.Attr("TestChild/a.b", "no.such.key"))
}

func TestPattern(t *testing.T) {
	assert.Equal(t, `^TestGuards$/^daemon$/^a\.b$`, Pattern("TestGuards", "daemon", "a.b"))
}

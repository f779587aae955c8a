package outcome

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExitCode(t *testing.T) {
	cases := []struct {
		name     string
		outcomes []Outcome
		gating   Gating
		strict   bool
		want     int
	}{
		{"nothing ran", nil, Gate, false, ExitSetup},
		{"all green", []Outcome{Green, Green}, Gate, false, ExitGreen},
		{"red gates", []Outcome{Green, Red}, Gate, false, ExitRegression},
		{"red is data on a bug-repro board", []Outcome{Red}, NoGate, false, ExitGreen},
		{"inconclusive gates", []Outcome{Inconclusive}, Gate, false, ExitRegression},
		{"known red is fine", []Outcome{KnownRed, Green}, Gate, false, ExitGreen},
		{"fixed is loud, not failing", []Outcome{Fixed}, Gate, false, ExitGreen},
		{"fixed under strict", []Outcome{Fixed}, NoGate, true, ExitRegression},
		{"setup fail alone", []Outcome{SetupFail, Green}, Gate, false, ExitSetup},
		{"setup fail and red", []Outcome{SetupFail, Red}, Gate, false, ExitRegression},
		{"setup fail on a bug-repro board", []Outcome{SetupFail, Red}, NoGate, false, ExitSetup},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, ExitCode(c.outcomes, c.gating, c.strict), c.name)
	}
}

func TestParse(t *testing.T) {
	for _, o := range All {
		got, err := Parse(string(o))
		require.NoError(t, err)
		assert.Equal(t, o, got)
	}
	_, err := Parse("PURPLE")
	assert.ErrorContains(t, err, `unknown outcome "PURPLE"`)
}

func TestShardsPartitionEvenly(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		counts := make([]int, n)
		for i := range 400 {
			name := fmt.Sprintf("TestGuards/daemon/section-%d", i)
			hits := 0
			for k := 1; k <= n; k++ {
				if InShard(name, k, n) {
					counts[k-1]++
					hits++
				}
			}
			require.Equal(t, 1, hits, "%s belongs to exactly one shard", name)
		}
		for k, c := range counts {
			assert.InDelta(t, 400/n, c, float64(400/n)/3, "shard %d/%d got %d of 400", k+1, n, c)
		}
	}
	_, _, err := ParseShard("3/2")
	assert.Error(t, err)
	k, n, err := ParseShard("2/4")
	require.NoError(t, err)
	assert.Equal(t, [2]int{2, 4}, [2]int{k, n})
}

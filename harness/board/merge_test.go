package board

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func shardBoards(t *testing.T, n int, key *RunKey) []*Board {
	t.Helper()
	var parts []*Board
	for k := 1; k <= n; k++ {
		res := &Results{Sections: []SectionResult{{Package: "p", Test: fmt.Sprintf("TestS/%d", k), Action: "pass"}}}
		parts = append(parts, Classify(res, nil, Options{Board: "guards", Gating: true, Shard: fmt.Sprintf("%d/%d", k, n), Run: key}))
	}
	return parts
}

// A merge of shard 1/2 alone was green: a shard job that died before it
// uploaded its report turned the merged board green.
func TestMergeRefusesAnIncompleteShardSet(t *testing.T) {
	key := &RunKey{Config: "sha256:c", Listing: "sha256:l"}
	parts := shardBoards(t, 3, key)
	_, err := Merge(parts[:1], []string{"s1.json"}, MergeOptions{})
	require.Error(t, err)
	assert.Equal(t, "board guards: shard(s) 2/3, 3/3 missing; merge needs every shard 1..n of one run (got 1/3 in s1.json): give the missing reports, or pass --allow-partial to merge anyway and report the board PARTIAL", err.Error())

	m, err := Merge(parts, []string{"s1.json", "s2.json", "s3.json"}, MergeOptions{})
	require.NoError(t, err)
	assert.Equal(t, 0, m.ExitCode)
	assert.Equal(t, []string{"1/3", "2/3", "3/3"}, m.Merged)
	assert.Empty(t, m.Partial)
}

func TestMergeAllowPartialIsNeverGreen(t *testing.T) {
	parts := shardBoards(t, 2, &RunKey{Config: "sha256:c", Listing: "sha256:l"})
	m, err := Merge(parts[1:], []string{"s2.json"}, MergeOptions{AllowPartial: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"1/2"}, m.Partial)
	assert.Equal(t, 2, m.ExitCode, "a partial board did not verify everything")
	assert.Contains(t, m.ExitReason, "PARTIAL: shard(s) 1/2 missing")
}

func TestMergeRefusesDuplicateAndForeignShards(t *testing.T) {
	key := &RunKey{Config: "sha256:c", Listing: "sha256:l"}
	parts := shardBoards(t, 2, key)
	_, err := Merge([]*Board{parts[0], parts[0]}, []string{"a.json", "b.json"}, MergeOptions{AllowPartial: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shard 1/2 of board guards is given twice, a.json and b.json")

	other := shardBoards(t, 2, &RunKey{Config: "sha256:other", Listing: "sha256:l"})
	_, err = Merge([]*Board{parts[0], other[1]}, []string{"a.json", "b.json"}, MergeOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "b.json ran under another boards.yaml (sha256:other) than a.json (sha256:c)")

	listing := shardBoards(t, 2, &RunKey{Config: "sha256:c", Listing: "sha256:x"})
	_, err = Merge([]*Board{parts[0], listing[1]}, []string{"a.json", "b.json"}, MergeOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "b.json listed other sections of board guards")

	three := shardBoards(t, 3, key)
	_, err = Merge([]*Board{parts[0], three[1]}, []string{"a.json", "b.json"}, MergeOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "b.json is shard 2/3 but a.json is shard 1/2")

	whole := Classify(&Results{}, nil, Options{Board: "guards", Gating: true, Run: key})
	_, err = Merge([]*Board{parts[0], whole}, []string{"a.json", "w.json"}, MergeOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "w.json is an unsharded run of board guards")
}

package script

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the README's generated script reference")

const (
	refBegin = "<!-- script reference: generated from harness/script's usage strings by `go test ./harness/script -run TestReadmeReference -update`; do not edit -->\n"
	refEnd   = "<!-- end of the script reference -->\n"
)

// The README's command table is the text the commands' usage strings make:
// a command added, renamed or given a flag without the README following
// fails here. -update rewrites it.
func TestReadmeReference(t *testing.T) {
	const readme = "../../README.md"
	data, err := os.ReadFile(readme)
	require.NoError(t, err)
	text := string(data)
	i, j := strings.Index(text, refBegin), strings.Index(text, refEnd)
	require.True(t, i >= 0 && j > i, "README.md has no generated script reference between\n%s%s", refBegin, refEnd)
	got := text[i+len(refBegin) : j]
	want := Reference()
	if *update {
		require.NoError(t, os.WriteFile(readme, []byte(text[:i+len(refBegin)]+want+text[j:]), 0o644))
		return
	}
	assert.Equal(t, want, got, "README.md's script reference drifted from the code; run go test ./harness/script -run TestReadmeReference -update")
}

// Every command is in the reference, with every flag its usage names.
func TestReferenceListsEveryCommand(t *testing.T) {
	ref := Reference()
	for name, c := range table() {
		assert.Contains(t, ref, "| `"+strings.ReplaceAll(strings.SplitN(c.usage, " — ", 2)[0], "|", `\|`)+"` |", name)
	}
	for _, v := range []string{"$SECTION", "$CACHE", "$RUNTIME", "$HOME", "$TARGET"} {
		assert.Contains(t, ref, "| `"+v+"` |")
	}
	assert.Contains(t, ReferenceText(), "\nleak [")
}

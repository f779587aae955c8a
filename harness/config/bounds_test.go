package config

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const validBase = "targets:\n  d:\n    build: ./d\n    cache_var: C\n    runtime_var: R\nboards:\n  b:\n    packages: [./x]\n    target: d\n    gating: true\n"

// Bombs are the hostile inputs of the size limit or near it; each must be
// refused with file:line:col, allocating well under 64 MiB (the bound the
// issue sets for any input of the size limit).
func bombs() map[string]string {
	var laughs strings.Builder // billion laughs: each level 10 aliases of the one before
	laughs.WriteString("a0: &a0 [lol]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&laughs, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), 10), ","))
	}
	var entries strings.Builder
	entries.WriteString(validBase + "known_red:\n")
	for range 50000 {
		entries.WriteString("- {}\n")
	}
	return map[string]string{
		"nesting":     "targets: " + strings.Repeat("[", 250_000),
		"block nest":  "targets:\n" + strings.Repeat("- ", 120_000) + "x\n",
		"alias":       laughs.String(),
		"50k entries": entries.String(),
	}
}

var posRE = regexp.MustCompile(`^boards\.yaml:\d+:\d+: `)

func TestBombsAreRefusedWithinBounds(t *testing.T) {
	for name, text := range bombs() {
		t.Run(name, func(t *testing.T) {
			require.LessOrEqual(t, len(text), MaxSize, "a bomb of the size limit, not over it")
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := Parse("boards.yaml", []byte(text))
			runtime.ReadMemStats(&after)
			require.Error(t, err)
			lines := strings.Split(err.Error(), "\n")
			assert.LessOrEqual(t, len(lines), MaxErrors+1, "at most MaxErrors errors and a count")
			assert.Regexp(t, posRE, lines[0])
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "allocated while refusing it")
			t.Log(lines[0])
		})
	}
}

func TestBoundsMessages(t *testing.T) {
	long := strings.Repeat("k", 200_000)
	var many strings.Builder
	many.WriteString(validBase + "known_red:\n")
	for i := range 60 {
		fmt.Fprintf(&many, "  - test: TestA%d\n", i)
	}
	for _, tc := range []struct{ name, text, want string }{
		{"over size", strings.Repeat("#", MaxSize+1), "boards.yaml:1:1: the file is 262145 bytes, over the limit of 262144 (256 KiB)"},
		{"140k entries", validBase + "known_red:\n" + strings.Repeat("- {}\n", 140_000), "boards.yaml:1:1: the file is 700140 bytes, over the limit"},
		{"nesting", "targets: " + strings.Repeat("[", 100), "boards.yaml:1:41: nested 33 levels deep, over the limit of 32"},
		{"alias", "a: &x [1]\nb: *x\n", "boards.yaml:2:4: aliases (*name) are not supported"},
		{"NUL raw", validBase + "known_red:\n  - test: TestA\n    issue: 1\n    reason: a\x00b\n    signature: x\n",
			"boards.yaml:14:14: control character U+0000 in the file"},
		{"NUL escaped", validBase + "known_red:\n  - test: TestA\n    issue: 1\n    reason: \"a\\0b\"\n    signature: x\n",
			"boards.yaml:14:13: reason holds the control character U+0000 at byte 1; remove it"},
		{"toolexec", strings.Replace(validBase, "[./x]", "['-toolexec=/tmp/prog', ./x]", 1),
			`boards.yaml:8:16: packages entry "-toolexec=/tmp/prog" starts with -, which go reads as a flag`},
		{"build flag", strings.Replace(validBase, "build: ./d", "build: -exec=x", 1),
			`boards.yaml:3:12: build entry "-exec=x" starts with -, which go reads as a flag`},
		{"issue out of range", validBase + "known_red:\n  - test: TestA\n    issue: 99999999999999999999\n    reason: r\n    signature: x\n",
			"boards.yaml:13:12: issue 99999999999999999999 is out of range; an issue number is below 2^31"},
		{"long key cut", validBase + long + ": 1\n", `boards.yaml:11:1: unknown key "` + strings.Repeat("k", 80) + `…(200000 bytes)" at top level`},
		{"many errors", many.String(), "boards.yaml: and 130 more errors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("boards.yaml", []byte(tc.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Less(t, len(err.Error()), 64<<10, "the message stays short")
		})
	}
}

func TestBOMIsAccepted(t *testing.T) {
	cfg, err := Parse("boards.yaml", []byte("\ufeff"+validBase))
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, cfg.BoardNames())
}

// A real boards.yaml's shapes must pass the scan: block scalars with
// deeper lines, quotes holding brackets, comments with colons.
func TestPrescanAcceptsRealShapes(t *testing.T) {
	text := validBase + `known_red:
  - test: TestA   # a comment: with [brackets
    issue: 1
    reason: |
      a block reason
          indented further: [not, structure
            and further {
    signature: 'RED [x] ''q'' {'
    platforms: [linux, "darwin/arm64"]
`
	_, err := Parse("boards.yaml", []byte(text))
	require.NoError(t, err)
}

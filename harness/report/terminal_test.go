package report

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/outcome"
)

var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

// A board of GREENs with one RED among them, long names and a reason
// whose cause is its last line, as a script failure's is.
func eightyColumnBoard() *board.Board {
	green := func(name string, d float64) board.Section {
		return board.Section{Package: "example.com/m/guards", Test: name, Outcome: outcome.Green, Duration: d}
	}
	return &board.Board{Name: "guards", Target: "demod", Gating: true, Platform: "linux/amd64",
		Sections: []board.Section{
			green("TestGuards/daemon/bad-input", 0.3),
			green("TestGuards/daemon/churn-stability", 0.6),
			green("TestGuardsCatchBreaks/stale-state-after-a-crash/crash-recovery-with-its-own-long-name", 30),
			{Package: "example.com/m/guards", Test: "TestGuards/daemon/start-status-port", Outcome: outcome.Red, Duration: 1.2,
				Reason:  "target failed: daemon start --port 7: rc=1 after 20ms; output tail:\ndemod 0.3.1 starting\nloading settings from cache\nlisten tcp 127.0.0.1:7: bind: address already in use\n",
				Excerpt: "    > target daemon start --port 7\n    FAIL: start-status-port.txtar:4: target failed\n"},
			green("TestGuards/daemon/stop-refuses-busy", 0.2),
			green("TestReprosAreGreenIffFixed/issue581/as-shipped", 1.0),
		},
		Counts: board.Counts{"total": 6, "GREEN": 5, "RED": 1}, ExitCode: 1, ExitReason: "regression: 1 RED on a gating board",
	}
}

// At 80 columns, with and without colour: what needs a look first,
// every column aligned, no line wider than 80, names elided in the
// middle, and the reason is the cause line.
func TestTerminalFitsEightyColumns(t *testing.T) {
	b := eightyColumnBoard()
	var plain, colour bytes.Buffer
	require.NoError(t, WriteTerminal(&plain, b, TerminalOptions{Width: 80}))
	require.NoError(t, WriteTerminal(&colour, b, TerminalOptions{Width: 80, Color: true}))
	assert.Contains(t, colour.String(), "\x1b[31mRED\x1b[0m")
	assert.Equal(t, plain.String(), ansiRE.ReplaceAllString(colour.String(), ""), "colour adds escape codes and nothing else")

	for name, out := range map[string]string{"plain": plain.String(), "colour": colour.String()} {
		lines := strings.Split(strings.TrimRight(ansiRE.ReplaceAllString(out, ""), "\n"), "\n")
		for _, l := range lines {
			assert.LessOrEqual(t, utf8.RuneCountInString(l), 80, "%s: %q", name, l)
		}
		require.True(t, strings.HasPrefix(lines[1], "OUTCOME"), lines[1])
		assert.True(t, strings.HasPrefix(lines[2], "RED "), "RED first: %q", lines[2])
		for _, l := range lines[3:8] {
			assert.True(t, strings.HasPrefix(l, "GREEN "), "then GREEN: %q", l)
		}
		// Every row's columns start where the header's do.
		header := []rune(lines[1])
		assert.NotContains(t, lines[1], "ISSUE", "a column empty in every row is left out")
		for _, col := range []string{"TIME", "SECTION", "REASON"} {
			at := utf8.RuneCountInString(lines[1][:strings.Index(lines[1], col)])
			for _, l := range lines[2:8] {
				r := []rune(l)
				if at >= len(r) {
					continue // an empty last column
				}
				assert.Equal(t, ' ', r[at-1], "%s: column %s of %q", name, col, l)
			}
			assert.Equal(t, ' ', header[at-1])
		}
		assert.Regexp(t, `(?m)^RED\s+1\.2s\s+TestGuards/daemon/start-status-port\s+…address already in use$`, strings.Join(lines, "\n"))
		assert.Regexp(t, `(?m)^GREEN\s+30\.0s\s+TestGuardsCatch\S*…\S*long-name$`, strings.Join(lines, "\n"), "elided in the middle")
	}
}

func TestCauseLine(t *testing.T) {
	assert.Equal(t, "bind: address already in use", CauseLine("target failed: start: rc=1; output tail:\nstarting\nbind: address already in use\n"))
	assert.Equal(t, "one line only", CauseLine("one line only"))
	assert.Equal(t, "first", CauseLine("first\nsecond\nthird"), "no error-looking line: the first")
	assert.Equal(t, "leak: RED rss slope=90B/op > budget 16B/op", CauseLine("LEAK_MEASURE ok\nleak: RED rss slope=90B/op > budget 16B/op\n"))
}

func TestFitMiddle(t *testing.T) {
	assert.Equal(t, "short", FitMiddle("short", 10))
	assert.Equal(t, "TestGu…covery", FitMiddle("TestGuardsCatchBreaks/crash-recovery", 13))
	assert.Equal(t, 13, utf8.RuneCountInString(FitMiddle("TestGuardsCatchBreaks/crash-recovery", 13)))
}

// An all-GREEN board has no reasons: the names get the room.
func TestTerminalAllGreenGivesNamesTheRoom(t *testing.T) {
	b := eightyColumnBoard()
	b.Sections = slices.DeleteFunc(b.Sections, func(s board.Section) bool { return s.Outcome != outcome.Green })
	var buf bytes.Buffer
	require.NoError(t, WriteTerminal(&buf, b, TerminalOptions{Width: 80}))
	out := buf.String()
	assert.NotContains(t, out, "REASON")
	assert.Contains(t, out, "TestReprosAreGreenIffFixed/issue581/as-shipped\n", "fits whole")
	for _, l := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(l), 80, l)
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/reproboard/reproboard/harness/board"
)

// The progress line names the sections running longest (not the last
// one that started), leaves out parents, and never reaches the width.
func TestProgressLineNamesTheLongestRunning(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	p := &progress{w: &buf, tty: true, width: 80, total: 29, running: map[string]time.Time{}, parents: map[string]bool{},
		now: func() time.Time { return now }}
	p.started("TestGuards")
	p.started("TestGuardsCatchBreaks/stale-state/crash-recovery")
	now = now.Add(24 * time.Second)
	p.started("TestGuards/daemon/lifecycle")
	now = now.Add(time.Second)
	p.started("TestGuards/daemon/hook-augment")
	p.finished(board.Section{Test: "TestGuards/daemon/hook-augment"})

	p.width = 120
	line := p.line()
	assert.Equal(t, "[1/29] 2 running: TestGuardsCatchBreaks/stale-state/crash-recovery 25s, TestGuards/daemon/lifecycle 1s", line)
	assert.NotContains(t, line, "hook-augment", "a finished section leaves the line")
	assert.NotContains(t, line, "TestGuards ", "a parent is not a section")
	p.width = 80
	assert.Equal(t, "[1/29] 2 running: TestGuardsCatchBreaks/stale-state/crash-recovery 25s, +1", p.line())

	for i := range 12 {
		p.started("TestGuards/daemon/a-section-with-a-name-" + strings.Repeat("x", i))
	}
	for _, width := range []int{80, 60, 40} {
		p.width = width
		line := p.line()
		assert.Less(t, utf8.RuneCountInString(line), width, line)
		assert.Contains(t, line, "14 running:")
		assert.Regexp(t, `running: TestG\S*(crash-recovery|…\S*) 25s`, line, "the longest-running first")
		assert.Regexp(t, `, \+\d+$`, line, "says how many more")
	}
	assert.NotContains(t, buf.String(), "\n", "one line, redrawn in place")
}

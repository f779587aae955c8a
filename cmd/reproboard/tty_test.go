//go:build linux

package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair (the kernel's /dev/ptmx) and sets
// its width.
func openPTY(t *testing.T, cols uint16) *os.File {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { tty.Close() })
	require.NoError(t, unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: 24}))
	return tty
}

// On a terminal the progress line shows whatever NO_COLOR says, which
// only drops colour; the width is the terminal's.
func TestTerminalProgressIgnoresNoColor(t *testing.T) {
	tty := openPTY(t, 100)
	t.Setenv("TERM", "xterm")
	t.Setenv("NO_COLOR", "1")
	assert.True(t, isTerminal(tty), "progress on a terminal under NO_COLOR")
	assert.False(t, useColor(tty), "NO_COLOR drops colour")
	assert.Equal(t, 100, termWidth(tty))
	p := newProgress(tty, 3)
	defer p.clear()
	assert.True(t, p.tty)
	assert.Equal(t, 100, p.width)

	t.Setenv("NO_COLOR", "")
	assert.True(t, useColor(tty))
	t.Setenv("TERM", "dumb")
	assert.False(t, isTerminal(tty), "TERM=dumb cannot redraw a line")

	f, err := os.CreateTemp(t.TempDir(), "log")
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, isTerminal(f))
	assert.Equal(t, 0, termWidth(f), "a log has no width: the reports use 80")
}

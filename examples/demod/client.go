package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/reproboard/reproboard/examples/demod/internal/daemon"
	"github.com/reproboard/reproboard/examples/demod/internal/rendezvous"
	"github.com/reproboard/reproboard/examples/demod/internal/wire"
)

// rendezvousAttempts bounds how often a client redoes the rendezvous when
// the daemon it found was retiring and closed the connection unanswered.
const rendezvousAttempts = 3

func (a *app) logPath() string {
	return filepath.Join(a.env.CacheDir, "logs", "demod-daemon.log")
}

// spawner starts `demod daemon run-internal` detached in the given mode.
func (a *app) spawner(mode string) func() (*exec.Cmd, error) {
	return func() (*exec.Cmd, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(a.logPath()), 0o700); err != nil {
			return nil, err
		}
		logFile, err := os.OpenFile(a.logPath(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		defer logFile.Close() // the child has its own copy
		cmd := exec.Command(exe, "daemon", "run-internal", "--mode="+mode)
		rendezvous.Detach(cmd, logFile)
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return cmd, nil
	}
}

// ensure finds the running daemon or starts one in mode.
func (a *app) ensure(mode string) (wire.Response, bool, error) {
	st, spawned, err := rendezvous.Ensure(a.paths, a.spawner(mode))
	if err != nil {
		err = fmt.Errorf("%w (the daemon log is %s)", err, a.logPath())
	}
	return st, spawned, err
}

// request runs req against the daemon, starting an ephemeral one when
// none answers, and redoes the rendezvous if the daemon retired under us.
func (a *app) request(req wire.Request, timeout time.Duration) (wire.Response, error) {
	var last error
	for range rendezvousAttempts {
		if _, _, err := a.ensure(daemon.Ephemeral); err != nil {
			return wire.Response{}, err
		}
		resp, err := a.once(req, timeout)
		if err == nil {
			return resp, nil
		}
		last = err
		if !retriable(err) {
			return resp, err
		}
	}
	return wire.Response{}, fmt.Errorf("the demod daemon went away %d times in a row; last error: %w", rendezvousAttempts, last)
}

// once sends req over a fresh connection to whatever daemon answers now.
func (a *app) once(req wire.Request, timeout time.Duration) (wire.Response, error) {
	c, err := wire.Dial(a.paths.Socket, 2*time.Second)
	if err != nil {
		return wire.Response{}, fmt.Errorf("%w (dial: %v)", wire.ErrNoAnswer, err)
	}
	defer c.Close()
	return c.Call(req, timeout)
}

func retriable(err error) bool { return errors.Is(err, wire.ErrNoAnswer) }

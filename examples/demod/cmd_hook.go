package main

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/reproboard/reproboard/examples/demod/internal/hook"
	"github.com/reproboard/reproboard/examples/demod/internal/rendezvous"
	"github.com/reproboard/reproboard/examples/demod/internal/wire"
)

// hookWait keeps a hook from ever stalling the agent for long.
const hookWait = 5 * time.Second

// hook never starts a daemon: it augments when one is up and fails open.
func (a *app) hook() int {
	return hook.Run(a.stdin, a.stdout, a.stderr, hook.Options{
		CacheDir:    a.env.CacheDir,
		FailsClosed: a.env.Broken("hook-fails-closed"),
		Ask: func(payload json.RawMessage) (json.RawMessage, bool, error) {
			if _, err := rendezvous.Status(a.paths); err != nil {
				return nil, false, nil
			}
			resp, err := a.once(wire.Request{Op: wire.OpHook, Args: payload}, hookWait)
			if errors.Is(err, wire.ErrNoAnswer) {
				return nil, false, nil
			}
			if err != nil {
				return nil, true, err
			}
			if !resp.OK {
				return nil, true, errors.New(resp.Error)
			}
			return resp.Result, true, nil
		},
	})
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/reproboard/reproboard/examples/demod/internal/daemon"
	"github.com/reproboard/reproboard/examples/demod/internal/mcpserver"
	"github.com/reproboard/reproboard/examples/demod/internal/wire"
)

// mcp serves MCP on stdin/stdout as a committed client of the daemon. It
// attaches before serving, so by the time initialize is answered a
// `daemon stop` already sees (and names) this process.
func (a *app) mcp() int {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	b := &committed{app: a}
	if err := b.attach(); err != nil {
		// Tools will retry the attach; the session itself can still start.
		fmt.Fprintf(a.stderr, "demod: not attached to a daemon yet: %v\n", err)
	}
	defer b.close()
	err := mcpserver.New(b, version).Run(ctx, mcpserver.DrainingStdio(a.stdin, a.stdout, toolCallWait))
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
		fmt.Fprintf(a.stderr, "demod: MCP session ended: %v\n", err)
		return 1
	}
	return 0
}

// committed is the MCP process's one connection to the daemon, held for
// the whole session; closing it is the detach.
type committed struct {
	app  *app
	mu   sync.Mutex
	conn *wire.Conn
}

func (b *committed) attach() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.attachLocked()
}

func (b *committed) attachLocked() error {
	var last error
	for range rendezvousAttempts {
		if _, _, err := b.app.ensure(daemon.SessionManaged); err != nil {
			return err
		}
		c, resp, err := b.dialAttach()
		if err == nil && resp.OK {
			b.conn = c
			return nil
		}
		if err == nil {
			return fmt.Errorf("daemon refused the attach: %s", resp.Error)
		}
		last = err
	}
	return fmt.Errorf("could not attach to the demod daemon after %d attempts: %w", rendezvousAttempts, last)
}

// attachBusyTries bounds the attach retries while the daemon is at its
// client limit, perhaps only until a one-shot that just hung up (the
// rendezvous's own status check among them) is unregistered.
const attachBusyTries = 20

// dialAttach connects and attaches; a refusal comes back as resp.
func (b *committed) dialAttach() (*wire.Conn, wire.Response, error) {
	var resp wire.Response
	for range attachBusyTries {
		c, err := wire.Dial(b.app.paths.Socket, 2*time.Second)
		if err != nil {
			return nil, resp, err
		}
		resp, err = c.Call(wire.Request{Op: wire.OpAttach}, 10*time.Second)
		if err == nil && resp.OK {
			return c, resp, nil
		}
		c.Close()
		if err != nil || resp.Code != wire.CodeBusy {
			return nil, resp, err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, resp, nil
}

// Call forwards a tool call; if the daemon went away (stopped, retired,
// crashed) it re-attaches once, starting an ephemeral daemon if needed.
func (b *committed) Call(_ context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	if tool == "index_repository" {
		args = absPathArg(args)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if b.conn == nil {
			if err := b.attachLocked(); err != nil {
				return nil, err
			}
		}
		resp, err := b.conn.Call(wire.Request{Op: wire.OpCall, Tool: tool, Args: args}, toolCallWait)
		if err != nil {
			b.conn.Close()
			b.conn = nil
			if retriable(err) && attempt == 0 {
				continue
			}
			return nil, err
		}
		if !resp.OK {
			return nil, errors.New(resp.Error)
		}
		return resp.Result, nil
	}
}

func (b *committed) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn != nil {
		b.conn.Close()
		b.conn = nil
	}
}

// absPathArg resolves a relative index path against this process's cwd:
// the daemon's cwd is /.
func absPathArg(args json.RawMessage) json.RawMessage {
	var obj map[string]any
	if json.Unmarshal(args, &obj) != nil {
		return args
	}
	p, ok := obj["repo_path"].(string)
	if !ok || p == "" || filepath.IsAbs(p) {
		return args
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return args
	}
	obj["repo_path"] = abs
	out, _ := json.Marshal(obj)
	return out
}

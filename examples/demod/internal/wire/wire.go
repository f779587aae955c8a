// Package wire is the daemon protocol: one JSON object per line in each
// direction over the Unix socket; every request gets exactly one response.
package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// Ops a client may send.
const (
	OpStatus = "status" // who are you: pid, mode, committed clients
	OpStart  = "start"  // become (or stay) permanent; save and bind the UI port
	OpStop   = "stop"   // retire, unless committed clients still use the daemon
	OpAttach = "attach" // this connection is a committed client from now on
	OpCall   = "call"   // run a tool
	OpHook   = "hook"   // augment a tool-use hook payload
)

// Error codes a response may carry, so clients can branch without parsing text.
const (
	CodeUnknownTool = "unknown_tool"
	CodeBadArgs     = "bad_args"
	CodeRefused     = "refused"
	CodeBusy        = "busy"
	CodeFailed      = "failed"
)

// MaxLine bounds one request line the daemon will buffer.
const MaxLine = 8 << 20

// Request is one client request.
type Request struct {
	Op   string          `json:"op"`
	Tool string          `json:"tool,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
	Port int             `json:"port,omitempty"`
}

// Response answers one Request.
type Response struct {
	OK      bool            `json:"ok"`
	Code    string          `json:"code,omitempty"`
	Error   string          `json:"error,omitempty"`
	PID     int             `json:"pid,omitempty"`
	Mode    string          `json:"mode,omitempty"`
	Already bool            `json:"already,omitempty"`
	Clients []int           `json:"clients,omitempty"` // committed clients' peer pids
	Result  json.RawMessage `json:"result,omitempty"`
}

// Conn is the client side of one daemon connection.
type Conn struct {
	c net.Conn
	r *bufio.Reader
}

// Dial connects to the daemon socket at path.
func Dial(path string, timeout time.Duration) (*Conn, error) {
	c, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return nil, err
	}
	return &Conn{c: c, r: bufio.NewReader(c)}, nil
}

// Close ends the connection; for a committed client this is the detach.
func (c *Conn) Close() error { return c.c.Close() }

// ErrNoAnswer means the daemon closed the connection before answering:
// it was retiring, or it died. Callers may retry the whole rendezvous.
var ErrNoAnswer = errors.New("daemon closed the connection without answering")

// Call sends req and waits up to timeout for its response.
func (c *Conn) Call(req Request, timeout time.Duration) (Response, error) {
	var resp Response
	if err := c.c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return resp, err
	}
	defer c.c.SetDeadline(time.Time{})
	line, err := json.Marshal(req)
	if err != nil {
		return resp, err
	}
	if _, err := c.c.Write(append(line, '\n')); err != nil {
		return resp, fmt.Errorf("%w (write: %v)", ErrNoAnswer, err)
	}
	reply, err := c.r.ReadBytes('\n')
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return resp, fmt.Errorf("no answer to %q from the daemon within %s", req.Op, timeout)
		}
		return resp, fmt.Errorf("%w (read: %v)", ErrNoAnswer, err)
	}
	if err := json.Unmarshal(reply, &resp); err != nil {
		return resp, fmt.Errorf("bad reply from the daemon: %v: %.200q", err, reply)
	}
	return resp, nil
}

// ServerConn is the daemon side of one connection. It reuses its decoder,
// its request and its output buffer, so a long session's requests make
// little garbage (the background a memory meter must see leaks through).
type ServerConn struct {
	c    net.Conn
	s    *bufio.Scanner
	line bytes.Reader
	dec  *json.Decoder
	req  Request
	out  bytes.Buffer
	enc  *json.Encoder
	resp Response
}

// NewServerConn wraps an accepted connection.
func NewServerConn(c net.Conn) *ServerConn {
	s := bufio.NewScanner(c)
	s.Buffer(make([]byte, 0, 64<<10), MaxLine)
	sc := &ServerConn{c: c, s: s}
	sc.dec = json.NewDecoder(&sc.line)
	sc.enc = json.NewEncoder(&sc.out)
	return sc
}

// Next reads the next request. The returned Args are only valid until the
// next call: they reuse the connection's buffer.
func (sc *ServerConn) Next(idle time.Duration) (*Request, error) {
	if idle > 0 {
		_ = sc.c.SetReadDeadline(time.Now().Add(idle))
	} else {
		_ = sc.c.SetReadDeadline(time.Time{})
	}
	if !sc.s.Scan() {
		if err := sc.s.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("EOF")
	}
	sc.line.Reset(sc.s.Bytes())
	args := sc.req.Args[:0]
	sc.req = Request{Args: args}
	if err := sc.dec.Decode(&sc.req); err != nil {
		return nil, fmt.Errorf("bad request line: %w", err)
	}
	if sc.dec.More() {
		return nil, errors.New("bad request line: more than one JSON value")
	}
	return &sc.req, nil
}

// Reply writes one response.
func (sc *ServerConn) Reply(resp Response) error {
	sc.resp = resp
	sc.out.Reset()
	if err := sc.enc.Encode(&sc.resp); err != nil { // Encode ends the line
		return err
	}
	_ = sc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := sc.c.Write(sc.out.Bytes())
	return err
}

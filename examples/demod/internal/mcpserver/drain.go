package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DrainingStdio is a stdio transport whose end of input waits until every
// request already read has been answered (up to maxWait), so a client that
// writes its requests and closes stdin still gets its answers.
func DrainingStdio(stdin io.Reader, stdout io.Writer, maxWait time.Duration) *mcp.IOTransport {
	d := &drain{maxWait: maxWait}
	d.cond = sync.NewCond(&d.mu)
	return &mcp.IOTransport{
		Reader: &drainReader{d: d, r: stdin},
		Writer: &drainWriter{d: d, w: stdout},
	}
}

type drain struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending int
	maxWait time.Duration
}

func (d *drain) add(n int) {
	d.mu.Lock()
	d.pending = max(d.pending+n, 0)
	d.mu.Unlock()
	d.cond.Broadcast()
}

// wait blocks until nothing is pending or maxWait passes.
func (d *drain) wait() {
	timer := time.AfterFunc(d.maxWait, func() {
		d.mu.Lock()
		d.pending = 0
		d.mu.Unlock()
		d.cond.Broadcast()
	})
	defer timer.Stop()
	d.mu.Lock()
	for d.pending > 0 {
		d.cond.Wait()
	}
	d.mu.Unlock()
}

// message is just enough of JSON-RPC to tell requests from responses.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func (m message) hasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// lines calls fn for every complete line that passes through.
type lines struct{ buf []byte }

func (l *lines) feed(p []byte, fn func([]byte)) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return
		}
		fn(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

type drainReader struct {
	d *drain
	r io.Reader
	l lines
}

func (r *drainReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.l.feed(p[:n], func(line []byte) {
		var m message
		if json.Unmarshal(line, &m) == nil && m.Method != "" && m.hasID() {
			r.d.add(1)
		}
	})
	if err == io.EOF {
		r.d.wait()
	}
	return n, err
}

func (r *drainReader) Close() error { return nil }

type drainWriter struct {
	d *drain
	w io.Writer
	l lines
}

func (w *drainWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.l.feed(p[:n], func(line []byte) {
		var m message
		if json.Unmarshal(line, &m) == nil && m.Method == "" && m.hasID() {
			w.d.add(-1)
		}
	})
	return n, err
}

func (w *drainWriter) Close() error { return nil }

// Package tools runs demod's tools (list_projects, index_repository,
// search_graph) against the store, per client session.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/reproboard/reproboard/examples/demod/internal/config"
	"github.com/reproboard/reproboard/examples/demod/internal/store"
	"github.com/reproboard/reproboard/examples/demod/internal/wire"
)

// Names are the tools demod serves, in the order they are listed.
var Names = []string{"list_projects", "index_repository", "search_graph"}

// Known reports whether name is a tool.
func Known(name string) bool { return slices.Contains(Names, name) }

// Error is a tool failure with a wire code the client can branch on.
type Error struct {
	Code string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func badArgs(format string, a ...any) error {
	return &Error{Code: wire.CodeBadArgs, Msg: fmt.Sprintf(format, a...)}
}

// Options are the #581 switches and the leak meter's calibration knob.
type Options struct {
	Fix581    bool // bounded LRU cache instead of the unbounded per-query one
	CacheMax  int  // LRU capacity when Fix581
	LeakBytes int  // extra bytes every search retains, for calibrating meters
}

// Service is the daemon-wide tool runner.
type Service struct {
	store *store.Store
	opts  Options
	gen   atomic.Uint64 // bumped by every index, so cached results never go stale

	leakMu sync.Mutex
	leak   [][]byte
}

// NewService serves tools over st.
func NewService(st *store.Store, opts Options) *Service {
	if opts.CacheMax <= 0 {
		opts.CacheMax = config.DefaultQueryCacheMax
	}
	return &Service{store: st, opts: opts}
}

// LeakedBytes is what DEMOD_LEAK_BYTES has retained so far.
func (s *Service) LeakedBytes() int64 {
	s.leakMu.Lock()
	defer s.leakMu.Unlock()
	return int64(len(s.leak)) * int64(s.opts.LeakBytes)
}

// retainLeak keeps exactly n written bytes alive for the process's life.
func (s *Service) retainLeak() {
	n := s.opts.LeakBytes
	if n <= 0 {
		return
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i) | 1 // written, so the pages are resident, not just reserved
	}
	s.leakMu.Lock()
	s.leak = append(s.leak, b)
	s.leakMu.Unlock()
}

// Session is one client's view: its own result cache.
type Session struct {
	svc   *Service
	mu    sync.Mutex
	seq   uint64
	cache *cache

	// Reused by every search, so a repeated query makes little garbage.
	args bytes.Reader
	dec  *json.Decoder
	key  []byte
}

// NewSession starts a session.
func (s *Service) NewSession() *Session {
	capacity := 0 // unbounded: bug #581
	if s.opts.Fix581 {
		capacity = s.opts.CacheMax
	}
	return &Session{svc: s, cache: newCache(capacity)}
}

// CacheStats reports the session cache's entries and retained bytes.
func (ss *Session) CacheStats() (entries int, bytes int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.cache.len(), ss.cache.bytes
}

// Call runs tool with JSON args and returns its JSON result.
func (ss *Session) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	switch tool {
	case "list_projects":
		if err := ss.parse(args, &struct{}{}); err != nil {
			return nil, err
		}
		ps, err := ss.svc.store.Projects(ctx)
		if err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"projects": ps})
	case "index_repository":
		var in struct {
			RepoPath string `json:"repo_path"`
		}
		if err := ss.parse(args, &in); err != nil {
			return nil, err
		}
		if in.RepoPath == "" {
			// The real program's words: a `path` key is refused too.
			return nil, badArgs(`repo_path is required: index_repository takes {"repo_path": DIR}`)
		}
		if !filepath.IsAbs(in.RepoPath) {
			return nil, badArgs("index_repository repo_path must be absolute, got %q", in.RepoPath)
		}
		idx, err := store.IndexDir(in.RepoPath)
		if err != nil {
			return nil, badArgs("index_repository: %v", err)
		}
		if err := ss.svc.store.SaveProject(ctx, idx); err != nil {
			return nil, err
		}
		ss.svc.gen.Add(1)
		fns := 0
		for _, f := range idx.Files {
			fns += len(f.Functions)
		}
		return json.Marshal(map[string]any{"project": idx.Project, "root": idx.Root, "files": len(idx.Files), "functions": fns})
	case "search_graph":
		return ss.search(ctx, args)
	}
	return nil, &Error{Code: wire.CodeUnknownTool, Msg: "unknown tool: " + tool}
}

// SearchArgs are search_graph's arguments.
type SearchArgs struct {
	Project     string `json:"project,omitempty"`
	NamePattern string `json:"name_pattern,omitempty"`
	Limit       int    `json:"limit,omitempty"`
}

// Search limits.
const (
	DefaultLimit = 20
	MaxLimit     = 500
	arenaSize    = 4 << 10
)

func (ss *Session) search(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	ss.mu.Lock()
	var in SearchArgs
	if err := ss.decodeArgs(args, &in); err != nil {
		ss.mu.Unlock()
		return nil, err
	}
	limit := in.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	ss.seq++
	ss.key = ss.key[:0]
	if !ss.svc.opts.Fix581 {
		// Bug #581: the sequence number in the key (meant to make each
		// result addressable for paging) means no two queries share an entry.
		ss.key = append(strconv.AppendUint(append(ss.key, 's'), ss.seq, 10), '|')
	}
	ss.key = strconv.AppendUint(ss.key, ss.svc.gen.Load(), 10)
	ss.key = append(append(ss.key, '|'), in.Project...)
	ss.key = append(append(ss.key, '|'), in.NamePattern...)
	ss.key = strconv.AppendInt(append(ss.key, '|'), int64(limit), 10)
	e, hit := ss.cache.get(ss.key)
	key := ""
	if !hit {
		key = string(ss.key)
	}
	ss.mu.Unlock()

	if !hit {
		// Only a miss compiles: a cached key was a valid pattern.
		re, err := regexp.Compile(in.NamePattern)
		if err != nil {
			return nil, badArgs("search_graph: bad name_pattern: %v", err)
		}
		fns, total, err := ss.svc.store.Search(ctx, in.Project, re, limit)
		if err != nil {
			if errors.Is(err, store.ErrUnknownProject) {
				return nil, badArgs("search_graph: %v", err)
			}
			return nil, err
		}
		result, err := json.Marshal(map[string]any{
			"project": in.Project, "name_pattern": in.NamePattern, "total": total, "results": fns,
		})
		if err != nil {
			return nil, err
		}
		e = entry{result: result, total: total}
		if !ss.svc.opts.Fix581 {
			// Bug #581: the entry also pins the query's row buffers.
			e.rows = rowBuffers(fns)
		}
		ss.mu.Lock()
		ss.cache.put(key, e)
		ss.mu.Unlock()
	}
	if err := ss.svc.store.LogQuery(ctx, in.Project, in.NamePattern, e.total); err != nil {
		return nil, err
	}
	ss.svc.retainLeak()
	return e.result, nil
}

// parse decodes a tool's arguments with the session's decoder.
func (ss *Session) parse(args json.RawMessage, v any) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.decodeArgs(args, v)
}

// decodeArgs is json.Unmarshal with the session's reusable decoder.
// Callers hold ss.mu.
func (ss *Session) decodeArgs(args json.RawMessage, v any) error {
	if ss.dec == nil {
		ss.dec = json.NewDecoder(&ss.args)
	}
	ss.args.Reset(args)
	if err := ss.dec.Decode(v); err != nil {
		ss.dec = nil // a decoder's error is sticky
		return badArgs("arguments must be a JSON object with the tool's fields: %v", err)
	}
	if ss.dec.More() {
		ss.dec = nil
		return badArgs("arguments must be a single JSON object")
	}
	return nil
}

// rowBuffers is the query's decode arena: fixed 128-byte row records in a
// 4 KiB buffer, the unused tail poison-filled the way a debug decoder does,
// so every page of it is written.
func rowBuffers(fns []store.Function) []byte {
	buf := make([]byte, arenaSize)
	for i := range buf {
		buf[i] = 0xA5
	}
	for i, fn := range fns {
		off := i * 128
		if off+128 > len(buf) {
			break
		}
		copy(buf[off:off+128], fn.Project+"\x00"+fn.File+"\x00"+fn.Name)
	}
	return buf
}

// Augment answers a tool-use hook: for a search-like tool input it names
// indexed functions that match, so the agent can go to them directly.
// An empty result means nothing to add.
func (s *Service) Augment(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	var in struct {
		Event     string `json:"hook_event_name"`
		ToolInput struct {
			Pattern string `json:"pattern"`
		} `json:"tool_input"`
	}
	if err := json.Unmarshal(payload, &in); err != nil || strings.TrimSpace(in.ToolInput.Pattern) == "" {
		return nil, nil
	}
	re, err := regexp.Compile("(?i)" + regexp.QuoteMeta(in.ToolInput.Pattern))
	if err != nil {
		return nil, nil
	}
	fns, _, err := s.store.Search(ctx, "", re, 5)
	if err != nil || len(fns) == 0 {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "demod: indexed functions matching %q:", in.ToolInput.Pattern)
	for _, fn := range fns {
		fmt.Fprintf(&b, " %s (%s/%s:%d);", fn.Name, fn.Project, fn.File, fn.Line)
	}
	event := in.Event
	if event == "" {
		event = "PreToolUse"
	}
	return json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": event, "additionalContext": strings.TrimSuffix(b.String(), ";"),
	}})
}

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/excerpt"
)

// Bounds of the short go commands; go test runs are bounded by --deadline.
const (
	buildLimit = 10 * time.Minute
	listLimit  = 10 * time.Minute
)

// goCommand is `go ARGS...` run in dir with env, in its own process group.
func goCommand(ctx context.Context, dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = env
	inOwnGroup(cmd)
	return cmd
}

// runGo runs a short go command to its end within limit. It returns
// stdout whole (go list's answer) and the tail of stderr (a build's errors).
func runGo(ctx context.Context, limit time.Duration, dir string, env []string, args ...string) (stdout, stderrTail string, err error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var out strings.Builder
	stderr := excerpt.NewTail(16 << 10)
	cmd := goCommand(ctx, dir, env, args...)
	cmd.Stdout, cmd.Stderr = &out, stderr
	err = cmd.Run()
	if ctx.Err() != nil {
		killGroup(cmd)
		return out.String(), stderr.String(), fmt.Errorf("go %s did not finish within %s (%v)", args[0], limit, ctx.Err())
	}
	if err != nil {
		return out.String(), stderr.String(), fmt.Errorf("go %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), stderr.String(), nil
}

// firstErrorLine is the first line of go's stderr that is not a "# pkg" header.
func firstErrorLine(tail string) string {
	for _, line := range strings.Split(tail, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "...(") {
			return l
		}
	}
	return ""
}

// goTest is one `go test -json` run, streamed.
type goTest struct {
	dir      string
	env      []string
	args     []string      // after "go test -json"
	events   string        // file that keeps the raw events; "" keeps none
	deadline time.Duration // bound on the whole run
	onStart  func(test string)
	onEnd    func(s *board.SectionResult)
}

// run streams the events into a Collector and returns the results. Only
// a failure to run go test at all is an error; go test failing, timing
// out or printing errors becomes part of the results (failed sections or
// problems), so the board reports it.
func (g goTest) run(ctx context.Context) (*board.Results, error) {
	sink := io.Discard
	if g.events != "" {
		f, err := os.Create(g.events)
		if err != nil {
			return nil, fmt.Errorf("cannot keep the raw events: %v", err)
		}
		defer f.Close()
		bw := bufio.NewWriter(f)
		defer bw.Flush()
		sink = bw
	}
	ctx, cancel := context.WithTimeout(ctx, g.deadline)
	defer cancel()
	stderr := excerpt.NewTail(16 << 10)
	cmd := goCommand(ctx, g.dir, g.env, append([]string{"test", "-json"}, g.args...)...)
	cmd.Stderr = stderr
	// Through an io.Pipe, not StdoutPipe: Wait then owns the OS pipe and
	// its WaitDelay bounds it even if a stray grandchild holds it open.
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start go test: %v", err)
	}
	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Close()
		waited <- err
	}()
	c := board.NewCollector()
	br := bufio.NewReader(pr)
	for {
		line, readErr := br.ReadBytes('\n')
		if len(line) > 0 {
			_, _ = sink.Write(line)
			if e, err := board.ParseEvent(line); err != nil {
				c.AddLine(line)
			} else {
				if e.Action == "run" && g.onStart != nil {
					g.onStart(e.Test)
				}
				if s := c.Add(e); s != nil && g.onEnd != nil {
					g.onEnd(s)
				}
			}
		}
		if readErr != nil {
			break
		}
	}
	waitErr := <-waited
	res := c.Results()
	if ctx.Err() != nil {
		killGroup(cmd)
		why := fmt.Sprintf("go test did not finish within %s (--deadline) and was stopped", g.deadline)
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = "go test was interrupted and stopped"
		}
		res.Problems = append(res.Problems, board.Problem{Kind: board.ProblemGoTest, Message: why + "; the sections that finished are on the board"})
		return res, nil
	}
	failed := false
	for _, s := range res.Sections {
		failed = failed || s.Action == "fail"
	}
	stray := strings.TrimSpace(stderr.String() + "\n" + c.Stray())
	if (waitErr != nil && !failed && len(res.Problems) == 0) || (len(res.Sections) == 0 && stray != "") {
		msg := "go test printed no events"
		if waitErr != nil {
			msg = fmt.Sprintf("go test failed (%v) without a test failing", waitErr)
		}
		if stray != "" {
			msg += ": " + strings.SplitN(stray, "\n", 2)[0]
		}
		res.Problems = append(res.Problems, board.Problem{Kind: board.ProblemGoTest, Message: msg, Excerpt: excerpt.Excerpt(stray, 0)})
	}
	return res, nil
}

// packageDirs maps the import paths of patterns to their directories, to
// resolve the relative artefact paths a test recorded (a test runs in its
// package's directory).
func packageDirs(ctx context.Context, dir string, env []string, patterns []string) (map[string]string, error) {
	out, tail, err := runGo(ctx, listLimit, dir, env, append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}"}, patterns...)...)
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, firstErrorLine(tail))
	}
	dirs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if path, d, ok := strings.Cut(line, "\t"); ok {
			dirs[path] = d
		}
	}
	return dirs, nil
}

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/excerpt"
)

const junitLimit = 5 * time.Minute

// reportFlags are the report files a command writes besides the terminal.
type reportFlags struct{ json, md, junit, html string }

func (rf *reportFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&rf.json, "json", "", "")
	fs.StringVar(&rf.md, "md", "", "")
	fs.StringVar(&rf.junit, "junit", "", "")
	fs.StringVar(&rf.html, "html", "", "")
}

// reportFlagsUsage is shared by the commands that write reports.
const reportFlagsUsage = `  --json FILE     write the JSON report (schema reproboard.board/v1)
  --md FILE       write the Markdown report; it is also appended to
                  $GITHUB_STEP_SUMMARY when that is set
  --junit FILE    write JUnit XML, by gotestsum over the raw go test events
                  (needs 'tool gotest.tools/gotestsum' in the module's go.mod)
  --html FILE     write one self-contained HTML page with the memory charts
`

// reporter writes the reports of one or more boards.
type reporter struct {
	c         *cli
	flags     reportFlags
	multi     bool   // several boards: file names get the board's name
	moduleDir string // where `go tool gotestsum` runs
	boards    int    // how many boards share the step summary
}

// reportPath inserts the board's name before the extension when several
// boards write reports: board.json -> board.guards.json.
func (rp *reporter) reportPath(p, name string) string {
	if !rp.multi || p == "" {
		return p
	}
	ext := filepath.Ext(p)
	return strings.TrimSuffix(p, ext) + "." + name + ext
}

// write prints the terminal report and writes every report file asked
// for. keepJSON, when set, is the JSON the run keeps in --out for merge.
func (rp *reporter) write(ctx context.Context, b *board.Board, keepJSON string, events []string) error {
	var errs []error
	if err := board.WriteTerminal(rp.c.stdout, b, board.TerminalOptions{Color: isTerminal(rp.c.stdout)}); err != nil {
		errs = append(errs, err)
	}
	for _, p := range []string{keepJSON, rp.reportPath(rp.flags.json, b.Name)} {
		if p != "" {
			errs = append(errs, writeFile(p, func(w io.Writer) error {
				abs, _ := filepath.Abs(filepath.Dir(p))
				return board.WriteJSON(w, b.RelativeTo(abs))
			}))
		}
	}
	if p := rp.reportPath(rp.flags.md, b.Name); p != "" {
		errs = append(errs, writeFile(p, func(w io.Writer) error { return board.WriteMarkdown(w, b, board.MarkdownOptions{}) }))
	}
	if summary := os.Getenv("GITHUB_STEP_SUMMARY"); summary != "" {
		errs = append(errs, rp.appendStepSummary(summary, b))
	}
	if p := rp.reportPath(rp.flags.html, b.Name); p != "" {
		errs = append(errs, writeFile(p, func(w io.Writer) error { return board.WriteHTML(w, b, board.HTMLOptions{}) }))
	}
	if p := rp.reportPath(rp.flags.junit, b.Name); p != "" {
		errs = append(errs, rp.junit(ctx, p, b.Name, events))
	}
	return errors.Join(errs...)
}

// appendStepSummary appends the Markdown report to GitHub's step summary,
// within what the 1 MiB limit leaves after what is already there.
func (rp *reporter) appendStepSummary(path string, b *board.Board) error {
	limit := board.MarkdownLimit / max(rp.boards, 1)
	if fi, err := os.Stat(path); err == nil {
		limit = min(limit, board.MarkdownLimit-int(fi.Size()))
	}
	if limit < 4<<10 {
		return fmt.Errorf("%s: the step summary is full; board %s was not added", path, b.Name)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("step summary: %v", err)
	}
	werr := board.WriteMarkdown(f, b, board.MarkdownOptions{Limit: limit})
	return errors.Join(werr, f.Close())
}

// junit writes JUnit XML with gotestsum, from the raw events of the run
// (of every shard, for a merge): gotestsum reads them with --raw-command,
// after board.WriteJUnitEvents has dropped the other shards' skips. JUnit
// shows go test's verdicts, not the board's: a KNOWN-RED is a failure there.
func (rp *reporter) junit(ctx context.Context, path, name string, events []string) error {
	if len(events) == 0 {
		return fmt.Errorf("junit %s: no raw events to convert", path)
	}
	var readers []io.Reader
	for _, e := range events {
		if e == "" {
			return fmt.Errorf("junit %s: a report names no raw events file; rerun the shards with this reproboard", path)
		}
		data, err := os.ReadFile(e)
		if err != nil {
			return fmt.Errorf("junit %s needs the raw events of every shard: %v; keep the .events.jsonl files next to the JSON reports", path, err)
		}
		readers = append(readers, bytes.NewReader(data))
	}
	tmp, err := os.CreateTemp("", "reproboard-junit-*.jsonl")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	werr := board.WriteJUnitEvents(tmp, readers...)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	_ = os.Remove(abs) // a stale file must not pass for a fresh one
	ctx, cancel := context.WithTimeout(ctx, junitLimit)
	defer cancel()
	out := excerpt.NewTail(8 << 10)
	cmd := goCommand(ctx, rp.moduleDir, os.Environ(), "tool", "gotestsum", "--junitfile", abs,
		"--junitfile-project-name", name, "--format", "standard-quiet", "--raw-command", "--", "cat", tmp.Name())
	cmd.Stdout, cmd.Stderr = io.Discard, out
	runErr := cmd.Run() // non-zero when tests failed; the file is what counts
	if ctx.Err() != nil {
		killGroup(cmd)
	}
	if fi, err := os.Stat(abs); err != nil || fi.Size() == 0 {
		return fmt.Errorf("junit %s: go tool gotestsum wrote nothing (%v); it runs in %s, whose go.mod needs 'tool gotest.tools/gotestsum':\n%s",
			path, runErr, rp.moduleDir, excerpt.Excerpt(out.String(), 0))
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return nil
}

package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/history"
	"github.com/reproboard/reproboard/harness/report"
)

// reportFlags are the report files a command writes besides the terminal.
type reportFlags struct{ json, md, junit, html string }

func (rf *reportFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&rf.json, "json", "", "")
	fs.StringVar(&rf.md, "md", "", "")
	fs.StringVar(&rf.junit, "junit", "", "")
	fs.StringVar(&rf.html, "html", "", "")
}

// check makes sure every report file asked for (and dir, the --out
// directory) can be created, before anything runs. It creates nothing.
func (rf *reportFlags) check(dir string) error {
	var errs []error
	if dir != "" {
		if err := creatable(dir, true); err != nil {
			errs = append(errs, fmt.Errorf("--out %s cannot be created: %v; give a writable directory", dir, err))
		}
	}
	for _, f := range []struct{ flag, path string }{{"json", rf.json}, {"md", rf.md}, {"junit", rf.junit}, {"html", rf.html}} {
		if f.path == "" {
			continue
		}
		if err := creatable(f.path, false); err != nil {
			errs = append(errs, fmt.Errorf("--%s %s cannot be written: %v; give a path in a writable directory", f.flag, f.path, err))
		}
	}
	return errors.Join(errs...)
}

// creatable reports whether path (a directory when dir) exists as that and
// is writable, or could be created: its nearest existing ancestor is a
// directory a file can be created in.
func creatable(path string, dir bool) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(abs); err == nil {
		switch {
		case dir && !fi.IsDir():
			return fmt.Errorf("it is a file")
		case !dir && fi.IsDir():
			return fmt.Errorf("it is a directory")
		case !dir:
			f, err := os.OpenFile(abs, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			return f.Close()
		}
		return writableDir(abs)
	}
	anc := filepath.Dir(abs)
	for {
		fi, err := os.Stat(anc)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s is a file", anc)
			}
			return writableDir(anc)
		}
		if !os.IsNotExist(err) {
			return err
		}
		up := filepath.Dir(anc)
		if up == anc {
			return err
		}
		anc = up
	}
}

func writableDir(dir string) error {
	f, err := os.CreateTemp(dir, ".reproboard-check-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// reportFlagsUsage is shared by the commands that write reports.
const reportFlagsUsage = `  --json FILE     write the JSON report (schema reproboard.board/v1)
  --md FILE       write the Markdown report; it is also appended to
                  $GITHUB_STEP_SUMMARY when that is set
  --junit FILE    write JUnit XML: one testcase per section, KNOWN-RED as
                  skipped, SETUP-FAIL as error (see README, JUnit)
  --html FILE     write one self-contained HTML page with the memory charts
`

// reportFilesNote, shared by the commands that write reports, says which
// report files hold every board and which one board each.
const reportFilesNote = `
With several boards, --html and --md each write one file holding every
board: the overall exit code and each board's counts first, then each
board in turn (in boards.yaml's order, or as named; for merge, in the
order of the reports). The Markdown stays under GitHub's 1 MiB step summary limit for
all boards together, and goes to $GITHUB_STEP_SUMMARY once. --json and
--junit write one file per board, with the board's name before the
extension (board.json -> board.guards.json): a JSON report holds one
board, which is what merge reads.
`

// reporter writes the reports of one or more boards: write for each board
// as it is classified (terminal, JSON, JUnit), then finish once for the
// reports that hold every board (Markdown, the step summary, HTML).
type reporter struct {
	c       *cli
	flags   reportFlags
	multi   bool // several boards: per-board file names get the board's name
	boards  []*board.Board
	history map[string]*history.Analysis // by board name; nil entries: history is off
}

// addHistory keeps what the history says about a board, for its reports.
func (rp *reporter) addHistory(name string, a *history.Analysis) {
	if a == nil {
		return
	}
	if rp.history == nil {
		rp.history = map[string]*history.Analysis{}
	}
	rp.history[name] = a
}

// reportPath inserts the board's name before the extension when several
// boards write per-board reports: board.json -> board.guards.json.
func (rp *reporter) reportPath(p, name string) string {
	if !rp.multi || p == "" {
		return p
	}
	ext := filepath.Ext(p)
	return strings.TrimSuffix(p, ext) + "." + name + ext
}

// write prints the terminal report and writes the per-board report files
// asked for, and keeps b for finish. keepJSON, when set, is the JSON the
// run keeps in --out for merge.
func (rp *reporter) write(b *board.Board, keepJSON string) error {
	rp.boards = append(rp.boards, b)
	var errs []error
	topts := report.TerminalOptions{Color: useColor(rp.c.stdout), Width: termWidth(rp.c.stdout)}
	if err := report.WriteTerminalChanges(rp.c.stdout, rp.history[b.Name], topts); err != nil {
		errs = append(errs, err)
	}
	if err := report.WriteTerminal(rp.c.stdout, b, topts); err != nil {
		errs = append(errs, err)
	}
	for _, p := range []string{keepJSON, rp.reportPath(rp.flags.json, b.Name)} {
		if p != "" {
			errs = append(errs, writeFile(p, func(w io.Writer) error {
				abs, _ := filepath.Abs(filepath.Dir(p))
				return report.WriteJSON(w, b.RelativeTo(abs))
			}))
		}
	}
	if p := rp.reportPath(rp.flags.junit, b.Name); p != "" {
		errs = append(errs, rp.junit(p, b))
	}
	return errors.Join(errs...)
}

// finish writes the reports that hold every board written: one Markdown
// document (to --md and to the step summary) and one HTML page. With
// several boards it ends the terminal report with the overall verdict.
func (rp *reporter) finish() error {
	if len(rp.boards) == 0 {
		return nil
	}
	var errs []error
	if len(rp.boards) > 1 {
		code, reason := board.Overall(rp.boards)
		var each []string
		for _, b := range rp.boards {
			each = append(each, fmt.Sprintf("%s exit %d", b.Name, b.ExitCode))
		}
		if _, err := fmt.Fprintf(rp.c.stdout, "\n%d boards (%s) — exit %d: %s\n", len(rp.boards), strings.Join(each, ", "), code, reason); err != nil {
			errs = append(errs, err)
		}
	}
	var md []byte // the Markdown at the full limit, shared by --md and the step summary
	// The step summary collapses GREEN rows to a count; --md keeps them.
	markdown := func(limit int, collapse bool) ([]byte, error) {
		if limit == report.MarkdownLimit && !collapse && md != nil {
			return md, nil
		}
		var buf bytes.Buffer
		if err := report.WriteMarkdownBoards(&buf, rp.boards, report.MarkdownOptions{Limit: limit, History: rp.history, CollapseGreen: collapse}); err != nil {
			return nil, err
		}
		if limit == report.MarkdownLimit && !collapse {
			md = buf.Bytes()
		}
		return buf.Bytes(), nil
	}
	if p := rp.flags.md; p != "" {
		errs = append(errs, writeFile(p, func(w io.Writer) error {
			data, err := markdown(report.MarkdownLimit, false)
			if err == nil {
				_, err = w.Write(data)
			}
			return err
		}))
	}
	if summary := os.Getenv("GITHUB_STEP_SUMMARY"); summary != "" {
		errs = append(errs, rp.appendStepSummary(summary, markdown))
	}
	if p := rp.flags.html; p != "" {
		errs = append(errs, writeFile(p, func(w io.Writer) error { return writeHTML(w, p, rp.boards, rp.history) }))
	}
	return errors.Join(errs...)
}

// writeHTML writes the page that will be at path. Artefact paths inside
// its directory are shown (and linked) relative to it: short, and they
// still lead to the files when the directory is downloaded elsewhere.
func writeHTML(w io.Writer, path string, boards []*board.Board, hist map[string]*history.Analysis) error {
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return err
	}
	rel := make([]*board.Board, len(boards))
	for i, b := range boards {
		rel[i] = b.RelativeTo(dir)
	}
	read := func(p string) ([]byte, error) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return os.ReadFile(p)
	}
	return report.WriteHTMLBoards(w, rel, report.HTMLOptions{ReadFile: read, History: hist})
}

// appendStepSummary appends the Markdown report of every board to
// GitHub's step summary, within what the 1 MiB limit leaves after what is
// already there.
func (rp *reporter) appendStepSummary(path string, markdown func(limit int, collapse bool) ([]byte, error)) error {
	limit := report.MarkdownLimit
	if fi, err := os.Stat(path); err == nil {
		limit = min(limit, report.MarkdownLimit-int(fi.Size()))
	}
	if limit < 4<<10 {
		return fmt.Errorf("%s: the step summary is full; the boards' report was not added", path)
	}
	data, err := markdown(limit, true)
	if err != nil {
		return fmt.Errorf("step summary: %v", err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("step summary: %v", err)
	}
	_, werr := f.Write(data)
	return errors.Join(werr, f.Close())
}

// junit writes the board's JUnit XML (report.WriteJUnit): one testcase
// per section with the board's outcome, artefact paths relative to it.
func (rp *reporter) junit(path string, b *board.Board) error {
	return writeFile(path, func(w io.Writer) error {
		dir, err := filepath.Abs(filepath.Dir(path))
		if err != nil {
			return err
		}
		return report.WriteJUnit(w, b.RelativeTo(dir))
	})
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

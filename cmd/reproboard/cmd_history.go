package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/history"
)

const historyReadUsage = `  --config FILE   read history: from it, when it exists (default boards.yaml)
  --out DIR       where the history is by default (default out)
  --history FILE  the history database (default: history: in boards.yaml,
                  else history.db in --out)
  --board B       only board B (default: every board in the history)
  --json          write JSON instead of text
`

var historyCommand = &command{
	name:    "history",
	summary: "show the recorded runs of boards, or of named sections",
	usage: `usage: reproboard history [flags] [SECTION...]

Without SECTION, lists the last runs of each board, one line each: time,
commit, branch, exit code and counts. With SECTION (a test name as go test
prints it, e.g. TestRepro/issue581), lists the section's last runs, one
line each: time, commit, outcome, duration, attempts and the slope of
each leak measure, oldest first.

Flags:
` + historyReadUsage + `  --last N        how many runs (default 20)
`,
	run: runHistory,
}

var flakyCommand = &command{
	name:    "flaky",
	summary: "list the sections whose outcome flipped in the recent runs",
	usage: `usage: reproboard flaky [flags]

Lists the sections whose outcome went from passing to failing or back, or
that were FLAKY (passed on a retry), within the last --window runs of each
board, the most unstable first. A section's flake rate is its flips plus
its FLAKY runs over the runs it ran in.

Flags:
` + historyReadUsage + `  --window N      how many runs of each board to look back over (default 30)
`,
	run: runFlaky,
}

// historyReader holds the flags shared by history and flaky.
type historyReader struct {
	configPath, out, path, board string
	json                         bool
}

func (h *historyReader) register(fs *flag.FlagSet) {
	fs.StringVar(&h.configPath, "config", "boards.yaml", "")
	fs.StringVar(&h.out, "out", "out", "")
	fs.StringVar(&h.path, "history", "", "")
	fs.StringVar(&h.board, "board", "", "")
	fs.BoolVar(&h.json, "json", false, "")
}

// open opens the history for reading; a history that does not exist yet is
// an error saying so (and where it was looked for), not an empty one.
func (h *historyReader) open(ctx context.Context) (*history.Store, []string, error) {
	var cfg *config.Config
	if _, err := os.Stat(h.configPath); err == nil {
		if cfg, err = config.Load(h.configPath); err != nil {
			return nil, nil, err
		}
	}
	path := historyPath(h.path, cfg, filepath.Dir(h.configPath), h.out)
	if _, err := os.Stat(path); err != nil {
		return nil, nil, fmt.Errorf("no history at %s (%v); 'reproboard run' records one there, or give --history FILE", path, err)
	}
	s, err := history.Open(path)
	if err != nil {
		return nil, nil, err
	}
	boards, err := s.Boards(ctx)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	if h.board != "" {
		if !slices.Contains(boards, h.board) {
			s.Close()
			return nil, nil, fmt.Errorf("history %s has no run of board %q; it has %s", path, h.board, orNone(boards))
		}
		boards = []string{h.board}
	}
	return s, boards, nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// sectionRuns is one section's recorded runs, the JSON of history SECTION.
type sectionRuns struct {
	Board   string         `json:"board"`
	Package string         `json:"package"`
	Test    string         `json:"test"`
	Runs    []sectionEntry `json:"runs"`
}

type sectionEntry struct {
	Run *history.Ref `json:"run"`
	history.Section
}

func runHistory(c *cli, cmd *command, args []string) int {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	var h historyReader
	h.register(fs)
	last := fs.Int("last", 20, "")
	tests, code, ok := c.parse(fs, cmd, args)
	if !ok {
		return code
	}
	if *last <= 0 {
		return c.usageError(cmd, "--last must be positive")
	}
	s, boards, err := h.open(c.ctx)
	if err != nil {
		return c.fail(cmd, err)
	}
	defer s.Close()
	var all []*history.Run
	var found []sectionRuns
	for _, b := range boards {
		runs, err := s.Runs(c.ctx, history.Query{Board: b, Tests: tests, Limit: *last, NoMeasures: len(tests) == 0})
		if err != nil {
			return c.fail(cmd, err)
		}
		if len(tests) == 0 {
			all = append(all, runs...)
			continue
		}
		found = append(found, bySection(b, runs)...)
	}
	if len(tests) > 0 {
		var missing []string
		for _, t := range tests {
			if !slices.ContainsFunc(found, func(r sectionRuns) bool { return r.Test == t }) {
				missing = append(missing, t)
			}
		}
		if len(missing) > 0 {
			fmt.Fprintf(c.stderr, "reproboard history: no recorded run of %s in the last %d runs of %s\n", strings.Join(missing, ", "), *last, orNone(boards))
			if len(found) == 0 {
				return 2
			}
		}
	}
	if h.json {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		var err error
		if len(tests) == 0 {
			err = enc.Encode(runSummaries(all))
		} else {
			err = enc.Encode(found)
		}
		if err != nil {
			return c.fail(cmd, err)
		}
		return 0
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	if len(tests) == 0 {
		fmt.Fprintln(tw, "BOARD\tRUN\tTIME (UTC)\tCOMMIT\tBRANCH\tDURATION\tEXIT\tSECTIONS")
		for _, r := range runSummaries(all) {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.1fs\t%d\t%s\n", r.Board, r.ID, r.Time.Format("2006-01-02 15:04:05"), history.Short(r.Commit), r.Branch, r.Duration, r.ExitCode, r.Counts)
		}
		return flushExit(c, cmd, tw)
	}
	for i, sr := range found {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "%s (board %s, %s)\n", sr.Test, sr.Board, sr.Package)
		fmt.Fprintln(tw, "RUN\tTIME (UTC)\tCOMMIT\tOUTCOME\tDURATION\tATTEMPTS\tSLOPES")
		for _, e := range sr.Runs {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.3gs\t%d\t%s\n", e.Run.ID, e.Run.Time.Format("2006-01-02 15:04:05"), history.Short(e.Run.Commit), e.Outcome, e.Duration, e.Attempts, slopes(e.Measures))
		}
	}
	return flushExit(c, cmd, tw)
}

func flushExit(c *cli, cmd *command, tw *tabwriter.Writer) int {
	if err := tw.Flush(); err != nil {
		return c.fail(cmd, err)
	}
	return 0
}

// slopes is each measure as "metric=slope/op verdict".
func slopes(ms []history.Measure) string {
	var parts []string
	for _, m := range ms {
		v := "?"
		if m.Slope != nil {
			v = fmt.Sprintf("%.6g", *m.Slope)
		}
		p := fmt.Sprintf("%s=%s/op %s", m.Metric, v, m.Verdict)
		if m.Sensitivity != nil {
			p += fmt.Sprintf(" (sensitivity %.3g)", *m.Sensitivity)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

func bySection(boardName string, runs []*history.Run) []sectionRuns {
	var out []sectionRuns
	at := map[string]int{}
	for _, r := range runs {
		ref := &history.Ref{ID: r.ID, Time: r.Time, Commit: r.Commit, Branch: r.Branch, CommitURL: r.CommitURL, ExitCode: r.ExitCode}
		for _, s := range r.Sections {
			k := history.Key(s.Package, s.Test)
			i, ok := at[k]
			if !ok {
				i = len(out)
				at[k] = i
				out = append(out, sectionRuns{Board: boardName, Package: s.Package, Test: s.Test})
			}
			out[i].Runs = append(out[i].Runs, sectionEntry{Run: ref, Section: s})
		}
	}
	return out
}

// runSummary is one run without its sections: the JSON of history.
type runSummary struct {
	history.Ref
	Board    string         `json:"board"`
	Duration float64        `json:"duration_s"`
	Counts   string         `json:"-"`
	ByOut    map[string]int `json:"counts"`
}

func runSummaries(runs []*history.Run) []runSummary {
	out := []runSummary{}
	for _, r := range runs {
		rs := runSummary{Ref: history.Ref{ID: r.ID, Time: r.Time, Commit: r.Commit, Branch: r.Branch, CommitURL: r.CommitURL, ExitCode: r.ExitCode},
			Board: r.Board, Duration: r.Duration, ByOut: map[string]int{}}
		for _, s := range r.Sections {
			rs.ByOut[string(s.Outcome)]++
		}
		var parts []string
		for _, o := range slices.Sorted(maps.Keys(rs.ByOut)) {
			parts = append(parts, fmt.Sprintf("%d %s", rs.ByOut[o], o))
		}
		rs.Counts = fmt.Sprintf("%d: %s", len(r.Sections), strings.Join(parts, ", "))
		out = append(out, rs)
	}
	return out
}

func runFlaky(c *cli, cmd *command, args []string) int {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	var h historyReader
	h.register(fs)
	window := fs.Int("window", historyWindow, "")
	pos, code, ok := c.parse(fs, cmd, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return c.usageError(cmd, "flaky takes no arguments, got %s", strings.Join(pos, " "))
	}
	if *window < 2 {
		return c.usageError(cmd, "--window must be at least 2 runs: a flip needs two")
	}
	s, boards, err := h.open(c.ctx)
	if err != nil {
		return c.fail(cmd, err)
	}
	defer s.Close()
	list := []history.Unstable{}
	for _, b := range boards {
		runs, err := s.Runs(c.ctx, history.Query{Board: b, Limit: *window, NoMeasures: true})
		if err != nil {
			return c.fail(cmd, err)
		}
		list = append(list, history.FindUnstable(runs)...)
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].FlakeRate > list[j].FlakeRate })
	if h.json {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(list); err != nil {
			return c.fail(cmd, err)
		}
		return 0
	}
	if len(list) == 0 {
		fmt.Fprintf(c.stdout, "no section flipped in the last %d runs of %s\n", *window, orNone(boards))
		return 0
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FLAKE RATE\tFLIPS\tFLAKY\tRUNS\tBOARD\tSECTION\tOUTCOMES (oldest first)")
	for _, f := range list {
		fmt.Fprintf(tw, "%.0f%%\t%d\t%d\t%d\t%s\t%s\t%s\n", math.Round(100*f.FlakeRate), f.Flips, f.FlakyRuns, f.Present, f.Board, f.Test, outcomeLetters(f.Cells))
	}
	return flushExit(c, cmd, tw)
}

// outcomeLetters is a strip for a terminal: G green, R red, K known-red,
// F fixed, ~ flaky, S setup-fail, I inconclusive, . did not run.
func outcomeLetters(cells []history.Cell) string {
	var b strings.Builder
	for _, c := range cells {
		switch c.Outcome {
		case "GREEN":
			b.WriteByte('G')
		case "RED":
			b.WriteByte('R')
		case "KNOWN-RED":
			b.WriteByte('K')
		case "FIXED":
			b.WriteByte('F')
		case "FLAKY":
			b.WriteByte('~')
		case "SETUP-FAIL":
			b.WriteByte('S')
		case "INCONCLUSIVE":
			b.WriteByte('I')
		default:
			b.WriteByte('.')
		}
	}
	return b.String()
}

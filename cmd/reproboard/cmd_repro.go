package main

import (
	"flag"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/config"
)

var reproCommand = &command{
	name:    "repro",
	summary: "run one issue's repro sections; show verdicts, measurements, charts",
	usage: `usage: reproboard repro [flags] N

Runs the repro sections of issue N on the non-gating (bug-repro) boards:
every section whose known_red entry has issue N, and every section whose
name contains issueN. Prints each verdict with its measurements
(reproboard.measure, LEAK_MEASURE lines) and artefact paths (charts,
samples), which are kept under --out/artifacts. An N with no repro lists
the issues that have one, and exits 2.

Flags:
  --config FILE   the board config (default boards.yaml)
  --out DIR       raw events, built targets, artefacts (default out)
  --timeout D     go test -timeout (default 30m)
  --deadline D    bound on the whole go test run (default 2h)
`,
	run: runRepro,
}

func runRepro(c *cli, cmd *command, args []string) int {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	configPath := fs.String("config", "boards.yaml", "")
	out := fs.String("out", "out", "")
	timeout := fs.Duration("timeout", 30*time.Minute, "")
	deadline := fs.Duration("deadline", 2*time.Hour, "")
	pos, code, ok := c.parse(fs, cmd, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return c.usageError(cmd, "give exactly one issue number")
	}
	issue, err := strconv.Atoi(strings.TrimPrefix(pos[0], "#"))
	if err != nil || issue <= 0 {
		return c.usageError(cmd, "issue %q is not a positive number", pos[0])
	}
	s, err := c.openSession(*configPath, *out)
	if err != nil {
		return c.fail(cmd, err)
	}
	s.timeout, s.deadline = *timeout, *deadline
	var specs []*config.BoardSpec
	for _, b := range s.cfg.Boards {
		if !b.Gating {
			specs = append(specs, b)
		}
	}
	if len(specs) == 0 {
		return c.fail(cmd, fmt.Errorf("%s has no non-gating board; repros live on a bug-repro board (gating: false)", s.cfg.Path))
	}

	selected := map[string][]string{} // board -> sections of the issue
	issues := map[int]bool{}
	listings, err := s.listBoards(c.ctx, specs)
	if err != nil {
		return c.fail(cmd, err)
	}
	for _, spec := range specs {
		res := listings[spec.Name]
		if len(res.Problems) > 0 {
			var msgs []string
			for _, p := range res.Problems {
				msgs = append(msgs, p.Message+"\n"+p.Excerpt)
			}
			return c.fail(cmd, fmt.Errorf("board %s could not list its sections:\n%s", spec.Name, strings.Join(msgs, "\n")))
		}
		for _, name := range res.Names() {
			for _, n := range reproIssues(name, s.cfg.KnownRed) {
				issues[n] = true
				if n == issue {
					selected[spec.Name] = append(selected[spec.Name], name)
				}
			}
		}
	}
	if len(selected) == 0 {
		var have []string
		for _, n := range slices.Sorted(maps.Keys(issues)) {
			have = append(have, strconv.Itoa(n))
		}
		if len(have) == 0 {
			have = []string{"none"}
		}
		fmt.Fprintf(c.stderr, "reproboard repro: no repro section for issue %d on the boards %s; issues with repros: %s\n",
			issue, strings.Join(boardNames(specs), ", "), strings.Join(have, ", "))
		return 2
	}

	rp := &reporter{c: c}
	var codes []int
	for _, spec := range specs {
		sel := selected[spec.Name]
		if len(sel) == 0 {
			continue
		}
		if _, err := s.targetEnv(c.ctx, spec); err != nil {
			fmt.Fprintf(c.stderr, "reproboard repro: board %s: %v\n", spec.Name, err)
		}
		stem := fmt.Sprintf("issue%d", issue)
		if len(selected) > 1 {
			stem = spec.Name + "." + stem
		}
		b, err := s.runBoard(c.ctx, runSpec{spec: spec, runRE: runRegexp(sel), selected: sel, expected: sel, stem: stem})
		if err != nil {
			fmt.Fprintf(c.stderr, "reproboard repro: board %s: %v\n", spec.Name, err)
			codes = append(codes, 2)
			continue
		}
		if err := rp.write(b, ""); err != nil {
			fmt.Fprintf(c.stderr, "reproboard repro: %v\n", err)
		}
		printVerdicts(c, issue, b)
		codes = append(codes, b.ExitCode)
	}
	if err := rp.finish(); err != nil { // the step summary, in CI
		fmt.Fprintf(c.stderr, "reproboard repro: %v\n", err)
	}
	return combineExit(codes)
}

var issueInName = regexp.MustCompile(`(?i)issue[_-]?(\d+)`)

// reproIssues are the issues a section reproduces: its known_red entry's,
// and the N of every issueN in its name.
func reproIssues(test string, known []*config.KnownRed) []int {
	var out []int
	for _, k := range known {
		if k.Test == test {
			out = append(out, k.Issue)
		}
	}
	for _, m := range issueInName.FindAllStringSubmatch(test, -1) {
		if n, err := strconv.Atoi(m[1]); err == nil && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// printVerdicts ends a repro run with what a developer fixing the bug
// needs: each section's verdict, its measurement and where its charts are.
func printVerdicts(c *cli, issue int, b *board.Board) {
	fmt.Fprintf(c.stdout, "\nissue #%d:\n", issue)
	for _, s := range b.Sections {
		fmt.Fprintf(c.stdout, "  %s %s", s.Outcome, s.Test)
		if s.Reason != "" {
			fmt.Fprintf(c.stdout, ": %s", s.Reason)
		}
		fmt.Fprintln(c.stdout)
		for _, m := range strings.Split(s.Measure, "\n") {
			if m != "" {
				fmt.Fprintf(c.stdout, "    measure: %s\n", m)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(s.Artifacts)) {
			fmt.Fprintf(c.stdout, "    %s: %s\n", k, s.Artifacts[k])
		}
	}
}

func boardNames(specs []*config.BoardSpec) []string {
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	return names
}

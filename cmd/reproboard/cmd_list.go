package main

import (
	"cmp"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/excerpt"
)

var listCommand = &command{
	name:    "list",
	summary: "list boards, their sections (by a dry run) and the known reds",
	usage: `usage: reproboard list [--config FILE]

Lists every board of boards.yaml with its sections in name order, found
by a dry run (REPROBOARD_DRYRUN=1: sections are created and skipped, none
runs; one that skips for its own reason first is marked "skipped, not
counted"), and
the known_red entries with their issues. Exits 2 if the config is
invalid, a package does not build, or a known_red entry names no test.

Flags:
  --config FILE   the board config (default boards.yaml)
`,
	run: runList,
}

func runList(c *cli, cmd *command, args []string) int {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	configPath := fs.String("config", "boards.yaml", "")
	pos, code, ok := c.parse(fs, cmd, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return c.usageError(cmd, "list takes no arguments, got %s", strings.Join(pos, " "))
	}
	s, err := c.openSession(*configPath, "out")
	if err != nil {
		return c.fail(cmd, err)
	}
	listings, err := s.listBoards(c.ctx, s.cfg.Boards)
	if err != nil {
		return c.fail(cmd, err)
	}
	exit := 0
	var names []string
	for _, spec := range s.cfg.Boards {
		res := listings[spec.Name]
		gating := "non-gating"
		if spec.Gating {
			gating = "gating"
		}
		fmt.Fprintf(c.stdout, "board %s (%s, target %s): %s\n", spec.Name, gating, spec.Target, strings.Join(spec.Packages, " "))
		if spec.Description != "" {
			fmt.Fprintf(c.stdout, "  %s\n", spec.Description)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		sections := slices.Clone(res.Sections)
		slices.SortStableFunc(sections, func(a, b board.SectionResult) int {
			return cmp.Or(strings.Compare(a.Test, b.Test), strings.Compare(a.Package, b.Package))
		})
		for _, sr := range sections {
			names = append(names, sr.Test)
			line := "  " + sr.Test + "\t" + sr.Package
			for _, k := range s.cfg.KnownRed {
				if k.Test == sr.Test {
					line += fmt.Sprintf("\tknown-red #%d", k.Issue)
				}
			}
			if sr.Action == "skip" && !sr.Listed() && !strings.Contains(sr.Output, "reproboard dry run") {
				// It skipped for its own reason before the dry run reached
				// it: a run skips it too, and does not count it.
				line += "\tskipped, not counted: " + excerpt.OneLine(sr.SkipReason, 80)
			}
			fmt.Fprintln(tw, line)
		}
		_ = tw.Flush()
		if len(res.Sections) == 0 {
			fmt.Fprintln(c.stdout, "  (no sections)")
		}
		for _, p := range res.Problems {
			fmt.Fprintf(c.stderr, "reproboard list: board %s: %s\n%s\n", spec.Name, p.Message, p.Excerpt)
			exit = 2
		}
	}
	fmt.Fprintln(c.stdout, "known_red:")
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	for _, k := range s.cfg.KnownRed {
		fmt.Fprintf(tw, "  %s\t#%d\t%s\t%s\n", k.Test, k.Issue, platformsText(k), k.Reason)
	}
	_ = tw.Flush()
	if exit == 0 {
		if err := s.cfg.CheckTests(names); err != nil {
			return c.fail(cmd, err)
		}
	}
	return exit
}

func platformsText(k *config.KnownRed) string {
	if len(k.Platforms) == 0 {
		return "all platforms"
	}
	return strings.Join(k.Platforms, ",")
}

package script

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
)

// Variable is a variable every script sees ("$NAME"), or a group of them.
type Variable struct {
	Name, Doc string
}

// Variables lists the variables a script sees besides testscript's own
// ($WORK, the script's working directory). Processes of the section get
// them too, except the ones only scripts see.
var Variables = []Variable{
	{"$SECTION", "the section's root directory (mode 0700), under /tmp"},
	{"$CACHE", "$SECTION/cache: the target's state; its cache_var, when the profile names one, points here"},
	{"$RUNTIME", "$SECTION/runtime: sockets, pidfiles; its runtime_var, when named, points here; also XDG_RUNTIME_DIR"},
	{"$HOME", "$SECTION/home, with XDG_CACHE_HOME, XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_STATE_HOME inside it"},
	{"$TMPDIR", "$SECTION/tmp"},
	{"$TARGET", "the target binary's absolute path (scripts only; `target` runs it)"},
	{"$TARGET_NAME", "the target profile's name (scripts only)"},
	{"$TARGET_LOG", "the target's log file, from the profile's log: (scripts only)"},
	{"$REPROBOARD_SECTION", "the section's marker: every process the section starts inherits it"},
	{"env:, env_pass:", "the profile's env: entries, expanded; the outer variables env_pass names (scripts see those too)"},
}

// row is one command's line in the reference.
type row struct {
	name, synopsis, bang, doc string
}

func rows() []row {
	t := table()
	var out []row
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range t {
			if !yield(k) {
				return
			}
		}
	}) {
		c := t[name]
		synopsis, doc, _ := strings.Cut(c.usage, " — ")
		bang := c.bang
		switch {
		case c.neg == negNever:
			bang = "not allowed"
		case bang == "" && c.neg == negInvert:
			bang = "the command must fail"
		case bang == "":
			bang = "see what it does"
		}
		out = append(out, row{name, synopsis, bang, doc})
	}
	return out
}

// conditions is the line on script conditions.
const conditions = "Conditions: `[target:NAME]` (the target the scripts run against), `[feature:NAME]` (a feature of the target profile's `features:`, or of `REPROBOARD_TARGET_FEATURES=a,b`), `[root]`, and testscript's own (`[linux]`, `[exec:PROG]`, …)."

// Reference is the script reference as Markdown, generated from the
// usage strings the commands carry: the README's table is this text, and
// a test fails when they drift.
func Reference() string {
	var b strings.Builder
	b.WriteString("| command | `!` | what it does |\n|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, r := range rows() {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", cell(r.synopsis), cell(r.bang), cell(r.doc))
	}
	b.WriteString("\n" + conditions + "\n\nVariables every script sees (and `env` prints), besides testscript's `$WORK`:\n\n| variable | what it holds |\n|---|---|\n")
	for _, v := range Variables {
		fmt.Fprintf(&b, "| `%s` | %s |\n", v.Name, cell(v.Doc))
	}
	return b.String()
}

// ReferenceText is the script reference for a terminal: `reproboard help
// commands` prints it.
func ReferenceText() string {
	var b strings.Builder
	b.WriteString("Script commands (besides testscript's own: exec, stdout, stderr, exists, env, ...).\nEvery wait is bounded: -timeout defaults to the section's remaining time.\n\n")
	for _, r := range rows() {
		fmt.Fprintf(&b, "%s\n    %s\n    !: %s\n", r.synopsis, r.doc, r.bang)
	}
	b.WriteString("\n" + strings.ReplaceAll(conditions, "`", "") + "\n\nVariables:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, v := range Variables {
		fmt.Fprintf(tw, "  %s\t%s\n", v.Name, strings.ReplaceAll(v.Doc, "`", ""))
	}
	tw.Flush()
	return b.String()
}

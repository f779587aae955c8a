package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reproboard/reproboard/harness/config"
	"github.com/reproboard/reproboard/harness/script"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// invoke runs the CLI in-process.
func invoke(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage: reproboard <command>"},
		{[]string{"bogus"}, `reproboard: unknown command "bogus"`},
		{[]string{"run", "--bogus"}, "reproboard run: flag provided but not defined: -bogus\n\nusage: reproboard run [flags] [BOARD...]"},
		{[]string{"run", "--shard", "3/2"}, `reproboard run: --shard "3/2": want k/n with 1 <= k <= n, e.g. 2/4`},
		{[]string{"run", "--timeout", "0s"}, "--timeout and --deadline must be positive durations"},
		{[]string{"run", "--shard", "1/2/3"}, `reproboard run: --shard "1/2/3": want k/n with 1 <= k <= n, e.g. 2/4`},
		{[]string{"run", "--shard", "1/2x"}, `reproboard run: --shard "1/2x": want k/n`},
		{[]string{"run", "--json", "/proc/no/such/dir/board.json"}, "--json /proc/no/such/dir/board.json cannot be written"},
		{[]string{"merge", "--html", "/proc/no/such/dir/board.html", "x.json"}, "--html /proc/no/such/dir/board.html cannot be written"},
		{[]string{"repro"}, "reproboard repro: give exactly one issue number\n\nusage: reproboard repro [flags] N"},
		{[]string{"repro", "abc"}, `reproboard repro: issue "abc" is not a positive number`},
		{[]string{"list", "extra"}, "reproboard list: list takes no arguments, got extra"},
		{[]string{"merge"}, "reproboard merge: give the JSON reports of the shards"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := invoke(t, tc.args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, tc.want)
		})
	}
}

func TestHelpGoesToStdoutAndExits0(t *testing.T) {
	code, stdout, _ := invoke(t, "help")
	assert.Equal(t, 0, code)
	for _, name := range []string{"run", "repro", "list", "merge"} {
		assert.Contains(t, stdout, "  "+name+" ")
	}
	code, stdout, _ = invoke(t, "help", "merge")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(stdout, "usage: reproboard merge [flags] REPORT.json..."))
	code, stdout, _ = invoke(t, "run", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "--shard K/N")
	assert.Contains(t, stdout, "With several boards, --html and --md each write one file holding every\nboard")
	assert.Contains(t, stdout, "--json and\n--junit write one file per board")
}

func TestBadConfigExits2NamingFileAndLine(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "boards.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`targets:
  demod:
    build: ./examples/demod
    cache_var: DEMOD_CACHE_DIR
    runtime_var: DEMOD_RUNTIME_DIR
boards:
  guards:
    packages: [./guards/...]
    target: demod
    gating: true
known_red:
  - test: TestRepro/issue581
    reason: leak
    signature: LEAK
    owner: someone
`), 0o644))
	for _, cmd := range []string{"run", "list", "repro"} {
		args := []string{cmd, "--config", cfg}
		if cmd == "repro" {
			args = append(args, "581")
		}
		code, _, stderr := invoke(t, args...)
		assert.Equal(t, 2, code, cmd)
		assert.Contains(t, stderr, "reproboard "+cmd+": "+cfg+":12:5: known_red entry for TestRepro/issue581 has no issue; add issue: N", cmd)
		assert.Contains(t, stderr, "\n  "+cfg+`:15:5: unknown key "owner" in known_red entry`, cmd)
	}
}

func TestMergeRejectsWhatIsNotABoard(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"schema":"something/else"}`), 0o644))
	code, _, stderr := invoke(t, "merge", "--no-history", p)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, p+`: schema "something/else", want "reproboard.board/v1"`)
}

// A hand-made or truncated report must not merge as an empty green board.
func TestMergeValidatesAgainstTheSchema(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"schema":"reproboard.board/v1","board":null,"sections":null}`, `field "board" is missing or null`},
		{`{"schema":"reproboard.board/v1","board":"g","target":"t","gating":true,"strict":false,"platform":"p","exit_code":0,"exit_reason":"","sections":null,"counts":{}}`, `field "sections" is missing or null`},
		{`{"schema":"reproboard.board/v1","board":"g","target":"t","gating":true,"strict":false,"platform":"p","exit_code":7,"exit_reason":"","sections":[],"counts":{}}`, `exit_code 7, want 0, 1 or 2`},
		{`{"schema":"reproboard.board/v1","board":"g","target":"t","gating":true,"strict":false,"platform":"p","exit_code":0,"exit_reason":"","sections":[],"counts":{},"extra":1}`, `unknown field "extra"`},
	} {
		p := filepath.Join(t.TempDir(), "x.json")
		require.NoError(t, os.WriteFile(p, []byte(tc.json), 0o644))
		code, _, stderr := invoke(t, "merge", p)
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, tc.want)
	}
}

// The hostile inputs of the issue, through the CLI: exit 2 naming
// file:line:col, before anything is built.
func TestListRefusesHostileConfigs(t *testing.T) {
	dir := t.TempDir()
	base := "targets:\n  d:\n    build: ./d\n    cache_var: C\n    runtime_var: R\nboards:\n  b:\n    packages: [./x]\n    target: d\n    gating: true\n"
	var laughs strings.Builder
	laughs.WriteString(base + "known_red:\n  - &a0 [lol]\n")
	for i := 1; i < 10; i++ {
		laughs.WriteString(fmt.Sprintf("  - &a%d [%s]\n", i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), 10), ",")))
	}
	for name, tc := range map[string]struct{ text, want string }{
		"nesting":  {"targets: " + strings.Repeat("[", 250_000), ":1:41: nested 33 levels deep"},
		"1M [":     {"targets: " + strings.Repeat("[", 1_000_000), ":1:1: the file is 1000009 bytes, over the limit of 262144"},
		"alias":    {laughs.String(), ":13:10: aliases (*name) are not supported"},
		"entries":  {base + "known_red:\n" + strings.Repeat("- {}\n", 140_000), ":1:1: the file is 700140 bytes, over the limit of 262144"},
		"50k":      {base + "known_red:\n" + strings.Repeat("- {}\n", 50_000), ":10006:1: more than 20000 keys and list items"},
		"toolexec": {strings.Replace(base, "[./x]", "['-toolexec=/tmp/prog', ./x]", 1), `:8:16: packages entry "-toolexec=/tmp/prog" starts with -`},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := filepath.Join(dir, name+".yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(tc.text), 0o644))
			code, stdout, stderr := invoke(t, "list", "--config", cfg)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, "reproboard list: "+cfg+tc.want)
			assert.Less(t, len(stderr), 16<<10)
		})
	}
}

func TestCombineExit(t *testing.T) {
	assert.Equal(t, 0, combineExit(nil))
	assert.Equal(t, 0, combineExit([]int{0, 0}))
	assert.Equal(t, 2, combineExit([]int{0, 2}))
	assert.Equal(t, 1, combineExit([]int{2, 1, 0}), "a regression beats a setup failure")
}

func TestRunRegexpSelectsEachLevel(t *testing.T) {
	assert.Equal(t, `^(TestRepro)$/^(issue581)$`, runRegexp([]string{"TestRepro/issue581"}))
	assert.Equal(t, `^(TestRepro|TestLeak\.x)$/^(issue581|a)$`, runRegexp([]string{"TestRepro/issue581", "TestLeak.x", "TestRepro/a"}))
}

func TestReproIssues(t *testing.T) {
	known := []*config.KnownRed{{Test: "TestLeak", Issue: 42}}
	assert.Equal(t, []int{42}, reproIssues("TestLeak", known))
	assert.Equal(t, []int{581}, reproIssues("TestRepro/issue581", known))
	assert.Equal(t, []int{58}, reproIssues("TestRepro/Issue_58", known))
	assert.Empty(t, reproIssues("TestRepro/control", known))
}

func TestReportPathsGetTheBoardNameWhenSeveral(t *testing.T) {
	rp := &reporter{multi: true}
	assert.Equal(t, filepath.Join("out", "board.guards.json"), rp.reportPath(filepath.Join("out", "board.json"), "guards"))
	assert.Equal(t, "", rp.reportPath("", "guards"))
	assert.Equal(t, "board.json", (&reporter{}).reportPath("board.json", "guards"))
}

// parseXML fails t unless data is well-formed XML.
func parseXML(t *testing.T, data []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
	}
}

// help commands prints the script reference the README's table is made of.
func TestHelpCommandsPrintsTheScriptReference(t *testing.T) {
	code, stdout, _ := invoke(t, "help", "commands")
	assert.Equal(t, 0, code)
	assert.Equal(t, script.ReferenceText(), stdout)
	assert.Contains(t, stdout, "target [-timeout d] [-stdin FILE] [--] args...")
	assert.Contains(t, stdout, "$CACHE")
}

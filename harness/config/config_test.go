package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadValid(t *testing.T) {
	cfg, err := Load("testdata/config/valid.yaml")
	require.NoError(t, err)

	require.Len(t, cfg.Targets, 2)
	demod := cfg.Target("demod")
	require.NotNil(t, demod)
	assert.Equal(t, "./examples/demod", demod.Build)
	assert.Equal(t, "DEMOD_CACHE_DIR", demod.CacheVar)
	assert.Equal(t, "DEMOD_RUNTIME_DIR", demod.RuntimeVar)
	assert.Equal(t, "logs/demod-daemon.log", demod.Log)
	assert.Equal(t, map[string]string{"DEMOD_LOG_LEVEL": "debug"}, demod.Env)
	assert.Equal(t, "CBM_BINARY", cfg.Target("cbm").BinaryEnv)

	assert.Equal(t, []string{"guards", "bug-repro"}, cfg.BoardNames(), "file order")
	g := cfg.Board("guards")
	assert.Equal(t, []string{"./guards/..."}, g.Packages)
	assert.True(t, g.Gating)
	assert.False(t, cfg.Board("bug-repro").Gating)
	assert.Equal(t, "testdata/config/valid.yaml:15:3", g.Pos.String())

	require.Len(t, cfg.KnownRed, 2)
	k := cfg.KnownRed[0]
	assert.Equal(t, "TestRepro/issue581", k.Test)
	assert.Equal(t, 581, k.Issue)
	assert.True(t, k.Signature.MatchString("LEAK_MEASURE op=query verdict=RED"))
	assert.Equal(t, []string{"linux", "darwin/arm64"}, k.Platforms)
	assert.Equal(t, "a block reason", cfg.KnownRed[1].Reason)
	assert.Equal(t, "state/history.db", cfg.History)
	assert.Equal(t, HistoryKeep{Runs: 200, Age: 90 * 24 * time.Hour}, cfg.HistoryKeep)
}

func TestHistoryKeepForms(t *testing.T) {
	base := "targets:\n  demod: {build: ./d, cache_var: C, runtime_var: R}\nboards:\n  g: {packages: [./g/...], target: demod, gating: true}\n"
	for text, want := range map[string]HistoryKeep{
		"history_keep: 50":                 {Runs: 50},
		"history_keep: 720h":               {Age: 720 * time.Hour},
		"history_keep: 14d":                {Age: 14 * 24 * time.Hour},
		"history_keep: {runs: 3, age: 1h}": {Runs: 3, Age: time.Hour},
	} {
		cfg, err := Parse("b.yaml", []byte(base+text+"\n"))
		require.NoError(t, err, text)
		assert.Equal(t, want, cfg.HistoryKeep, text)
	}
}

func TestLoadRejects(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string // every error, exactly, in order
	}{
		{"unknown_top.yaml", []string{
			`unknown_top.yaml:11:1: unknown key "knwon_red" at top level (did you mean "known_red"?); expected one of targets, boards, known_red, history, history_keep`,
		}},
		{"unknown_nested.yaml", []string{
			`unknown_nested.yaml:6:5: unknown key "logfile" in target "demod"; expected one of binary, binary_env, build, cache_var, runtime_var, log, env, env_pass, features`,
			`unknown_nested.yaml:8:3: board "guards" has no gating; say gating: true (a guard board that fails CI) or gating: false (a bug-repro board)`,
			`unknown_nested.yaml:11:5: unknown key "gatting" in board "guards" (did you mean "gating"?); expected one of packages, target, gating, description, rerun_fails`,
			`unknown_nested.yaml:17:5: unknown key "ticket" in known_red entry; expected one of test, issue, reason, signature, platforms`,
		}},
		{"history_keep.yaml", []string{
			`history_keep.yaml:5:10: history must be a string, got the number 12; quote it`,
			`history_keep.yaml:6:15: history_keep age "soon" is not a positive age; write history_keep: 200 (runs per board), history_keep: 90d (an age: d for days, or a Go duration such as 720h), or both as runs: and age:`,
		}},
		{"missing_issue.yaml", []string{
			`missing_issue.yaml:12:5: known_red entry for TestRepro/issue581 has no issue; add issue: N, the number of the bug it reproduces`,
		}},
		{"missing_reason.yaml", []string{
			`missing_reason.yaml:12:5: known_red entry for TestRepro/issue581 has no reason; add reason: a line saying what is broken`,
		}},
		{"missing_signature.yaml", []string{
			`missing_signature.yaml:12:5: known_red entry for TestRepro/issue581 has no signature; add signature: a Go regexp matching its failure output, so a different failure is not whitelisted`,
		}},
		{"duplicate_test.yaml", []string{
			`duplicate_test.yaml:16:5: known_red entry for TestRepro/issue581 is a duplicate of the one at 12:5; keep one entry per test`,
		}},
		{"duplicate_key.yaml", []string{
			`duplicate_key.yaml:6:5: key "cache_var" repeats in target "demod" (first at 4:5); keep one`,
			`duplicate_key.yaml:12:3: board "guards" is defined twice (first at 8:3); keep one`,
		}},
		{"bad_regexp.yaml", []string{
			"bad_regexp.yaml:15:16: signature of TestRepro/issue581 is not a valid Go regexp: error parsing regexp: missing closing ): `verdict=(RED`; fix it (syntax: https://pkg.go.dev/regexp/syntax)",
		}},
		{"unknown_target.yaml", []string{
			`unknown_target.yaml:9:13: board "guards" names target "demo", which targets does not define; expected one of demod`,
		}},
		{"wrong_type.yaml", []string{
			`wrong_type.yaml:8:15: packages must be a list (lines starting with -), got the string "./guards/..."`,
			`wrong_type.yaml:10:13: gating must be true or false, got the string "yes"`,
			`wrong_type.yaml:13:12: issue must be an integer, got the string "581"; write it unquoted, e.g. issue: 581`,
		}},
		{"target_source.yaml", []string{
			`target_source.yaml:2:3: target "demod" says neither binary, binary_env nor build; give exactly one (e.g. build: ./examples/demod)`,
			`target_source.yaml:5:3: target "cbm" gives binary and build; give exactly one of binary, binary_env and build`,
			`target_source.yaml:9:18: runtime_var "CBM-RUNTIME" is not an environment variable name; use letters, digits and _`,
			`target_source.yaml:11:3: board "guards" has no gating; say gating: true (a guard board that fails CI) or gating: false (a bug-repro board)`,
		}},
		{"syntax.yaml", []string{
			`syntax.yaml:3:1: not valid YAML: ',' or ']' must be specified`,
		}},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".yaml"), func(t *testing.T) {
			cfg, err := Load(filepath.Join("testdata/config", tc.file))
			require.Error(t, err)
			assert.Nil(t, cfg)
			var want []string
			for _, w := range tc.want {
				want = append(want, "testdata/config/"+w)
			}
			assert.Equal(t, want, strings.Split(err.Error(), "\n"))
		})
	}
}

func TestLoadMissingFileNamesIt(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "boards.yaml"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "boards.yaml: cannot read the board config")
}

func TestParseSmallCases(t *testing.T) {
	const base = "targets:\n  d:\n    build: ./d\n    cache_var: C\n    runtime_var: R\nboards:\n  b:\n    packages: [./x]\n    target: d\n    gating: true\n"
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "", "boards.yaml:1:1: the file is empty; expected the keys targets, boards and known_red"},
		{"null known_red", base + "known_red:\n", ""},
		{"empty reason", base + "known_red:\n  - test: TestA\n    issue: 1\n    reason: \"\"\n    signature: x\n",
			`boards.yaml:14:13: known_red entry for TestA has an empty reason; say in one line what is broken`},
		{"zero issue", base + "known_red:\n  - test: TestA\n    issue: 0\n    reason: r\n    signature: x\n",
			`boards.yaml:13:12: issue must be a positive issue number, got 0`},
		{"not a test name", base + "known_red:\n  - test: issue581\n    issue: 1\n    reason: r\n    signature: x\n",
			`boards.yaml:12:11: test "issue581" is not a Go test name; write the full name as go test prints it, e.g. TestRepro/issue581`},
		{"bad platform", base + "known_red:\n  - test: TestA\n    issue: 1\n    reason: r\n    signature: x\n    platforms: [Linux]\n",
			`boards.yaml:16:16: platform "Linux" is not GOOS or GOOS/GOARCH (e.g. linux, darwin, linux/amd64)`},
		{"alias", base + "known_red: *x\n", `boards.yaml:11:12: aliases (*name) are not supported in boards.yaml; write the value out`},
		{"rerun_fails", strings.Replace(base, "gating: true\n", "gating: true\n    rerun_fails: 11\n", 1),
			`boards.yaml:11:18: rerun_fails must be between 0 and 10, got 11`},
		{"no boards", "targets:\n  d:\n    build: ./d\n    cache_var: C\n    runtime_var: R\n",
			"boards.yaml:1:1: no boards; add boards: with at least one board (its packages, target and gating)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("boards.yaml", []byte(tc.text))
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

func TestCheckTests(t *testing.T) {
	cfg, err := Load("testdata/config/valid.yaml")
	require.NoError(t, err)

	assert.NoError(t, cfg.CheckTests([]string{"TestGuards/lifecycle", "TestRepro/issue581", "TestRepro/issue600"}))

	err = cfg.CheckTests([]string{"TestRepro/issue581", "TestRepro/issue58"})
	require.Error(t, err)
	assert.Equal(t, "testdata/config/valid.yaml:31:5: known_red entry names test TestRepro/issue600, which no board package defines; fix the name (as go test -json prints it) or drop the entry", err.Error())

	// A parent that skipped before creating subtests hides them: say so.
	err = cfg.CheckTests([]string{"TestRepro"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "known_red entry names test TestRepro/issue581, which no board package defines")
	assert.Contains(t, err.Error(), "the dry run listed TestRepro as a section")
}

func TestKnownRedAppliesTo(t *testing.T) {
	k := &KnownRed{Platforms: []string{"linux", "darwin/arm64"}}
	assert.True(t, k.AppliesTo("linux/amd64"))
	assert.True(t, k.AppliesTo("darwin/arm64"))
	assert.False(t, k.AppliesTo("darwin/amd64"))
	assert.False(t, k.AppliesTo("windows/amd64"))
	assert.True(t, (&KnownRed{}).AppliesTo("plan9/386"), "no platforms: everywhere")
}

// The real boards.yaml at the repository root must load: it is the file
// every CI job reads.
func TestRepositoryBoardsYAML(t *testing.T) {
	path := filepath.Join("..", "..", "boards.yaml")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the repository's boards.yaml is missing: %v", err)
	}
	cfg, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"guards", "bug-repro"}, cfg.BoardNames())
	assert.True(t, cfg.Board("guards").Gating)
	assert.False(t, cfg.Board("bug-repro").Gating)
	assert.Equal(t, "./examples/demod", cfg.Target("demod").Build)
	assert.Equal(t, "CBM_BINARY", cfg.Target("codebase-memory-mcp").BinaryEnv)
	require.Len(t, cfg.KnownRed, 1)
	assert.Equal(t, 581, cfg.KnownRed[0].Issue)
	assert.Equal(t, "TestRepro/issue581", cfg.KnownRed[0].Test)
}

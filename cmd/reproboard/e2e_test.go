package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/outcome"
	"github.com/reproboard/reproboard/harness/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replacingModule returns the go.mod and go.sum of a module named path
// that requires this repository through a replace directive, as a user's
// module would; its requirements are this module's, so go test works
// offline.
func replacingModule(t *testing.T, path string) (gomod, gosum string) {
	t.Helper()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	mod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	require.NoError(t, err)
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	require.NoError(t, err)
	gomod = strings.Replace(string(mod), "module github.com/reproboard/reproboard", "module "+path, 1)
	gomod += "\nrequire github.com/reproboard/reproboard v0.0.0\n\nreplace github.com/reproboard/reproboard => " + repo + "\n"
	return gomod, string(sum)
}

// fixtureModule writes a small module that uses this repository's harness
// (through a replace) with a target to build, a gating guard board, a
// bug-repro board with a leak repro that records a chart, and a board
// whose target does not build. Its go.mod copies this module's
// requirements, so go test works offline.
func fixtureModule(t *testing.T) string {
	t.Helper()
	mod, gosum := replacingModule(t, "example.com/fixture")

	dir := t.TempDir()
	files := map[string]string{
		"go.mod": mod,
		"go.sum": gosum,
		"boards.yaml": `targets:
  fake:
    build: ./cmd/fake
    cache_var: FAKE_CACHE
    runtime_var: FAKE_RUNTIME
  broken:
    build: ./cmd/broken
    cache_var: BROKEN_CACHE
    runtime_var: BROKEN_RUNTIME
boards:
  guards:
    packages: [./guards/...]
    target: fake
    gating: true
  bug-repro:
    packages: [./repro/...]
    target: fake
    gating: false
  broken:
    packages: [./guards/...]
    target: broken
    gating: true
  slow:
    packages: [./slow/...]
    target: fake
    gating: true
  flaky:
    packages: [./flaky/...]
    target: fake
    gating: true
  flaky-cfg:
    packages: [./flaky/...]
    target: fake
    gating: true
    rerun_fails: 1
known_red:
  - test: TestRepro/issue581
    issue: 581
    reason: query-path memory growth
    signature: 'LEAK_MEASURE .*verdict=RED'
`,
		"cmd/fake/main.go": `package main

import (
	"fmt"
	"os"
)

func main() { fmt.Println("fake", os.Args[1]) }
`,
		"cmd/broken/main.go": "package main\n\nfunc main() { undefinedCall() }\n",
		"guards/guards_test.go": `package guards

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/reproboard/reproboard/harness/outcome"
)

func TestGuards(t *testing.T) {
	for _, name := range []string{"start", "status", "stop"} {
		t.Run(name, func(t *testing.T) {
			outcome.Select(t)
			out, err := exec.Command(os.Getenv("REPROBOARD_TARGET_BINARY"), name).Output()
			outcome.Require(t, err, "run the target")
			if got := strings.TrimSpace(string(out)); got != "fake "+name {
				t.Fatalf("got %q", got)
			}
		})
	}
}
`,
		"slow/slow_test.go": `package slow

import (
	"testing"
	"time"

	"github.com/reproboard/reproboard/harness/outcome"
)

func TestSlow(t *testing.T) {
	t.Run("done", func(t *testing.T) { outcome.Select(t) })
	t.Run("hangs", func(t *testing.T) { outcome.Select(t); time.Sleep(time.Minute) })
}
`,
		"flaky/flaky_test.go": `package flaky

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reproboard/reproboard/harness/outcome"
)

// first-run-fails fails on its first run in FLAKY_DIR only, as a guard
// with a tight internal deadline does on a loaded machine.
func TestFlaky(t *testing.T) {
	t.Run("first-run-fails", func(t *testing.T) {
		outcome.Select(t)
		marker := filepath.Join(os.Getenv("FLAKY_DIR"), "ran-once")
		if _, err := os.Stat(marker); err != nil {
			if err := os.WriteFile(marker, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Fatal("deadline 2s passed (first run only)")
		}
	})
	t.Run("steady", func(t *testing.T) { outcome.Select(t) })
}
`,
		"repro/repro_test.go": `package repro

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reproboard/reproboard/harness/outcome"
)

const svg = ` + "`" + `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><line x1="0" y1="10" x2="10" y2="0" stroke="red"/></svg>` + "`" + `

func TestRepro(t *testing.T) {
	t.Run("issue581", func(t *testing.T) {
		outcome.Select(t)
		chart := filepath.Join(t.ArtifactDir(), "issue581.svg")
		if err := os.WriteFile(chart, []byte(svg), 0o644); err != nil {
			t.Fatal(err)
		}
		outcome.Artifact(t, "chart", chart)
		const m = "LEAK_MEASURE op=query slope=5.1KiB/op budget=4KiB/op verdict=RED"
		t.Attr(outcome.AttrMeasure, m)
		t.Log(m)
		t.Fatal("query-path memory grows")
	})
	t.Run("issue600", func(t *testing.T) { outcome.Select(t); t.Log("bounded") })
	t.Run("control", func(t *testing.T) { outcome.Select(t) })
	t.Run("board-env", func(t *testing.T) {
		outcome.Select(t)
		if os.Getenv("REPROBOARD_BOARD") != "bug-repro" || os.Getenv("REPROBOARD_TARGET") != "fake" {
			t.Fatalf("board env not set: %q %q", os.Getenv("REPROBOARD_BOARD"), os.Getenv("REPROBOARD_TARGET"))
		}
	})
}
`,
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	return dir
}

func readBoard(t *testing.T, path string) *board.Board {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	b, err := report.ReadJSON(f, path)
	require.NoError(t, err)
	b.Resolve(filepath.Dir(path))
	return b
}

func outcomes(b *board.Board) map[string]string {
	m := map[string]string{}
	for _, s := range b.Sections {
		m[s.Test] = string(s.Outcome)
	}
	return m
}

// offlineGo runs go for a fixture module from the module cache alone, out
// of any workspace, with plain output.
func offlineGo(t *testing.T) {
	t.Setenv("GOPROXY", "off") // everything needed is in the module cache
	t.Setenv("GOWORK", "off")
	t.Setenv("NO_COLOR", "1")
}

// TestEndToEnd drives the CLI in-process against real go test runs.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test and go build on a fixture module")
	}
	offlineGo(t)
	t.Setenv("GOFLAGS", "")
	dir := fixtureModule(t)
	cfg := filepath.Join(dir, "boards.yaml")
	reports := t.TempDir()
	summary := filepath.Join(reports, "summary.md")
	t.Setenv("GITHUB_STEP_SUMMARY", summary)

	wantRepro := map[string]string{
		"TestRepro/issue581": "KNOWN-RED", "TestRepro/issue600": "GREEN",
		"TestRepro/control": "GREEN", "TestRepro/board-env": "GREEN",
	}

	t.Run("run two boards with every report", func(t *testing.T) {
		out := filepath.Join(reports, "out")
		code, stdout, stderr := invoke(t, "run", "--config", cfg, "--out", out,
			"--json", filepath.Join(reports, "board.json"), "--md", filepath.Join(reports, "board.md"),
			"--html", filepath.Join(reports, "board.html"), "--junit", filepath.Join(reports, "board.xml"),
			"guards", "bug-repro")
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		assert.Contains(t, stderr, "building target fake (./cmd/fake)")
		assert.Contains(t, stderr, "KNOWN-RED     TestRepro/issue581  ", "one progress line per section off a terminal")
		assert.Contains(t, stdout, "guards: 3 section(s): 3 GREEN — exit 0: ok: nothing regressed")
		assert.Contains(t, stdout, "bug-repro: 4 section(s): 1 KNOWN-RED, 3 GREEN — exit 0")

		g := readBoard(t, filepath.Join(reports, "board.guards.json"))
		assert.Equal(t, map[string]string{"TestGuards/start": "GREEN", "TestGuards/status": "GREEN", "TestGuards/stop": "GREEN"}, outcomes(g))
		r := readBoard(t, filepath.Join(reports, "board.bug-repro.json"))
		assert.Equal(t, wantRepro, outcomes(r))
		kept := readBoard(t, filepath.Join(out, "bug-repro.json"))
		assert.Equal(t, r.Sections, kept.Sections, "the run keeps its JSON in --out")
		assert.FileExists(t, filepath.Join(out, "bug-repro.events.jsonl"))
		assert.FileExists(t, filepath.Join(out, "bin", "fake"))

		var leak board.Section
		for _, s := range r.Sections {
			if s.Test == "TestRepro/issue581" {
				leak = s
			}
		}
		assert.Equal(t, 581, leak.Issue)
		assert.Equal(t, "LEAK_MEASURE op=query slope=5.1KiB/op budget=4KiB/op verdict=RED", leak.Measure)
		chart := leak.Artifacts["chart"]
		assert.True(t, strings.HasPrefix(chart, filepath.Join(out, "artifacts")+string(filepath.Separator)), "artefacts are kept in --out: %s", chart)
		assert.FileExists(t, chart)

		// One page and one summary hold both boards; JSON and JUnit stay per board.
		html, err := os.ReadFile(filepath.Join(reports, "board.html"))
		require.NoError(t, err)
		assert.Contains(t, string(html), `<h2>board guards: <span class="exit0">exit 0</span> (green)</h2>`)
		assert.Contains(t, string(html), `<h2>board bug-repro: <span class="exit0">exit 0</span> (green)</h2>`)
		assert.Contains(t, string(html), `src="data:image/svg&#43;xml;base64,`)
		parseXML(t, html)
		assert.NoFileExists(t, filepath.Join(reports, "board.guards.html"))

		junit, err := os.ReadFile(filepath.Join(reports, "board.bug-repro.xml"))
		require.NoError(t, err)
		parseXML(t, junit)
		assert.Equal(t, 1, strings.Count(string(junit), `name="TestRepro/issue581"`))

		md, err := os.ReadFile(filepath.Join(reports, "board.md"))
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(md), "## ✅ reproboard — exit 0 (green)\n"), string(md))
		assert.Contains(t, string(md), "\n### ✅ board guards — exit 0\n")
		assert.Contains(t, string(md), "\n### ✅ board bug-repro — exit 0\n")
		stepSummary, err := os.ReadFile(summary)
		require.NoError(t, err)
		assert.Equal(t, 1, strings.Count(string(stepSummary), "\n### ✅ board guards — exit 0\n"), "the step summary gets the document once")
		assert.Contains(t, string(stepSummary), "| GREEN | | | 3 section(s) | collapsed: the JSON and HTML reports list them |\n", "GREEN rows collapse to a count there")
		assert.Contains(t, string(md), "| GREEN |  | 0.0s | `TestGuards/start` |  |\n", "--md lists them")
		assert.Contains(t, string(md), "**history: the first recorded run of board guards; nothing to compare yet**")
		assert.NoFileExists(t, filepath.Join(reports, "board.guards.md"))
		assert.Contains(t, stdout, "\n2 boards (guards exit 0, bug-repro exit 0) — exit 0: ok: nothing regressed on any board\n")
	})

	t.Run("a target that does not build exits 2", func(t *testing.T) {
		out := filepath.Join(reports, "broken")
		code, stdout, stderr := invoke(t, "run", "--config", cfg, "--out", out, "broken")
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "reproboard run: board broken: target broken did not build: cmd/broken/main.go:3:15: undefined: undefinedCall")
		assert.Contains(t, strings.Join(strings.Fields(stdout), " "), "broken: 0 section(s) — exit 2: no section ran: nothing was verified; target broken did not build", "the summary, wrapped at 80 columns")
		assert.Equal(t, 2, readBoard(t, filepath.Join(out, "broken.json")).ExitCode)
	})

	t.Run("a run past its deadline is stopped, and the hanging section is RED", func(t *testing.T) {
		start := time.Now()
		code, stdout, stderr := invoke(t, "run", "--config", cfg, "--out", filepath.Join(reports, "slow"), "--deadline", "3s", "slow")
		assert.Less(t, time.Since(start), 30*time.Second, "the test sleeps a minute: the deadline must stop it")
		assert.Equal(t, 1, code, "a gating board with a RED section; stderr:\n%s", stderr)
		assert.Contains(t, stdout, "--- PROBLEM go-test: go test did not finish within 3s (--deadline) and was stopped; the sections that finished are on the board")
		assert.Regexp(t, `(?m)^GREEN\s+\S+\s+TestSlow/done`, stdout)
		assert.Regexp(t, `(?m)^RED\s+\S+\s+TestSlow/hangs\s+\S`, stdout)
		assert.Contains(t, stdout, "--- RED TestSlow/hangs: did not finish: the test binary stopped while it ran:")
	})

	t.Run("merge of two shards equals the unsharded board", func(t *testing.T) {
		var parts []string
		for _, shard := range []string{"1/2", "2/2"} {
			out := filepath.Join(reports, "shard"+shard[:1])
			code, stdout, stderr := invoke(t, "run", "--config", cfg, "--out", out, "--shard", shard, "bug-repro")
			require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			p := filepath.Join(out, "bug-repro.shard"+shard[:1]+"of2.json")
			b := readBoard(t, p)
			assert.Equal(t, shard, b.Shard)
			assert.NotEmpty(t, b.Sections, "shard %s ran nothing: the merge proves little", shard)
			for _, s := range b.Sections {
				k, n, _ := outcome.ParseShard(shard)
				assert.True(t, outcome.InShard(s.Test, k, n), "%s ran in shard %s", s.Test, shard)
			}
			parts = append(parts, p)
		}
		merged := filepath.Join(reports, "merged.json")
		mergedJUnit := filepath.Join(reports, "merged.xml")
		hist := filepath.Join(reports, "merged-history.db")
		code, stdout, stderr := invoke(t, append([]string{"merge", "--history", hist, "--json", merged, "--junit", mergedJUnit, "--out", reports}, parts...)...)
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		m := readBoard(t, merged)
		require.NotNil(t, m.RunInfo, "the merged board carries its run")
		assert.False(t, m.RunInfo.Time.IsZero())
		// The merge records the whole board once; the shards recorded nothing.
		code, stdout, stderr = invoke(t, "history", "--history", hist, "--json")
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, 1, strings.Count(stdout, `"board": "bug-repro"`), stdout)
		assert.Contains(t, stdout, fmt.Sprintf(`"%s": %d`, "GREEN", 3))
		whole := readBoard(t, filepath.Join(reports, "board.bug-repro.json"))
		assert.Equal(t, wantRepro, outcomes(m))
		assert.Equal(t, whole.ExitCode, m.ExitCode)
		assert.Equal(t, whole.Counts, m.Counts)
		assert.Empty(t, m.Shard)

		junit, err := os.ReadFile(mergedJUnit)
		require.NoError(t, err)
		parseXML(t, junit)
		for test := range wantRepro {
			assert.Equal(t, 1, strings.Count(string(junit), `name="`+test+`"`), test)
		}

		code, _, _ = invoke(t, "merge", "--no-history", "--strict", "--out", t.TempDir(), parts[0], parts[1])
		assert.Equal(t, 0, code, "no FIXED section: strict changes nothing")

		// Only the merge job's out/ is uploaded: its reports link inside
		// it, and still do once it is moved.
		mout := filepath.Join(reports, "merge-out")
		code, _, stderr = invoke(t, append([]string{"merge", "--out", mout, "--json", filepath.Join(mout, "bug-repro.json"),
			"--junit", filepath.Join(mout, "bug-repro.xml"), "--html", filepath.Join(mout, "bug-repro.html")}, parts...)...)
		require.Equal(t, 0, code, stderr)
		moved := filepath.Join(reports, "downloaded")
		require.NoError(t, os.Rename(mout, moved))
		raw, err := os.ReadFile(filepath.Join(moved, "bug-repro.json"))
		require.NoError(t, err)
		var rel struct {
			Sections []struct {
				Test      string
				Artifacts map[string]string
			}
		}
		require.NoError(t, json.Unmarshal(raw, &rel))
		links := 0
		for _, s := range rel.Sections {
			for _, p := range s.Artifacts {
				assert.False(t, filepath.IsAbs(p), "%s: %s", s.Test, p)
				assert.FileExists(t, filepath.Join(moved, p))
				links++
			}
		}
		assert.Positive(t, links, "the merged board has artefacts to link")
		xmlData, err := os.ReadFile(filepath.Join(moved, "bug-repro.xml"))
		require.NoError(t, err)
		assert.NotContains(t, string(xmlData), `value="/`, "no absolute path in the JUnit")

		code, _, stderr = invoke(t, "merge", "--out", t.TempDir(), parts[0])
		assert.Equal(t, 2, code, "one shard of two")
		assert.Contains(t, stderr, "board bug-repro: shard(s) 2/2 missing")
		code, stdout, _ = invoke(t, "merge", "--out", t.TempDir(), "--allow-partial", parts[0])
		assert.Equal(t, 2, code, "a partial board is never green")
		assert.Contains(t, stdout, "PARTIAL: shard(s) 2/2 missing")
	})

	t.Run("a section that fails on its first run only is FLAKY with --rerun-fails 1", func(t *testing.T) {
		section := func(b *board.Board, test string) board.Section {
			for _, s := range b.Sections {
				if s.Test == test {
					return s
				}
			}
			t.Fatalf("no section %s on board %s", test, b.Name)
			return board.Section{}
		}
		out := filepath.Join(reports, "flaky")
		t.Setenv("FLAKY_DIR", t.TempDir())
		code, stdout, stderr := invoke(t, "run", "--config", cfg, "--out", out, "--rerun-fails", "1", "flaky")
		require.Equal(t, 0, code, "FLAKY does not gate; stdout:\n%s\nstderr:\n%s", stdout, stderr)
		assert.Contains(t, stderr, "re-running example.com/fixture/flaky TestFlaky/first-run-fails alone (1 of 1): it was RED")
		b := readBoard(t, filepath.Join(out, "flaky.json"))
		f := section(b, "TestFlaky/first-run-fails")
		assert.Equal(t, outcome.Flaky, f.Outcome)
		require.Len(t, f.Attempts, 2)
		assert.Equal(t, outcome.Red, f.Attempts[0].Outcome)
		assert.Contains(t, f.Attempts[0].Reason, "deadline 2s passed (first run only)")
		assert.Equal(t, outcome.Green, f.Attempts[1].Outcome)
		assert.Equal(t, outcome.Green, section(b, "TestFlaky/steady").Outcome)
		assert.Empty(t, section(b, "TestFlaky/steady").Attempts, "a section that passed is not re-run")
		assert.Contains(t, stdout, "FLAKY")

		t.Setenv("FLAKY_DIR", t.TempDir())
		code, _, _ = invoke(t, "run", "--config", cfg, "--out", out, "flaky")
		assert.Equal(t, 1, code, "without re-runs the first failure is RED")
		assert.Equal(t, outcome.Red, section(readBoard(t, filepath.Join(out, "flaky.json")), "TestFlaky/first-run-fails").Outcome)

		t.Setenv("FLAKY_DIR", t.TempDir())
		code, _, _ = invoke(t, "run", "--config", cfg, "--out", out, "--rerun-fails", "1", "--strict", "flaky")
		assert.Equal(t, 1, code, "FLAKY gates under --strict")

		t.Setenv("FLAKY_DIR", t.TempDir())
		code, _, stderr = invoke(t, "run", "--config", cfg, "--out", out, "flaky-cfg")
		assert.Equal(t, 0, code, "rerun_fails: 1 in boards.yaml: %s", stderr)
		assert.Equal(t, outcome.Flaky, section(readBoard(t, filepath.Join(out, "flaky-cfg.json")), "TestFlaky/first-run-fails").Outcome)
	})

	t.Run("repro runs one issue and shows its measurements", func(t *testing.T) {
		out := filepath.Join(reports, "repro")
		code, stdout, stderr := invoke(t, "repro", "--config", cfg, "--out", out, "581")
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		assert.Contains(t, stdout, "issue #581:\n  KNOWN-RED TestRepro/issue581: query-path memory growth\n")
		assert.Contains(t, stdout, "    measure: LEAK_MEASURE op=query slope=5.1KiB/op budget=4KiB/op verdict=RED\n")
		assert.Contains(t, stdout, "    chart: "+filepath.Join(out, "artifacts", "issue581"))
		assert.NotContains(t, stdout, "TestRepro/control", "only the issue's sections run")
		assert.Contains(t, stdout, "bug-repro: 1 section(s): 1 KNOWN-RED — exit 0")
	})

	t.Run("repro of an unknown issue lists the issues that have one", func(t *testing.T) {
		code, stdout, stderr := invoke(t, "repro", "--config", cfg, "999")
		assert.Equal(t, 2, code)
		assert.Empty(t, stdout)
		assert.Equal(t, "reproboard repro: no repro section for issue 999 on the boards bug-repro; issues with repros: 581, 600\n", stderr)
	})

	t.Run("list", func(t *testing.T) {
		code, stdout, stderr := invoke(t, "list", "--config", cfg)
		require.Equal(t, 0, code, "list builds no target, so the broken target does not matter: %s", stderr)
		assert.Regexp(t, `(?m)^board bug-repro \(non-gating, target fake\): \./repro/\.\.\.$`, stdout)
		assert.Regexp(t, `(?m)^  TestRepro/issue581\s+example\.com/fixture/repro\s+known-red #581$`, stdout)
		assert.Regexp(t, `(?m)^  TestGuards/stop\s+example\.com/fixture/guards$`, stdout)
		assert.Regexp(t, `(?m)^  TestRepro/issue581\s+#581\s+all platforms\s+query-path memory growth$`, stdout)
	})

	t.Run("a known_red entry for a test that does not exist stops the run", func(t *testing.T) {
		data, err := os.ReadFile(cfg)
		require.NoError(t, err)
		stale := filepath.Join(dir, "stale.yaml")
		require.NoError(t, os.WriteFile(stale, append(data, []byte("  - test: TestRepro/gone\n    issue: 7\n    reason: gone\n    signature: x\n")...), 0o644))
		code, _, stderr := invoke(t, "run", "--config", stale, "--out", filepath.Join(reports, "stale"), "guards")
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, stale+":41:5: known_red entry names test TestRepro/gone, which no board package defines")
	})
}

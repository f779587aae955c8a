package report

import (
	"bytes"
	"encoding/xml"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/outcome"
)

type parsedCase struct {
	Name       string `xml:"name,attr"`
	Properties []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	} `xml:"properties>property"`
	Failure *struct {
		Message string `xml:"message,attr"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
	} `xml:"error"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
	SystemOut string `xml:"system-out"`
}

type parsedSuites struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Skipped  int `xml:"skipped,attr"`
	Suites   []struct {
		Cases []parsedCase `xml:"testcase"`
	} `xml:"testsuite"`
}

func (c parsedCase) prop(name string) string {
	for _, p := range c.Properties {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

func junitOf(t *testing.T, b *board.Board) (parsedSuites, map[string]parsedCase) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, WriteJUnit(&buf, b))
	var doc parsedSuites
	require.NoError(t, xml.Unmarshal(buf.Bytes(), &doc), buf.String())
	cases := map[string]parsedCase{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			_, dup := cases[c.Name]
			require.False(t, dup, "%s is a testcase twice", c.Name)
			cases[c.Name] = c
		}
	}
	return doc, cases
}

// JUnit agrees with the board: one testcase per section, every outcome
// mapped, parents not counted.
func TestJUnitAgreesWithTheBoard(t *testing.T) {
	b := fixtureBoard(t, board.Options{Board: "guards", Target: "demod", Gating: true, Platform: "linux/amd64"})
	doc, cases := junitOf(t, b)
	require.Len(t, cases, len(b.Sections)+len(b.Problems), "one testcase per section and per problem")
	c := b.Counts
	assert.Equal(t, c[string(outcome.Red)]+c[string(outcome.Inconclusive)], doc.Failures)
	assert.Equal(t, c[string(outcome.SetupFail)]+len(b.Problems), doc.Errors)
	assert.Equal(t, c[string(outcome.KnownRed)], doc.Skipped)
	for _, s := range b.Sections {
		jc := cases[s.Test]
		assert.Equal(t, string(s.Outcome), jc.prop(outcome.AttrOutcome), s.Test)
		switch s.Outcome {
		case outcome.KnownRed:
			require.NotNil(t, jc.Skipped, s.Test)
			assert.Contains(t, jc.Skipped.Message, "KNOWN-RED #581: ")
			assert.Equal(t, "#581", jc.prop("reproboard.issue"))
		case outcome.Fixed:
			assert.Nil(t, jc.Failure)
			assert.Regexp(t, `^close #\d+$`, jc.prop("fixed"))
		case outcome.Red, outcome.Inconclusive:
			require.NotNil(t, jc.Failure, s.Test)
			assert.Equal(t, s.Reason, jc.Failure.Message)
		case outcome.SetupFail:
			assert.NotNil(t, jc.Error, s.Test)
		case outcome.Green:
			assert.True(t, jc.Failure == nil && jc.Error == nil && jc.Skipped == nil, s.Test)
		}
	}
	for _, name := range []string{"TestRepro", "TestGuards"} {
		_, isCase := cases[name]
		assert.False(t, isCase, "parent %s is not a testcase", name)
	}

	strict := *b
	strict.Strict = true
	strictDoc, _ := junitOf(t, &strict)
	assert.Equal(t, doc.Failures+c[string(outcome.Fixed)], strictDoc.Failures, "FIXED fails under --strict")
}

func TestJUnitFlakyPassesWithEveryAttempt(t *testing.T) {
	b := &board.Board{Name: "guards", Gating: true, Sections: []board.Section{{
		Package: "p", Test: "TestG/x", Outcome: outcome.Flaky, Reason: "failed, then passed",
		Attempts: []board.Attempt{{Outcome: outcome.Red, Reason: "deadline 2s passed", Duration: 2}, {Outcome: outcome.Green, Duration: 1}},
	}}}
	b.Score()
	doc, cases := junitOf(t, b)
	assert.Zero(t, doc.Failures)
	jc := cases["TestG/x"]
	assert.Equal(t, "FLAKY", jc.prop(outcome.AttrOutcome))
	assert.Equal(t, "passed on attempt 2 of 2", jc.prop("flaky"))
	assert.Contains(t, jc.SystemOut, "attempt 1: RED (2.000s) deadline 2s passed\nattempt 2: GREEN")
	b.Strict = true
	doc, _ = junitOf(t, b)
	assert.Equal(t, 1, doc.Failures, "FLAKY fails under --strict")
}

func TestJUnitPartialAndProblemsAreErrors(t *testing.T) {
	b := &board.Board{Name: "guards", Gating: true, Partial: []string{"2/2"},
		Problems: []board.Problem{{Kind: board.ProblemPartial, Message: "PARTIAL: shard(s) 2/2 missing"}}}
	b.Score()
	doc, cases := junitOf(t, b)
	assert.Equal(t, 1, doc.Errors)
	assert.Contains(t, cases["PROBLEM partial"].Error.Message, "PARTIAL")
}

// A board merged with --allow-partial says PARTIAL in every report.
func TestPartialInEveryReport(t *testing.T) {
	b := &board.Board{Schema: board.Schema, Name: "guards", Gating: true, Partial: []string{"2/2"},
		Sections: []board.Section{{Package: "p", Test: "TestG/a", Outcome: outcome.Green}},
		Problems: []board.Problem{{Kind: board.ProblemPartial, Message: "PARTIAL: shard(s) 2/2 missing"}}}
	b.Score()
	want := "PARTIAL: shard(s) 2/2 missing — not every section was verified"
	var term, md, page, js, junit bytes.Buffer
	require.NoError(t, WriteTerminal(&term, b, TerminalOptions{}))
	require.NoError(t, WriteMarkdownBoards(&md, []*board.Board{b}, MarkdownOptions{Limit: MarkdownLimit}))
	require.NoError(t, WriteHTMLBoards(&page, []*board.Board{b}, HTMLOptions{ReadFile: func(string) ([]byte, error) { return nil, nil }}))
	require.NoError(t, WriteJSON(&js, b))
	require.NoError(t, WriteJUnit(&junit, b))
	for name, out := range map[string]string{"terminal": term.String(), "markdown": md.String(), "html": page.String(), "junit": junit.String()} {
		assert.Contains(t, out, want, name)
	}
	assert.Contains(t, js.String(), `"partial": [`)
	assert.Equal(t, 2, b.ExitCode)
}

// SCHEMA.md documents every field the JSON report has.
func TestSchemaDocumentsEveryField(t *testing.T) {
	doc, err := os.ReadFile("SCHEMA.md")
	require.NoError(t, err)
	for _, typ := range []reflect.Type{reflect.TypeOf(board.Board{}), reflect.TypeOf(board.Section{}), reflect.TypeOf(board.RunKey{}),
		reflect.TypeOf(board.Attempt{}), reflect.TypeOf(board.Problem{}), reflect.TypeOf(board.Skipped{}), reflect.TypeOf(board.RunInfo{})} {
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			assert.Regexp(t, "(`|\\.)"+regexp.QuoteMeta(name)+"`", string(doc), "%s.%s", typ.Name(), name)
		}
	}
}

package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/reproboard/reproboard/harness/board"
	"github.com/reproboard/reproboard/harness/outcome"
)

// JUnit is written from the classified board, not from go test's events,
// so that a JUnit consumer gating a CI job agrees with the board: one
// testcase per section (parents and wrapper tests are not cases), and
// each outcome mapped to what a reader of JUnit expects:
//
//	GREEN         pass
//	RED           <failure>
//	INCONCLUSIVE  <failure>: never counted as green
//	SETUP-FAIL    <error>
//	KNOWN-RED     <skipped> naming the issue and the reason: not news
//	FIXED         pass with the property fixed="close #N"; <failure> under --strict
//	FLAKY         pass with the property flaky and every attempt in
//	              <system-out>; <failure> under --strict
//
// A problem that belongs to no section (a package that did not build,
// sections that never ran, a PARTIAL merge) is a testcase of its own with
// an <error>: a JUnit consumer must not read a board that verified nothing
// as green.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name       string          `xml:"name,attr"`
	Classname  string          `xml:"classname,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Failure    *junitResult    `xml:"failure,omitempty"`
	Error      *junitResult    `xml:"error,omitempty"`
	Skipped    *junitResult    `xml:"skipped,omitempty"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitResult struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the board as JUnit XML: one testsuite per package of
// the board (named board/package), one testcase per section. Artefact
// paths are written as the board holds them: give it b.RelativeTo(the
// report's directory) so they resolve next to the file.
func WriteJUnit(w io.Writer, b *board.Board) error {
	doc := junitSuites{Name: b.Name}
	var total float64
	byPkg := map[string]*junitSuite{}
	var order []string
	suite := func(pkg string) *junitSuite {
		if s, ok := byPkg[pkg]; ok {
			return s
		}
		s := &junitSuite{Name: b.Name + "/" + pkg, Properties: boardProperties(b)}
		byPkg[pkg] = s
		order = append(order, pkg)
		return s
	}
	for _, s := range b.Sections {
		c := sectionCase(b, s)
		js := suite(s.Package)
		js.Cases = append(js.Cases, c)
		total += s.Duration
	}
	for _, p := range b.Problems {
		pkg := p.Package
		if pkg == "" {
			pkg = "(board)"
		}
		js := suite(pkg)
		js.Cases = append(js.Cases, junitCase{
			Name: "PROBLEM " + p.Kind, Classname: pkg, Time: "0",
			Properties: []junitProperty{{outcome.AttrOutcome, string(outcome.SetupFail)}},
			Error:      &junitResult{Message: xmlText(p.Message), Type: strings.ToUpper(p.Kind), Text: xmlText(p.Excerpt)},
		})
	}
	slices.Sort(order)
	for _, pkg := range order {
		js := byPkg[pkg]
		var secs float64
		for _, c := range js.Cases {
			js.Tests++
			switch {
			case c.Failure != nil:
				js.Failures++
			case c.Error != nil:
				js.Errors++
			case c.Skipped != nil:
				js.Skipped++
			}
			var d float64
			fmt.Sscanf(c.Time, "%g", &d)
			secs += d
		}
		js.Time = seconds(secs)
		doc.Tests += js.Tests
		doc.Failures += js.Failures
		doc.Errors += js.Errors
		doc.Skipped += js.Skipped
		doc.Suites = append(doc.Suites, *js)
	}
	doc.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func boardProperties(b *board.Board) []junitProperty {
	ps := []junitProperty{
		{"reproboard.board", b.Name},
		{"reproboard.gating", fmt.Sprint(b.Gating)},
		{"reproboard.exit_code", fmt.Sprint(b.ExitCode)},
		{"reproboard.exit_reason", xmlText(b.ExitReason)},
	}
	if b.Shard != "" {
		ps = append(ps, junitProperty{"reproboard.shard", b.Shard})
	}
	if len(b.Partial) > 0 {
		ps = append(ps, junitProperty{"reproboard.partial", PartialLine(b)})
	}
	return ps
}

func sectionCase(b *board.Board, s board.Section) junitCase {
	c := junitCase{Name: s.Test, Classname: s.Package, Time: seconds(s.Duration),
		Properties: []junitProperty{{outcome.AttrOutcome, string(s.Outcome)}}}
	if s.Issue != 0 {
		c.Properties = append(c.Properties, junitProperty{"reproboard.issue", fmt.Sprintf("#%d", s.Issue)})
	}
	if s.Reason != "" {
		c.Properties = append(c.Properties, junitProperty{outcome.AttrReason, xmlText(s.Reason)})
	}
	for _, k := range slices.Sorted(maps.Keys(s.Artifacts)) {
		c.Properties = append(c.Properties, junitProperty{outcome.AttrArtifactPrefix + k, s.Artifacts[k]})
	}
	why := func() *junitResult {
		return &junitResult{Message: xmlText(s.Reason), Type: string(s.Outcome), Text: xmlText(s.Excerpt)}
	}
	switch s.Outcome {
	case outcome.Red, outcome.Inconclusive:
		c.Failure = why()
	case outcome.SetupFail:
		c.Error = why()
	case outcome.KnownRed:
		c.Skipped = &junitResult{Message: xmlText(fmt.Sprintf("KNOWN-RED #%d: %s", s.Issue, s.Reason))}
	case outcome.Fixed:
		c.Properties = append(c.Properties, junitProperty{"fixed", fmt.Sprintf("close #%d", s.Issue)})
		if b.Strict {
			c.Failure = why()
		}
	case outcome.Flaky:
		c.Properties = append(c.Properties, junitProperty{"flaky", fmt.Sprintf("passed on attempt %d of %d", len(s.Attempts), len(s.Attempts))})
		if b.Strict {
			c.Failure = why()
		}
	}
	if len(s.Attempts) > 1 {
		var out strings.Builder
		for i, a := range s.Attempts {
			fmt.Fprintf(&out, "attempt %d: %s\n", i+1, AttemptLine(a))
		}
		c.SystemOut = xmlText(out.String())
	}
	return c
}

func seconds(s float64) string { return fmt.Sprintf("%.3f", s) }

// xmlText drops what XML 1.0 cannot hold (most control characters): a
// test's output may contain them, and one would make the file unreadable.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20 || r == 0xFFFE || r == 0xFFFF || (r >= 0xD800 && r <= 0xDFFF):
			return -1
		}
		return r
	}, s)
}

// PartialLine says, in every report of a board merged with --allow-partial,
// that it is PARTIAL and which shards it lacks.
func PartialLine(b *board.Board) string {
	return fmt.Sprintf("PARTIAL: shard(s) %s missing — not every section was verified; this board is not green", strings.Join(b.Partial, ", "))
}

// AttemptLine is one attempt of a re-run section: "RED (2.0s) reason".
func AttemptLine(a board.Attempt) string {
	s := fmt.Sprintf("%s (%ss)", a.Outcome, seconds(a.Duration))
	if a.Reason != "" {
		s += " " + a.Reason
	}
	return s
}

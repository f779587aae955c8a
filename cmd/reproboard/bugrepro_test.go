package main

import (
	"encoding/base64"
	"encoding/xml"
	stdhtml "html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The real bug-repro board of this repository, against the demo target:
// #581 is KNOWN-RED by its pinned signature, and the HTML page parses and
// holds the repro's charts inline.
func TestRealBugReproBoard(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real bug-repro board")
	}
	out := t.TempDir()
	html := filepath.Join(out, "board.html")
	code, stdout, stderr := invoke(t, "run", "--config", "../../boards.yaml", "--out", out,
		"--html", html, "--json", filepath.Join(out, "board.json"), "bug-repro")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Regexp(t, `KNOWN-RED\s+#581\s+\S+\s+TestRepro/issue581`, stdout)

	page, err := os.ReadFile(html)
	require.NoError(t, err)
	dec := xml.NewDecoder(strings.NewReader(string(page)))
	dec.Strict, dec.Entity = true, xml.HTMLEntity
	for {
		if _, err := dec.Token(); err != nil {
			require.ErrorContains(t, err, "EOF", "the page does not parse")
			break
		}
	}
	var charts []string
	for _, m := range regexp.MustCompile(`src="([^"]+)"`).FindAllStringSubmatch(string(page), -1) {
		if data, ok := strings.CutPrefix(stdhtml.UnescapeString(m[1]), "data:image/svg+xml;base64,"); ok {
			charts = append(charts, data)
		}
	}
	require.Len(t, charts, 2, "the uss and the WAL chart of #581")
	var titles []string
	for _, c := range charts {
		svg, err := base64.StdEncoding.DecodeString(c)
		require.NoError(t, err)
		m := regexp.MustCompile(`<title>([^<]*)</title>|<text[^>]*class="title"[^>]*>([^<]*)<`).FindStringSubmatch(string(svg))
		if m != nil {
			titles = append(titles, m[1]+m[2])
		}
		assert.Contains(t, string(svg), "RED", "the chart shows the verdict")
	}
	joined := strings.Join(titles, "\n")
	assert.Contains(t, joined, "RED uss slope=", "the USS chart")
	assert.Contains(t, joined, "RED file:cache/**/*.db-wal slope=", "the WAL chart")
}

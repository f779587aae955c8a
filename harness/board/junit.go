package board

import (
	"bufio"
	"bytes"
	"io"
	"strings"
)

// WriteJUnitEvents writes the raw `go test -json` streams of a run (one,
// or one per shard) as one stream for gotestsum's JUnit writer. It drops
// the sections a dry run listed or another shard owned, and the parents
// left with no section, so each section appears once with its real result.
// Parents that keep a section stay (gotestsum needs a subtest's parent), so
// a parent appears once per shard that ran one of its subtests.
func WriteJUnitEvents(w io.Writer, streams ...io.Reader) error {
	bw := bufio.NewWriter(w)
	for _, r := range streams {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		res, err := Collect(bytes.NewReader(data))
		if err != nil {
			return err
		}
		drop := map[testKey]bool{}
		kept := map[testKey]bool{}
		for _, s := range res.Sections {
			if s.Listed() || s.OtherShard() {
				drop[testKey{s.Package, s.Test}] = true
			} else {
				kept[testKey{s.Package, s.Test}] = true
			}
		}
		// keepParent: a test that is not a section stays if a kept section
		// is below it.
		keepParent := func(k testKey) bool {
			for s := range kept {
				if s.pkg == k.pkg && strings.HasPrefix(s.test, k.test+"/") {
					return true
				}
			}
			return false
		}
		decided := map[testKey]bool{}
		for _, line := range bytes.SplitAfter(data, []byte("\n")) {
			trimmed := bytes.TrimSpace(line)
			if len(trimmed) == 0 {
				continue
			}
			if e, err := ParseEvent(trimmed); err == nil && e.Test != "" {
				k := testKey{e.Package, e.Test}
				if _, ok := decided[k]; !ok {
					decided[k] = !drop[k] && (kept[k] || keepParent(k))
				}
				if !decided[k] {
					continue
				}
			}
			if _, err := bw.Write(trimmed); err != nil {
				return err
			}
			_ = bw.WriteByte('\n')
		}
	}
	return bw.Flush()
}

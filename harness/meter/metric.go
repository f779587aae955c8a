package meter

import (
	"fmt"
	"path"
	"strings"
)

// Metric names a resource to sample: one of rss, uss, pss, vms, fds,
// threads, or file:GLOB for the total size of the files matching GLOB.
type Metric string

const (
	RSS     Metric = "rss"     // resident set, smaps_rollup
	USS     Metric = "uss"     // unique set: Private_Clean+Private_Dirty of smaps_rollup
	PSS     Metric = "pss"     // proportional set, smaps_rollup
	VMS     Metric = "vms"     // virtual size, /proc/PID/stat
	FDs     Metric = "fds"     // open descriptors, /proc/PID/fd
	Threads Metric = "threads" // /proc/PID/stat
	// V8Heap is a Node.js process's V8 heap in use after a forced full
	// collection, from the probe V8HeapSetup preloads: what the program
	// retains, which V8's lazy heap sizing does not move.
	V8Heap Metric = "v8heap"
)

const filePrefix = "file:"

// FileMetric is the metric of the total size of the regular files matching
// glob, relative to Target.Dir: "/"-separated, path.Match per segment, "**"
// for any depth. Matching nothing reads 0 bytes only if the directory named
// by the glob's literal prefix exists (a WAL truncated away); a missing
// directory is unreadable, as it is more likely a wrong base or a typo.
func FileMetric(glob string) Metric { return Metric(filePrefix + glob) }

// ParseMetric checks a metric name as a user wrote it.
func ParseMetric(s string) (Metric, error) {
	m := Metric(strings.TrimSpace(s))
	switch m {
	case RSS, USS, PSS, VMS, FDs, Threads, V8Heap:
		return m, nil
	}
	if g, ok := m.glob(); ok {
		if g == "" {
			return "", fmt.Errorf("metric %q: file: needs a glob, e.g. file:cache/**/*.db-wal", s)
		}
		if err := checkGlob(g); err != nil {
			return "", fmt.Errorf("metric %q: %v", s, err)
		}
		return m, nil
	}
	return "", fmt.Errorf("unknown metric %q; want one of rss, uss, pss, vms, fds, threads, v8heap, file:GLOB", s)
}

// Unit is bytes for sizes and count for fds and threads.
func (m Metric) Unit() Unit {
	if m == FDs || m == Threads {
		return Count
	}
	return Bytes
}

func (m Metric) glob() (string, bool) {
	if strings.HasPrefix(string(m), filePrefix) {
		return string(m)[len(filePrefix):], true
	}
	return "", false
}

// checkGlob rejects patterns path.Match would reject, one segment at a time.
func checkGlob(g string) error {
	for _, seg := range strings.Split(g, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("bad glob segment %q in %q: %v", seg, g, err)
		}
	}
	return nil
}

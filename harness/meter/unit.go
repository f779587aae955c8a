package meter

import (
	"math"
	"strconv"
	"strings"
)

// Unit is what a reading counts: bytes or things (fds, threads).
type Unit string

const (
	Bytes Unit = "bytes"
	Count Unit = "count"
)

// Human formats v in this unit for people: binary prefixes for bytes
// (5.1KiB, 30MiB), plain numbers for counts. Negative and fractional values
// are kept because slopes can be both.
func (u Unit) Human(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	if u != Bytes {
		return trimNumber(v)
	}
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	suffixes := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for v >= 1024 && i < len(suffixes)-1 {
		v /= 1024
		i++
	}
	return sign + trimNumber(v) + suffixes[i]
}

// trimNumber keeps about three significant digits: enough to compare a
// slope with a budget by eye, short enough for a one-line reason.
func trimNumber(v float64) string {
	a := math.Abs(v)
	prec := 2
	switch {
	case a >= 100:
		prec = 0
	case a >= 10:
		prec = 1
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// rawNumber is the exact, machine-readable form used in LEAK_MEASURE lines
// and CSV: it round-trips through strconv.ParseFloat.
func rawNumber(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

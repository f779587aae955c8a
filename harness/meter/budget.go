package meter

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/dustin/go-humanize"
)

// Budget is how much a metric may grow before it is called a leak: either
// per operation (the slope, "4KiB/op", "2/op") or in total over the
// measured span ("8MiB", "10").
type Budget struct {
	Value float64 // bytes or count
	Unit  Unit
	PerOp bool
	text  string // the spelling it was parsed from, kept for round trips
}

// ParseBudget reads a budget in human units. Sizes go through go-humanize,
// so KiB/MiB are powers of 1024 and kB/MB powers of 1000; a bare number is
// a count (fds, threads). A trailing "/op" makes it a per-operation slope
// budget, otherwise it bounds the total growth over the measured span.
func ParseBudget(s string) (Budget, error) {
	text := strings.Join(strings.Fields(s), "")
	if text == "" {
		return Budget{}, fmt.Errorf("budget is empty; want e.g. 4KiB/op (per operation), 8MiB (total growth) or 2/op, 10 (counts)")
	}
	b := Budget{text: text}
	num := text
	if i := strings.IndexByte(text, '/'); i >= 0 {
		if rate := text[i:]; rate != "/op" {
			return Budget{}, fmt.Errorf("budget %q: unknown rate %q; want /op (e.g. 4KiB/op) or no rate for a total (e.g. 8MiB)", s, rate)
		}
		b.PerOp, num = true, text[:i]
	}
	if strings.HasPrefix(num, "-") {
		return Budget{}, fmt.Errorf("budget %q is negative; a budget is the growth allowed, 0 or more", s)
	}
	hasUnit := strings.IndexFunc(num, unicode.IsLetter) >= 0
	if !hasUnit {
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || v < 0 || v != v {
			return Budget{}, fmt.Errorf("budget %q: %q is not a number; want a count like 10 or 2/op, or a size like 4KiB", s, num)
		}
		b.Value, b.Unit = v, Count
		return b, nil
	}
	n, err := humanize.ParseBytes(num)
	if err != nil {
		return Budget{}, fmt.Errorf("budget %q: %q is not a size (%v); want e.g. 512B, 4KiB, 1.5MiB, 8MB", s, num, err)
	}
	b.Value, b.Unit = float64(n), Bytes
	return b, nil
}

// MustParseBudget is ParseBudget for budgets written in code.
func MustParseBudget(s string) Budget {
	b, err := ParseBudget(s)
	if err != nil {
		panic(err)
	}
	return b
}

// String gives the budget as it was written, or a canonical spelling for a
// Budget built in code. It never contains spaces, so it fits one token of
// a LEAK_MEASURE line.
func (b Budget) String() string {
	if b.text != "" {
		return b.text
	}
	if b.Unit == "" {
		return "" // no budget
	}
	s := b.Unit.Human(b.Value)
	if b.Unit == Bytes && b.Value != 0 && strings.HasSuffix(s, "B") {
		// Human rounds; a code-built budget must survive ParseBudget exactly.
		if v, err := humanize.ParseBytes(s); err != nil || float64(v) != b.Value {
			s = rawNumber(b.Value) + "B"
		}
	}
	if b.PerOp {
		s += "/op"
	}
	return s
}

// perOp is the slope, in units per op, this budget allows over a measured
// span of span ops.
func (b Budget) perOp(span int) float64 {
	if b.PerOp || span <= 0 {
		return b.Value
	}
	return b.Value / float64(span)
}

package meter

import (
	"strings"
	"testing"
)

func TestParseBudget(t *testing.T) {
	for _, tc := range []struct {
		in    string
		value float64
		unit  Unit
		perOp bool
	}{
		{"4KiB/op", 4096, Bytes, true},
		{"8MiB", 8 << 20, Bytes, false},
		{"1.5MiB", 1.5 * (1 << 20), Bytes, false},
		{"8MB", 8e6, Bytes, false},
		{"512B/op", 512, Bytes, true},
		{" 4 KiB / op ", 4096, Bytes, true},
		{"0B/op", 0, Bytes, true},
		{"2/op", 2, Count, true},
		{"10", 10, Count, false},
		{"0.5/op", 0.5, Count, true},
	} {
		b, err := ParseBudget(tc.in)
		if err != nil || b.Value != tc.value || b.Unit != tc.unit || b.PerOp != tc.perOp {
			t.Errorf("ParseBudget(%q) = %+v, %v; want %v %s perOp=%v", tc.in, b, err, tc.value, tc.unit, tc.perOp)
			continue
		}
		again, err := ParseBudget(b.String())
		if err != nil || again.Value != b.Value || again.Unit != b.Unit || again.PerOp != b.PerOp {
			t.Errorf("%q: String %q does not parse back: %+v %v", tc.in, b.String(), again, err)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", "empty"},
		{"4KiB/s", `unknown rate "/s"`},
		{"-4KiB/op", "negative"},
		{"lots", "not a size"},
		{"4 furlongs", "not a size"},
		{"1.2.3", "not a number"},
		{"/op", "not a number"},
	} {
		_, err := ParseBudget(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseBudget(%q) error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

func TestBudgetStringFromCode(t *testing.T) {
	for _, tc := range []struct {
		b    Budget
		want string
	}{
		{Budget{Value: 4096, Unit: Bytes, PerOp: true}, "4KiB/op"},
		{Budget{Value: 8 << 20, Unit: Bytes}, "8MiB"},
		{Budget{Value: 5000, Unit: Bytes, PerOp: true}, "5000B/op"},
		{Budget{Value: 10, Unit: Count}, "10"},
		{Budget{}, ""},
	} {
		if got := tc.b.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.b, got, tc.want)
		}
	}
}

func TestHuman(t *testing.T) {
	for _, tc := range []struct {
		u    Unit
		v    float64
		want string
	}{
		{Bytes, 0, "0B"},
		{Bytes, 0.25, "0.25B"},
		{Bytes, 512, "512B"},
		{Bytes, 5222.4, "5.1KiB"},
		{Bytes, 30 << 20, "30MiB"},
		{Bytes, -3 << 20, "-3MiB"},
		{Count, 2, "2"},
		{Count, 0.126, "0.13"},
	} {
		if got := tc.u.Human(tc.v); got != tc.want {
			t.Errorf("%s.Human(%v) = %q, want %q", tc.u, tc.v, got, tc.want)
		}
	}
}

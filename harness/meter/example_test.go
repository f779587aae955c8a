package meter_test

import (
	"context"
	"fmt"
	"os"

	"github.com/reproboard/reproboard/harness/meter"
)

// Judge a series: a process that keeps 3 KiB per operation against a
// budget of 2 KiB per operation is RED, whatever the noise in between.
func ExampleJudge() {
	s := meter.Series{Metric: "rss", Unit: "bytes"}
	for ops := 0; ops <= 400; ops += 20 {
		noise := float64((ops / 20 % 3) * 4096)
		s.Add(ops, meter.Reading{Value: 8<<20 + 3072*float64(ops) + noise, Unit: "bytes"})
	}
	v := meter.Judge(s, meter.Options{Budget: meter.MustParseBudget("2KiB/op"), Warmup: 40})
	fmt.Println(v.Outcome, v.Slope > 2048)
	// Output: RED true
}

// Sample a live process (here this one) after each batch of work, then
// judge each metric's series.
func ExampleRecorder() {
	rec := meter.NewRecorder(&meter.Target{PID: os.Getpid()}, "rss")
	var keep [][]byte
	for ops := 0; ops <= 200; ops += 20 {
		for range 20 {
			keep = append(keep, make([]byte, 64)) // the operation under test
		}
		rec.Record(context.Background(), ops)
	}
	for _, s := range rec.Series() {
		v := meter.Judge(s, meter.Options{Budget: meter.MustParseBudget("1MiB/op"), Warmup: 40})
		fmt.Println(s.Metric, v.Outcome)
	}
	_ = keep
	// Output: rss GREEN
}

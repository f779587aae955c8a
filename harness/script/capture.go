package script

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/reproboard/reproboard/harness/excerpt"
)

var cmdCapture = command{
	usage: "capture [-file FILE] [-all] VAR regexp — set $VAR to the regexp's first group (or whole match) in the last command's stdout and stderr (-file: in FILE); -all: every distinct value, space-separated, printed after a line `capture VAR: N distinct`",
	run: func(c *call) error {
		file := c.flags.String("file", "", "read FILE instead of the last command's output")
		all := c.flags.Bool("all", false, "every distinct value, not only the first")
		if err := c.parse(2, 2); err != nil {
			return err
		}
		name := c.args[0]
		re, err := regexp.Compile("(?m)" + c.args[1])
		if err != nil {
			return c.usagef("%v", err)
		}
		from := "the last command's output"
		var text string
		if *file != "" {
			data, err := os.ReadFile(c.ts.MkAbs(*file))
			if err != nil {
				return fmt.Errorf("capture %s: %v", name, err)
			}
			text, from = string(data), *file
		} else {
			text = c.ts.ReadFile("stdout") + "\n" + c.ts.ReadFile("stderr")
		}
		value := func(m []string) string {
			if len(m) > 1 {
				return m[1]
			}
			return m[0]
		}
		if !*all {
			m := re.FindStringSubmatch(text)
			if m == nil {
				return fmt.Errorf("capture %s: no match for `%s` in %s:\n%s", name, c.args[1], from, orNoOutput(text))
			}
			c.ts.Setenv(name, value(m))
			return nil
		}
		var values []string
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			if v := value(m); !slices.Contains(values, v) {
				values = append(values, v)
			}
		}
		c.ts.Setenv(name, strings.Join(values, " "))
		fmt.Fprintf(c.stdout(), "capture %s: %d distinct\n", name, len(values))
		for _, v := range values {
			fmt.Fprintln(c.stdout(), v)
		}
		return nil
	},
}

// orNoOutput is an excerpt of text, or `(no output)` when there is none.
func orNoOutput(text string) string {
	if strings.TrimSpace(text) == "" {
		return "(no output)"
	}
	return excerpt.Excerpt(text, 0)
}

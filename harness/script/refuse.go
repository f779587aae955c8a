package script

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/txtar"
)

// testscript's own `exec` cannot be replaced (Params.Cmds is consulted only
// for names testscript does not define) and has no hook: it keeps the whole
// output in memory, waits for every process holding its stdout, and at the
// end of a script waits without bound for `exec … &` to heed SIGINT. So a
// script that uses it is refused when it is read, before anything of it
// runs, with the line and the bounded command to write instead.

// refusals reads the scripts of dir and returns, by script name (as
// testscript names its subtest), why each one that uses `exec` is refused.
func refusals(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if e.IsDir() || (ext != ".txtar" && ext != ".txt") {
			continue
		}
		path := filepath.Join(dir, name)
		a, err := txtar.ParseFile(path)
		if err != nil {
			return nil, err
		}
		if msg := refuseExec(path, string(a.Comment)); msg != "" {
			out[strings.TrimSuffix(name, ext)] = msg
		}
	}
	return out, nil
}

// refuseExec lists every line of the script that uses `exec`, as
// file:line: with the command to write instead; "" when there is none.
func refuseExec(path, script string) string {
	var msgs []string
	for i, line := range strings.Split(script, "\n") {
		words := strings.Fields(line)
		// Leading `!`, `?` and [conditions] come before the command.
		for len(words) > 0 && (words[0] == "!" || words[0] == "?" || strings.HasPrefix(words[0], "[")) {
			if strings.HasPrefix(words[0], "[") && !strings.HasSuffix(words[0], "]") {
				// a condition with spaces inside its brackets
				for len(words) > 0 && !strings.HasSuffix(words[0], "]") {
					words = words[1:]
				}
			}
			if len(words) > 0 {
				words = words[1:]
			}
		}
		if len(words) == 0 || strings.HasPrefix(words[0], "#") || words[0] != "exec" {
			continue
		}
		rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line[strings.Index(line, "exec"):]), "exec"))
		var instead string
		if bg, ok := strings.CutSuffix(rest, "&"); ok {
			instead = fmt.Sprintf("spawn NAME %s (a background process the backstop stops; then waitline, signal, reap NAME)", strings.TrimSpace(bg))
		} else {
			neg := ""
			if strings.HasPrefix(strings.TrimSpace(line), "!") {
				neg = "! "
			}
			instead = fmt.Sprintf("%srun %s", neg, rest)
		}
		msgs = append(msgs, fmt.Sprintf("%s:%d: %s: testscript's exec is not bounded (it keeps all output in memory, waits for any process holding its stdout, and cannot be stopped at the section's end); write instead: %s",
			path, i+1, strings.TrimSpace(line), instead))
	}
	return strings.Join(msgs, "\n")
}

// Package hook is `demod hook-augment`: enrich an agent's tool-use hook
// with what the daemon knows, and fail OPEN when there is no daemon, so a
// missing daemon never blocks the agent.
package hook

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// MarkerName rate-limits the absent-daemon notice to once per cache dir.
const MarkerName = ".hook-daemon-absent-notice"

// MaxPayload bounds how much of stdin a hook call reads.
const MaxPayload = 1 << 20

// Notice is what the first absent-daemon call says, on both channels.
const Notice = "no demod daemon is running; code-graph hook augmentation is off until one starts (`demod daemon start`)"

// Options wire the hook to its surroundings.
type Options struct {
	CacheDir    string
	FailsClosed bool // test breakage hook-fails-closed
	// Ask sends the payload to the daemon; up=false means no daemon answered.
	Ask func(payload json.RawMessage) (result json.RawMessage, up bool, err error)
}

// Run handles one hook call and returns the exit code.
func Run(stdin io.Reader, stdout, stderr io.Writer, o Options) int {
	payload, _ := io.ReadAll(io.LimitReader(stdin, MaxPayload))
	if !json.Valid(payload) {
		payload = []byte("null")
	}
	res, up, err := o.Ask(payload)
	if up {
		if err != nil {
			fmt.Fprintf(stderr, "demod: hook augmentation skipped: %v\n", err)
			return 0
		}
		if len(res) > 0 && string(res) != "null" {
			fmt.Fprintf(stdout, "%s\n", res)
		}
		return 0
	}
	if o.FailsClosed {
		fmt.Fprintf(stderr, "error: %s\n", Notice)
		return 1
	}
	marker := filepath.Join(o.CacheDir, MarkerName)
	if _, err := os.Stat(marker); err == nil {
		return 0 // already told the user once
	}
	msg, _ := json.Marshal(map[string]string{"systemMessage": "demod: " + Notice})
	fmt.Fprintf(stdout, "%s\n", msg)
	fmt.Fprintf(stderr, "demod: %s\n", Notice)
	if err := os.MkdirAll(o.CacheDir, 0o700); err == nil {
		_ = os.WriteFile(marker, []byte("the absent-daemon notice was shown; delete this file to see it again\n"), 0o600)
	}
	return 0
}

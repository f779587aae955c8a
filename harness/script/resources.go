package script

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // holdlock takes a real SQLite write lock

	"github.com/reproboard/reproboard/harness/excerpt"
	"github.com/reproboard/reproboard/harness/section"
	"github.com/reproboard/reproboard/harness/wait"
)

var cmdStorm = command{
	usage: "storm [-n N] [-timeout d] cmd args... — N concurrent one-shot clients; every one must exit 0",
	run: func(c *call) error {
		n := c.flags.Int("n", 6, "number of clients")
		timeout := c.timeoutFlag()
		if err := c.parse(1, -1); err != nil {
			return err
		}
		if *n < 1 {
			return c.usagef("-n must be at least 1")
		}
		argv, err := c.argv(c.args)
		if err != nil {
			return err
		}
		d := c.within(*timeout)
		results := make([]section.Result, *n)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range results {
			wg.Go(func() {
				results[i] = c.st.sec.Run(c.specWithin(argv, d))
			})
		}
		wg.Wait()
		var failures []string
		for i, r := range results {
			if r.RC != 0 {
				failures = append(failures, fmt.Sprintf("client %d: rc=%d after %s\n%s",
					i, r.RC, r.Duration.Round(time.Millisecond), tails(r, 600)))
			}
		}
		fmt.Fprintf(c.stdout(), "storm: %d/%d clients exited 0 in %s\n", *n-len(failures), *n, time.Since(start).Round(time.Millisecond))
		if len(failures) > 0 {
			return fmt.Errorf("storm of %d `%s`: %d failed\n%s", *n, strings.Join(c.args, " "), len(failures), strings.Join(failures, "\n"))
		}
		return nil
	},
}

func (c *call) hold(name string, release func() error) error {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if _, ok := c.st.holds[name]; ok {
		release()
		return c.usagef("%s is held already", name)
	}
	c.st.holds[name] = release
	return nil
}

// listen binds a port on 127.0.0.1 and sets $VAR, the command's one
// argument, to it.
func (c *call) listen() (net.Listener, error) {
	if err := c.parse(1, 1); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c.ts.Setenv(c.args[0], strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	return l, nil
}

var cmdHoldport = command{
	usage: "holdport VAR — bind and listen on 127.0.0.1:0, set $VAR to the port; held until `release VAR` or the section ends",
	run: func(c *call) error {
		l, err := c.listen()
		if err != nil {
			return err
		}
		return c.hold(c.args[0], l.Close)
	},
}

var cmdFreeport = command{
	usage: "freeport VAR — set $VAR to a port that was free a moment ago",
	run: func(c *call) error {
		l, err := c.listen()
		if err != nil {
			return err
		}
		return l.Close()
	},
}

var cmdHoldlock = command{
	usage: "[!] holdlock [-name N] FILE — hold the SQLite database's write lock (BEGIN IMMEDIATE) from a real connection until `release N` (default N: the file's base name)",
	neg:   negInvert,
	bang:  "the lock must be refused: someone else holds it",
	run: func(c *call) error {
		name := c.flags.String("name", "", "name for release")
		if err := c.parse(1, 1); err != nil {
			return err
		}
		path := c.ts.MkAbs(c.args[0])
		if *name == "" {
			*name = filepath.Base(path)
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("holdlock: %v", err)
		}
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
		if err != nil {
			return err
		}
		db.SetMaxIdleConns(0) // a returned connection is closed: its lock goes with it
		ctx, cancel := context.WithTimeout(context.Background(), c.within(10*time.Second))
		defer cancel()
		conn, err := db.Conn(ctx)
		if err == nil {
			_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
			if err != nil {
				conn.Close()
			}
		}
		if err != nil {
			db.Close()
			return fmt.Errorf("holdlock %s: %v", c.args[0], err)
		}
		// Release by closing: the OS drops a connection's locks when it
		// closes, so the release cannot be refused as a COMMIT can.
		return c.hold(*name, func() error {
			err := conn.Close()
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			return err
		})
	},
}

var cmdRelease = command{
	usage: "release NAME — release a port or lock held by holdport or holdlock",
	run: func(c *call) error {
		if err := c.parse(1, 1); err != nil {
			return err
		}
		c.st.mu.Lock()
		release, ok := c.st.holds[c.args[0]]
		delete(c.st.holds, c.args[0])
		c.st.mu.Unlock()
		if !ok {
			return c.usagef("nothing named %s is held", c.args[0])
		}
		return release()
	},
}

var cmdWaitfile = command{
	usage: "waitfile [-timeout d] [-while NAME] FILE [regexp] — wait for FILE to exist, or to contain a match; gives up at once when the watched process exits",
	run: func(c *call) error {
		timeout := c.timeoutFlag()
		while := c.whileFlag()
		if err := c.parse(1, 2); err != nil {
			return err
		}
		w, err := c.watcher(*while)
		if err != nil {
			return err
		}
		path := c.ts.MkAbs(c.args[0])
		var re *regexp.Regexp
		what := fmt.Sprintf("%s to exist", c.args[0])
		if len(c.args) == 2 {
			var err error
			if re, err = regexp.Compile("(?m)" + c.args[1]); err != nil {
				return c.usagef("%v", err)
			}
			what = fmt.Sprintf("%s to contain a match for %q", c.args[0], c.args[1])
		}
		return c.watchedWait(w, what, c.within(*timeout), 50*time.Millisecond, func() wait.Result {
			data, err := os.ReadFile(path)
			switch {
			case err != nil:
				return wait.Continue("%v", err)
			case re == nil || re.Match(data):
				return wait.Done()
			}
			return wait.Continue("%d bytes ending:\n%s", len(data), excerpt.Excerpt(string(data), 400))
		})
	},
}

var cmdLogtail = command{
	usage: "logtail [-n BYTES] — print the tail of the target's log file (from its profile) to stdout",
	run: func(c *call) error {
		n := c.flags.Int("n", excerpt.DefaultLimit, "bytes to show")
		if err := c.parse(0, 0); err != nil {
			return err
		}
		tail, err := c.st.targetLog(*n)
		if err != nil {
			return err
		}
		fmt.Fprint(c.stdout(), tail)
		return nil
	},
}

var cmdSleep = command{
	usage: "sleep d — hold the present state for d (e.g. a lock past a client's old budget); to wait for something, use poll, waitline or waitfile",
	run: func(c *call) error {
		if err := c.parse(1, 1); err != nil {
			return err
		}
		d, err := time.ParseDuration(c.args[0])
		if err != nil || d < 0 {
			return c.usagef("%q is not a duration", c.args[0])
		}
		if d > c.st.sec.Remaining() {
			return fmt.Errorf("sleep %s would pass the section's deadline (%s left)", d, c.st.sec.Remaining().Round(time.Second))
		}
		time.Sleep(d)
		return nil
	},
}

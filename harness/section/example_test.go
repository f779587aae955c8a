package section_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reproboard/reproboard/harness/section"
)

// A Go test of your program gets a section: its own directories and
// environment, commands with timeouts, and the backstop when the test ends
// (it also stops what a daemon double-forked). TestMain must end the run:
//
//	func TestMain(m *testing.M) { os.Exit(section.Main(m)) }
func ExampleForTest() {
	testDaemon := func(t *testing.T) {
		s := section.ForTest(t, section.Config{CacheVar: "MYAPP_CACHE", RuntimeVar: "MYAPP_RUNTIME"})
		d, err := s.Start("daemon", section.Spec{Args: []string{"myapp", "daemon", "--foreground"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.WaitLine("stderr", regexp.MustCompile(`listening on`), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		res := s.Run(section.Spec{Args: []string{"myapp", "status"}, Timeout: 5 * time.Second})
		if res.RC != 0 {
			t.Fatalf("status: rc=%d\n%s", res.RC, res.Excerpt())
		}
	}
	_ = testDaemon
}

// Outside a test, a section is made from the process's run: its
// directories exist before the first command, the target's variables
// point into them, and Close stops whatever is left and removes them.
func ExampleNew() {
	r, err := section.DefaultRun()
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := section.New(r, section.Config{Name: "example", CacheVar: "MYAPP_CACHE",
		Env: []string{"MYAPP_DB=$CACHE/db.sqlite"}, Expand: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	res := s.Run(section.Spec{Args: []string{"sh", "-c", `echo "$MYAPP_CACHE $MYAPP_DB $HOME"`}})
	fields := strings.Fields(res.Stdout)
	fmt.Println(res.RC, fields[0] == s.Cache, fields[1] == filepath.Join(s.Cache, "db.sqlite"), fields[2] == s.Home)
	end := s.Close()
	_, statErr := os.Stat(s.Root)
	fmt.Println(end.Clean(), os.IsNotExist(statErr))
	// Output:
	// 0 true true true
	// true true
}

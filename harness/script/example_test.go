package script_test

import (
	"testing"

	"github.com/reproboard/reproboard/harness/script"
)

// Guard scripts (testdata/guards/*.txtar) run as one Go test, each script
// a section of its own, in parallel, against the target of the board in
// boards.yaml that lists the package (REPROBOARD_TARGET overrides it):
//
//	// guards/guards_test.go
//	func TestMain(m *testing.M) { os.Exit(section.Main(m)) }
//
//	func TestGuards(t *testing.T) {
//		script.Run(t, script.Params{Dir: "../testdata/guards"})
//	}
//
// and a script, testdata/guards/lifecycle.txtar:
//
//	freeport PORT
//	target --port $PORT --daemonize yes --pidfile $RUNTIME/app.pid
//	waitfile $RUNTIME/app.pid '^\d+'
//	exec cat $RUNTIME/app.pid
//	pidfrom APP '(\d+)'
//	poll -stdout '^PONG$' app-cli -p $PORT ping
//	killpid -TERM APP
//	! alive APP
func ExampleRun() {
	testGuards := func(t *testing.T) {
		script.Run(t, script.Params{Dir: "../testdata/guards"})
	}
	_ = testGuards
}

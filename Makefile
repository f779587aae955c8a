# reproboard's own jobs. Only Go is needed; tools come from go.mod.
GO       ?= go
OUT      ?= out
# The framework, the guard suite against demod (with the proofs that each
# repro is RED as shipped and GREEN when fixed), demod itself and the CLI.
# repro/ is left out on purpose: a repro is RED until its bug is fixed.
TEST_PKGS = ./harness/... ./guards/... ./examples/... ./cmd/...
GOTESTSUM = $(GO) tool gotestsum --format pkgname-and-test-fails --format-hide-empty-pkg

.PHONY: test vet board redis-board guards repro bench stress mutants clean

## test: vet, then every test that must pass (3 minutes on a 2-core machine; up to 7 under load: the real boards run three times)
# Its runs live under a base of their own, so that no-leftovers checks (and
# kills) the processes of these runs only, never another checkout's.
test: vet
	@base=$$(mktemp -d /tmp/rbm-XXX) || exit 2; \
	REPROBOARD_BASE=$$base $(GOTESTSUM) -- -count=1 -timeout 9m $(TEST_PKGS); rc=$$?; \
	scripts/no-leftovers.sh $$base || rc=1; \
	rm -rf $$base; exit $$rc

vet:
	$(GO) vet ./...

## board: both boards against the embedded demo target; reports in out/
## (a built binary, not go run: go run turns exit 2 into exit 1)
board:
	$(GO) build -o $(OUT)/bin/reproboard ./cmd/reproboard
	$(OUT)/bin/reproboard run --out $(OUT) --html $(OUT)/board.html --md $(OUT)/board.md --json $(OUT)/board.json --junit $(OUT)/junit.xml

## redis-board: the worked example on a program nobody here wrote (needs redis-server, redis-tools)
redis-board:
	$(GO) run ./cmd/reproboard run --config examples/redis/boards.yaml --out $(OUT)/redis --md $(OUT)/redis/board.md

## guards: the gating guard suite, plain Go tooling
guards:
	$(GO) test -count=1 ./guards/...

## repro ISSUE=N: one open bug's repro, with its measurements and charts
repro:
	@test -n "$(ISSUE)" || { echo "make repro: ISSUE is required, e.g. make repro ISSUE=581" >&2; exit 2; }
	$(GO) build -o $(OUT)/bin/reproboard ./cmd/reproboard
	$(OUT)/bin/reproboard repro --out $(OUT) $(ISSUE)

## bench: the figures, printed; ratios are measured within one run (a shared machine is noisy)
bench:
	$(GO) test -run '^$$' -bench . -count 3 ./harness/meter/
	$(GO) test -run '^$$' -bench . -benchtime 1x ./harness/section/
	$(GO) test -run '^$$' -bench 'CLI' -benchtime 20x ./guards/
	$(GO) test -run '^$$' -bench 'GuardSuite|ScriptsParallel|LeakSensitivity' -benchtime 1x ./guards/ ./harness/script/ ./repro/
	$(GO) test -run '^$$' -bench 'Record|Analyze' -benchtime 20x ./harness/history/
	$(GO) test -run '^$$' -bench 'HistoryCommand' -benchtime 5x ./cmd/reproboard/
	$(GO) test -count=1 -run 'TestHistoryPageSize' -v ./harness/report/ | grep 'HTML page'

## stress: the storm-and-orphans stress, 100 iterations of 12 scripts at -parallel 12, per isolation level
stress:
	REPROBOARD_STRESS_COUNT=100 $(GO) test -count=1 -timeout 60m -run '^TestStormStress$$' -v ./harness/script/ | grep -E '^\s*--- (PASS|FAIL|SKIP): TestStormStress/[a-z]+ |sections failed|Messages'

## mutants: every mutant of testdata/mutants/demod.yaml against the guard suite; prints the score and the survivors (slow: one suite run each)
mutants:
	$(GO) run ./cmd/mutants -json $(OUT)/mutants.json -logs $(OUT)/mutants

clean:
	rm -rf $(OUT)

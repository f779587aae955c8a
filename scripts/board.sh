#!/usr/bin/env bash
# CI glue: run one board with its reports in $OUT (default out/).
#   scripts/board.sh BOARD [reproboard run flags, e.g. --shard 1/2]
# The exit code is reproboard's: 0 green, 1 regression, 2 setup failure.
# reproboard appends the Markdown report to $GITHUB_STEP_SUMMARY itself
# when that is set, so nothing here writes it twice.
set -euo pipefail
board=${1:?usage: scripts/board.sh BOARD [reproboard run flags]}
shift
out=${OUT:-out}
mkdir -p "$out"
go build -o "$out/bin/reproboard" ./cmd/reproboard
# The JSON report (and the raw events a merge needs) is kept in $out anyway.
exec "$out/bin/reproboard" run --out "$out" \
	--md "$out/$board.md" --html "$out/$board.html" --junit "$out/$board.junit.xml" \
	"$@" "$board"

#!/usr/bin/env bash
# scripts/no-leftovers.sh BASE — after a test run whose runs lived under
# BASE (REPROBOARD_BASE): no process of those runs may still be running
# (the backstop's whole promise). A process belongs to them if its
# environment names a run lock under BASE, or if a run directory under
# BASE recorded it: a cgroup of the run, or a pid with its start time.
# Lists and kills what it finds, and fails. Processes of any other run,
# live or not, are never touched.
set -u
base=${1:?usage: no-leftovers.sh BASE (the REPROBOARD_BASE of the runs to check)}
base=$(cd "$base" 2>/dev/null && pwd -P) || { echo "no-leftovers: no directory $1" >&2; exit 2; }
declare -A left=()
starttime() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
for env in /proc/[0-9]*/environ; do
	pid=${env#/proc/}
	pid=${pid%/environ}
	[ "$pid" = "$$" ] && continue
	lock=$({ tr '\0' '\n' <"$env"; } 2>/dev/null | grep -m1 '^REPROBOARD_RUN_LOCK=' | cut -d= -f2-)
	case "$lock" in "$base"/*) left[$pid]="marker" ;; esac
done
cgroups=()
for dir in "$base"/rb-*/; do
	[ -d "$dir" ] || continue
	if [ -f "$dir/cgroup" ]; then
		cg=$(cat "$dir/cgroup")
		if [ -d "$cg" ]; then
			cgroups+=("$cg")
			for pid in $(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null); do left[$pid]="cgroup $cg"; done
		fi
	fi
	if [ -f "$dir/procs" ]; then
		while read -r pid start; do
			[ -n "$pid" ] && [ "$(starttime "$pid")" = "$start" ] && left[$pid]="recorded in $dir"
		done <"$dir/procs"
	fi
done
if [ ${#left[@]} -eq 0 ]; then
	echo "no-leftovers: no process of the runs under $base is running"
	exit 0
fi
echo "no-leftovers: ${#left[@]} process(es) of the runs under $base outlived their section:" >&2
for pid in "${!left[@]}"; do
	marker=$({ tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep '^REPROBOARD_SECTION=' | cut -d= -f2-)
	cmd=$({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | cut -c1-100)
	echo "  pid $pid (found by ${left[$pid]}) section ${marker:-?}: $cmd" >&2
	kill -KILL "$pid" 2>/dev/null
done
for cg in "${cgroups[@]}"; do
	echo 1 >"$cg/cgroup.kill" 2>/dev/null
done
exit 1

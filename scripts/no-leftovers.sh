#!/usr/bin/env bash
# After a test run: no process may still carry REPROBOARD_SECTION (the
# backstop's whole promise). Lists and kills any it finds, and fails.
set -u
left=()
for env in /proc/[0-9]*/environ; do
	pid=${env#/proc/}
	pid=${pid%/environ}
	[ "$pid" = "$$" ] && continue
	if { tr '\0' '\n' <"$env"; } 2>/dev/null | grep -q '^REPROBOARD_SECTION='; then
		left+=("$pid")
	fi
done
if [ ${#left[@]} -eq 0 ]; then
	echo "no-leftovers: no process carries REPROBOARD_SECTION"
	exit 0
fi
echo "no-leftovers: ${#left[@]} process(es) outlived their section:" >&2
for pid in "${left[@]}"; do
	marker=$({ tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep '^REPROBOARD_SECTION=' | cut -d= -f2-)
	cmd=$({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | cut -c1-100)
	echo "  pid $pid section $marker: $cmd" >&2
	kill -KILL "$pid" 2>/dev/null
done
exit 1

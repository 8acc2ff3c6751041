#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Runs every step of `make test` to its end, whatever an earlier one did,
# and closes with one line per step: a failing runner no longer hides the
# ones after it.  Exits non-zero when any step failed.
#
#   tools/test-all.sh LOGDIR STEP... [-- STEP...]
#
# A STEP is NAME=COMMAND (a shell command).  The steps before "--" run one
# after another, beside those after it, which also run one after another:
# two lanes at once.  Each step's output goes to LOGDIR/NAME.log; a
# failing step's tail is printed as it ends.  A Check runner's closing
# line ("100%: Checks: N, Failures: F, Errors: E") is repeated in the
# summary, each failing check is named after it, and the run ends with
# their sum as "checks: N passed, F failed".
set -u

logdir=$1
shift
mkdir -p "$logdir"
rm -f "$logdir"/*.log "$logdir"/*.status

# run_lane STEP...: each step in turn; its status and seconds to NAME.status.
run_lane() {
	for step in "$@"; do
		name=${step%%=*}
		cmd=${step#*=}
		log="$logdir/$name.log"
		start=$(date +%s)
		printf '  %-10s started\n' "$name"
		sh -c "$cmd" >"$log" 2>&1
		status=$?
		echo "$status $(($(date +%s) - start))" >"$logdir/$name.status"
		if [ "$status" -eq 0 ]; then
			printf '  %-10s passed\n' "$name"
		else
			printf '  %-10s FAILED (exit %s); the end of %s:\n' "$name" "$status" "$log"
			tail -n 40 "$log" | sed 's/^/    | /'
		fi
	done
}

first=""
second=""
in_second=0
for step in "$@"; do
	if [ "$step" = "--" ]; then
		in_second=1
		continue
	fi
	case $step in
	*=*) ;;
	*) echo "test-all: a step is NAME=COMMAND, not '$step'" >&2; exit 2 ;;
	esac
	name=${step%%=*}
	if [ "$in_second" -eq 1 ]; then
		second="$second $name"
	else
		first="$first $name"
	fi
done

# Two lanes: the steps after "--" in a background shell.
lane_pid=""
if [ -n "$second" ]; then
	(
		skip=1
		for step in "$@"; do
			if [ "$skip" -eq 1 ]; then
				[ "$step" = "--" ] && skip=0
				continue
			fi
			run_lane "$step"
		done
	) &
	lane_pid=$!
fi
for step in "$@"; do
	[ "$step" = "--" ] && break
	run_lane "$step"
done
[ -n "$lane_pid" ] && wait "$lane_pid"

echo
echo "test summary (logs in $logdir):"
failed=0
passed_checks=0
failed_checks=0
for name in $first $second; do
	status=failed
	secs=?
	if [ -r "$logdir/$name.status" ]; then
		read -r code secs <"$logdir/$name.status"
		[ "$code" -eq 0 ] && status=passed || status="FAILED ($code)"
	fi
	closing=$(grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' \
		  "$logdir/$name.log" 2>/dev/null)
	# Check's closing lines: "100%: Checks: N, Failures: F, Errors: E".
	counts=$(echo "$closing" | awk -F'[:,] *' 'NF { n += $3; f += $5 + $7 }
		END { printf "%d %d", n, f }')
	set -- $counts
	passed_checks=$((passed_checks + $1 - $2))
	failed_checks=$((failed_checks + $2))
	if [ "$status" != passed ]; then
		failed=$((failed + 1))
		# A step that failed with no failing check (a build, a fuzz target) counts as one.
		[ "$2" -eq 0 ] && failed_checks=$((failed_checks + 1))
	fi
	checks=$(echo "$closing" | sed 's/^[0-9]*%: //' | paste -sd ';' -)
	printf '  %-10s %-12s %5ss  %s\n' "$name" "$status" "$secs" "$checks"
done
# The failing checks by name, last, where a tail of the run still shows
# them: Check reports each as "FILE:LINE:F:CASE:TEST:ITER: MESSAGE" (E for
# an error).
for name in $first $second; do
	grep -E '^[^ :]+:[0-9]+:[FE]:' "$logdir/$name.log" 2>/dev/null | head -n 10 |
		sed "s/^/  $name: /"
done
echo "checks: $passed_checks passed, $failed_checks failed"
if [ "$failed" -ne 0 ]; then
	echo "make test: $failed step(s) failed"
	exit 1
fi
echo "make test: every step passed"

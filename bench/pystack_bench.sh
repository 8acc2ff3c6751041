#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# `make bench-pystack`: what reading Python frames at every switch of a
# watched training thread costs a real PyTorch run.  One collector runs
# throughout, watching processes named zb_watched (--comm); rounds of the
# same run alternate between that name (watched: scheduler probes and
# Python frames) and zb_plain (not watched), with the order swapped every
# round.  Prints each round, the medians and their ratio.  Needs root and
# /usr/bin/python3 with python3-torch.
set -eu
COLLECTOR=$1
ROUNDS=${ROUNDS:-7}
STEPS=${STEPS:-400}
FRAMES=${FRAMES:-1}
EXTRA=""
[ "$FRAMES" = 0 ] && EXTRA=--no-python-frames
SRC=$(cd "$(dirname "$0")/.." && pwd)
SHM=/zernel-bench-pystack-$$
LOG=$(mktemp /tmp/zernel-bench-pystack.XXXXXX)

"$COLLECTOR" --comm zb_watched --shm "$SHM" $EXTRA >"$LOG" 2>&1 &
cpid=$!
trap 'kill $cpid 2>/dev/null; wait $cpid 2>/dev/null; rm -f "$LOG" /dev/shm"$SHM"' EXIT INT TERM
i=0
until grep -q "publishing to" "$LOG"; do
	i=$((i + 1))
	[ $i -gt 600 ] && { echo "collector did not start:"; cat "$LOG"; exit 1; }
	kill -0 $cpid 2>/dev/null || { cat "$LOG"; exit 1; }
	sleep 1
done

run() {
	nice -n 5 /usr/bin/python3 "$SRC/bench/pystack_train.py" "$1" "$STEPS" 2.5 |
		sed -n 's/^seconds=//p'
}
plain=""; watched=""
r=1
while [ $r -le "$ROUNDS" ]; do
	if [ $((r % 2)) -eq 1 ]; then a=$(run zb_plain); b=$(run zb_watched)
	else b=$(run zb_watched); a=$(run zb_plain); fi
	printf 'round %d: not watched %.3f s, watched %.3f s\n' "$r" "$a" "$b"
	plain="$plain $a"; watched="$watched $b"
	r=$((r + 1))
done
median() { printf '%s\n' $1 | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
mp=$(median "$plain"); mw=$(median "$watched")
printf 'median of %d rounds, %d steps (Python frames %s): not watched %.3f s, watched %.3f s, ratio %.4f\n' \
	"$ROUNDS" "$STEPS" "$([ "$FRAMES" = 0 ] && echo off || echo on)" "$mp" "$mw" "$(echo "$mw $mp" | awk '{print $1 / $2}')"
grep -c "runs CPython" "$LOG" | awk '{print "processes whose Python frames were read: " $1}'

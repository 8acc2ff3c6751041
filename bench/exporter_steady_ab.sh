#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two builds of zernel-exporter side by side on one simulated segment of
# 1,000 processes (published every second, the default), each scraped as
# Prometheus scrapes a target: gzipped text every GAP seconds (15 by
# default, Prometheus's default scrape_interval), ROUNDS times, the two
# requests of a round one after the other.  Prints each one's CPU time over the
# window and its scrape times: the first four (before two equal periods
# are known), then the median and the longest of the rest.  Which of the two
# is scraped first alternates round by round.
#
#   sh bench/exporter_steady_ab.sh OLD_EXPORTER NEW_EXPORTER [GAP] [ROUNDS]
set -eu

OLD=${1:?usage: exporter_steady_ab.sh OLD_EXPORTER NEW_EXPORTER [GAP] [ROUNDS]}
NEW=${2:?usage: exporter_steady_ab.sh OLD_EXPORTER NEW_EXPORTER [GAP] [ROUNDS]}
GAP=${3:-15}
ROUNDS=${4:-8}
. "$(dirname "$0")/exporter_pair.sh"

o0=$(cpu_ticks "$EO"); n0=$(cpu_ticks "$EN")
i=0
while [ "$i" -lt "$ROUNDS" ]; do
	sleep "$GAP"
	# Which comes first alternates: the second finds the first's CPU still warm.
	order="old:$OM new:$NM"
	[ $((i % 2)) -eq 1 ] && order="new:$NM old:$OM"
	for side in $order; do
		curl -s -o /dev/null -H 'Accept-Encoding: gzip' -w "${side%%:*} %{time_total}\n" \
			"http://127.0.0.1:${side#*:}/metrics" >>"$TMP/times"
	done
	i=$((i + 1))
done
sleep "$GAP"
o1=$(cpu_ticks "$EO"); n1=$(cpu_ticks "$EN")
hz=$(getconf CLK_TCK)
echo "CPU over $ROUNDS scrapes $GAP s apart: old $(((o1 - o0) * 1000 / hz)) ms," \
	"new $(((n1 - n0) * 1000 / hz)) ms"
for side in old new; do
	awk -v s="$side" '$1 == s { print $2 * 1000 }' "$TMP/times" >"$TMP/$side"
	printf '%s: first four %s ms; ' "$side" "$(head -n 4 "$TMP/$side" | tr '\n' ' ')"
	tail -n +5 "$TMP/$side" | sort -n | awk '{ t[NR] = $1 }
		END { printf "the rest (%d): median %.2f ms, max %.2f ms\n", NR, t[int((NR + 1) / 2)], t[NR] }'
done

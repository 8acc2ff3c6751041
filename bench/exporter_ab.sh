#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two builds of zernel-exporter side by side on one simulated segment of
# 1,000 processes, in one run: each gets 1,000 WebSocket feed clients
# (bench/ws_clients.py) for 30 s and the same scrapes (text, gzipped
# text, /api/stalls, four a second), then each one's resident memory (now
# and peak) and CPU time over the window are printed.  For changes to how
# the exporter reads the segment, where its memory is the figure.
#
#   sh bench/exporter_ab.sh OLD_EXPORTER NEW_EXPORTER
set -eu

OLD=${1:?usage: exporter_ab.sh OLD_EXPORTER NEW_EXPORTER}
NEW=${2:?usage: exporter_ab.sh OLD_EXPORTER NEW_EXPORTER}
. "$(dirname "$0")/exporter_pair.sh"

/usr/bin/python3 bench/ws_clients.py "$OW" 1000 32 >"$TMP/ws-old.txt" 2>&1 &
WO=$!
/usr/bin/python3 bench/ws_clients.py "$NW" 1000 32 >"$TMP/ws-new.txt" 2>&1 &
WN=$!
o0=$(cpu_ticks "$EO"); n0=$(cpu_ticks "$EN")
i=0
while [ "$i" -lt 120 ]; do
	for port in "$OM" "$NM"; do
		curl -s -o /dev/null "http://127.0.0.1:$port/metrics"
		curl -s -o /dev/null -H 'Accept-Encoding: gzip' "http://127.0.0.1:$port/metrics"
		curl -s -o /dev/null "http://127.0.0.1:$port/api/stalls"
	done
	sleep 0.25
	i=$((i + 1))
done
wait "$WO" "$WN"
o1=$(cpu_ticks "$EO"); n1=$(cpu_ticks "$EN")
hz=$(getconf CLK_TCK)
for side in old:$EO new:$EN; do
	pid=${side#*:}
	printf '%s exporter: RSS %s kB, peak %s kB\n' "${side%%:*}" \
		"$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")" \
		"$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")"
done
printf 'feed clients: old %s; new %s\n' "$(head -n 1 "$TMP/ws-old.txt")" \
	"$(head -n 1 "$TMP/ws-new.txt")"
echo "CPU over the window: old $(echo "$o1 $o0 $hz" | awk '{printf "%.2f", ($1-$2)/$3}') s," \
	"new $(echo "$n1 $n0 $hz" | awk '{printf "%.2f", ($1-$2)/$3}') s"

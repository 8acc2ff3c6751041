#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Benchmark of zernel-exporter (see bench/exporter.mk).  Starts the
# simulator with 1,000 processes, the exporter and prometheus-node-exporter
# on loopback ports, runs wrk against both /metrics (the exporter as text,
# text gzipped, protobuf with native histograms and that gzipped; the node
# exporter as text and gzipped), saturated (eight requests in flight) and
# as one scraper (one at a time), then connects 1,000
# WebSocket clients and samples the exporter's CPU time and RSS.
set -eu

PROCS=${PROCS:-1000}
CLIENTS=${CLIENTS:-1000}
DURATION=${DURATION:-10}
BENCH_NAME=bench
. "$(dirname "$0")/exporter_env.sh"

for tool in wrk prometheus-node-exporter /usr/bin/python3; do
	command -v "$tool" >/dev/null || { echo "bench-exporter: $tool is missing" >&2; exit 1; }
done

MPORT=$(free_port); WPORT=$(free_port); NPORT=$(free_port)
"$BUILD/zernel-collector" --simulate --processes "$PROCS" --shm "$SHM" \
	--publish-interval 1000 >"$TMP/collector.log" 2>&1 &
pids="$pids $!"
"$BUILD/zernel-exporter" --shm "$SHM" --metrics-listen "127.0.0.1:$MPORT" \
	--ws-listen "127.0.0.1:$WPORT" --ws-interval 1000 >"$TMP/exporter.log" 2>&1 &
EXP=$!
pids="$pids $EXP"
# The same segment with one histogram per process, for comparison.
PPORT=$(free_port); PWPORT=$(free_port)
"$BUILD/zernel-exporter" --shm "$SHM" --metrics-listen "127.0.0.1:$PPORT" \
	--ws-listen "127.0.0.1:$PWPORT" --per-pid-histograms >"$TMP/exporter-pid.log" 2>&1 &
pids="$pids $!"
prometheus-node-exporter --web.listen-address="127.0.0.1:$NPORT" >"$TMP/node.log" 2>&1 &
pids="$pids $!"

for i in $(seq 1 100); do
	curl -sf "http://127.0.0.1:$MPORT/healthz" >/dev/null 2>&1 &&
	curl -sf "http://127.0.0.1:$NPORT/metrics" >/dev/null 2>&1 && break
	sleep 0.1
done

# The simulator starts its processes over the first seconds: wait for all.
metric() { curl -s "http://127.0.0.1:$MPORT/metrics" | awk -v n="$1" '$1==n{print $2}'; }
for i in $(seq 1 100); do
	[ "$(metric zernel_processes_tracked)" = "$PROCS" ] && break
	sleep 0.2
done
echo "processes tracked: $(metric zernel_processes_tracked)"
# A process gains series as it first enters a state or family (a worker's
# first batch, a trainer's first lock wait): measure the body the job
# keeps, once three looks 3 s apart count the same series.
series() { curl -s "http://127.0.0.1:$MPORT/metrics" | grep -vc '^#'; }
last=$(series); same=0; waited=0
while [ "$same" -lt 2 ] && [ "$waited" -lt 180 ]; do
	sleep 3; waited=$((waited + 3))
	now=$(series)
	if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0; last=$now; fi
done
echo "series settled at $last after ${waited} s$([ "$same" -lt 2 ] && echo ' (still growing: measured anyway)')"

size() { curl -s "$1" | wc -c; }
# What Prometheus sends with native histograms on (protobuf first), and gzip.
ACCEPT_PB='application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.1'
GZ='Accept-Encoding: gzip'
curl -s "http://127.0.0.1:$MPORT/metrics" >"$TMP/m.txt"
curl -s "http://127.0.0.1:$PPORT/metrics" >"$TMP/mp.txt"
curl -s -H "$GZ" "http://127.0.0.1:$MPORT/metrics" >"$TMP/m.txt.gz"
curl -s -H "Accept: $ACCEPT_PB" "http://127.0.0.1:$MPORT/metrics" >"$TMP/m.pb"
curl -s -H "Accept: $ACCEPT_PB" -H "$GZ" "http://127.0.0.1:$MPORT/metrics" >"$TMP/m.pb.gz"
curl -s "http://127.0.0.1:$NPORT/metrics" >"$TMP/n.txt"
curl -s -H "$GZ" "http://127.0.0.1:$NPORT/metrics" >"$TMP/n.txt.gz"
gzip -t "$TMP/m.txt.gz" "$TMP/m.pb.gz" || { echo "bench-exporter: a gzip body does not decode" >&2; exit 1; }
# Series as Prometheus stores them: with native histograms, a histogram
# series is one series instead of its buckets, _sum and _count.
pb_series=$(awk '/^# TYPE / { type[$3] = $4; next } /^#/ { next }
	{ n = $1; sub(/[{ ].*/, "", n); f = n; sub(/_(bucket|sum|count)$/, "", f)
	  if (type[f] == "histogram") { if (n ~ /_count$/) all++ } else all++ }
	END { print all }' "$TMP/m.txt")
echo "== /metrics, simulator with $PROCS processes (wrk -t2 -c8 -d${DURATION}s, same machine, same run)"
printf '%-26s %8s series  %9s bytes\n' \
	"zernel text" "$(grep -vc '^#' "$TMP/m.txt")" "$(wc -c <"$TMP/m.txt")" \
	"zernel text, gzip" "$(grep -vc '^#' "$TMP/m.txt")" "$(wc -c <"$TMP/m.txt.gz")" \
	"zernel protobuf (native)" "$pb_series" "$(wc -c <"$TMP/m.pb")" \
	"zernel protobuf, gzip" "$pb_series" "$(wc -c <"$TMP/m.pb.gz")" \
	"node-exporter text" "$(grep -vc '^#' "$TMP/n.txt")" "$(wc -c <"$TMP/n.txt")" \
	"node-exporter text, gzip" "$(grep -vc '^#' "$TMP/n.txt")" "$(wc -c <"$TMP/n.txt.gz")"
awk -v n="$PROCS" '!/^#/ { all++; if ($0 ~ /[{,]pid="/) pid++ }
	END { printf "zernel series per watched process: %.1f with a pid label, %.1f counting every series (target <= 40)\n", pid / n, all / n }' "$TMP/m.txt"
awk -v n="$PROCS" -v b="$(wc -c <"$TMP/mp.txt")" '!/^#/ { all++ }
	END { printf "with --per-pid-histograms:  %d series (%.1f per process), %d bytes\n", all, all / n, b }' "$TMP/mp.txt"
awk -v b="$(wc -c <"$TMP/m.txt")" 'BEGIN { printf "text body %d bytes (target < 1000000): %s\n", b, b < 1000000 ? "met" : "NOT met" }'
# bench_one NAME URL [wrk flags such as -H "Header: value"]; $CONNS at once
bench_one() {
	name=$1; url=$2; shift 2
	# The server before works off its last requests for about a second
	# after wrk stops (node-exporter's take 100 ms each): let it finish,
	# or its CPU lands in the first percentile of this run.
	sleep 2
	wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" --latency "$@" "$url" >"$TMP/wrk.txt" 2>&1
	p50=$(awk '$1=="50%"{print $2}' "$TMP/wrk.txt")
	p99=$(awk '$1=="99%"{print $2}' "$TMP/wrk.txt")
	rps=$(awk '/^Requests\/sec/{print $2}' "$TMP/wrk.txt")
	xfer=$(awk '/^Transfer\/sec/{print $2}' "$TMP/wrk.txt")
	non2xx=$(awk '/Non-2xx/{print $NF}' "$TMP/wrk.txt")
	printf '%-26s p50 %8s  p99 %8s  %10s req/s  %10s/s%s\n' "$name" "$p50" "$p99" "$rps" "$xfer" \
		"${non2xx:+  NON-2XX: $non2xx}"
}
bench_all() {
	bench_one "zernel text" "http://127.0.0.1:$MPORT/metrics"
	bench_one "zernel text, gzip" "http://127.0.0.1:$MPORT/metrics" -H "$GZ"
	bench_one "zernel protobuf" "http://127.0.0.1:$MPORT/metrics" -H "Accept: $ACCEPT_PB"
	bench_one "zernel protobuf, gzip" "http://127.0.0.1:$MPORT/metrics" -H "Accept: $ACCEPT_PB" -H "$GZ"
	bench_one "node-exporter text" "http://127.0.0.1:$NPORT/metrics"
	bench_one "node-exporter text, gzip" "http://127.0.0.1:$NPORT/metrics" -H "$GZ"
}
# Saturated: eight requests always in flight, what the two cores can serve.
THREADS=2 CONNS=8
bench_all
# As a scraper sees it: one request at a time, each answered before the next.
echo "== /metrics, one scraper (wrk -t1 -c1 -d${DURATION}s): latency of a scrape"
THREADS=1 CONNS=1
bench_all

# As Prometheus scrapes (every 15 s by default): too rarely for the renders
# to be kept ahead, so a scrape waits for one unless its steady interval
# forecasts it (exporter/http/scrape_forecast.h).  steady_one NAME GUNZIP
# [curl flags]: eight requests 3.5 s apart, each body's
# zernel_exporter_scrapes_waited_total telling whether it waited; the
# first four come before two equal periods are known.
steady_one() {
	name=$1; unzip=$2; shift 2
	sleep 3.5
	for i in 1 2 3 4 5 6 7 8; do
		curl -s -o "$TMP/steady$i" -w '%{time_total}\n' "$@" "http://127.0.0.1:$MPORT/metrics" \
			>"$TMP/steady$i.time"
		[ "$unzip" = 1 ] && { mv "$TMP/steady$i" "$TMP/steady$i.gz"; gzip -dc "$TMP/steady$i.gz" >"$TMP/steady$i"; }
		[ "$i" -lt 8 ] && sleep 3.5
	done
	for i in 1 2 3 4 5 6 7 8; do
		printf '%s %s\n' "$(cat "$TMP/steady$i.time")" \
			"$(awk '$1=="zernel_exporter_scrapes_waited_total"{print $2}' "$TMP/steady$i")"
	done | awk -v name="$name" '
		{ t[NR] = $1 * 1000; w[NR] = $2 }
		function show(from, to, what,    i, j, v, n, s, max, waited) {
			n = 0; max = 0; waited = 0
			for (i = from; i <= to; i++) {
				if (t[i] > max) max = t[i]
				if (i > 1 && w[i] > w[i - 1]) waited++
				for (j = ++n; j > 1 && s[j - 1] > t[i]; j--)
					s[j] = s[j - 1]
				s[j] = t[i]
			}
			printf "%-26s %-28s median %6.2f ms  max %6.2f ms  waited for a render: %d of %d\n",
				name, what, s[int((n + 1) / 2)], max, waited, (from > 1 ? n : n - 1)
		}
		END { show(1, 4, "requests 1-4 (on demand)"); show(5, 8, "requests 5-8 (forecast)") }'
}
rss_kb() { awk '/^VmRSS/{print $2}' "/proc/$1/status"; }
HZ=$(getconf CLK_TCK)

echo "== /metrics, one scraper every 3.5 s (as Prometheus: renders not kept ahead); target <= 5 ms"
steady_one "zernel text" 0
steady_one "zernel text, gzip" 1 -H "$GZ"

echo "== WebSocket feed: $CLIENTS clients at 1 Hz, simulator with $PROCS processes"
echo "exporter RSS before clients: $(rss_kb "$EXP") kB"
/usr/bin/python3 bench/ws_clients.py "$WPORT" "$CLIENTS" $((DURATION + 40)) >"$TMP/ws.txt" 2>&1 &
WSC=$!
pids="$pids $WSC"
# Connecting takes a while; measure once every client is in, plus 2 s.
for i in $(seq 1 300); do
	[ "$(metric zernel_exporter_ws_clients)" = "$CLIENTS" ] && break
	sleep 0.1
done
sleep 2
t0=$(cpu_ticks "$EXP"); r0=$(rss_kb "$EXP"); d0=$(metric zernel_exporter_ws_frames_dropped_total)
clients=$(metric zernel_exporter_ws_clients); snap=$(metric zernel_exporter_ws_snapshot_bytes)
peak=$r0
for i in $(seq 1 "$DURATION"); do
	sleep 1
	r=$(rss_kb "$EXP"); [ "$r" -gt "$peak" ] && peak=$r
done
t1=$(cpu_ticks "$EXP"); d1=$(metric zernel_exporter_ws_frames_dropped_total)
kill "$WSC" 2>/dev/null || true
wait "$WSC" 2>/dev/null || true
head -1 "$TMP/ws.txt"
echo "clients connected (exporter's view): $clients; snapshot size $snap bytes"
echo "feed push: $snap bytes (the top 32 processes); GET /snapshot: $(size "http://127.0.0.1:$MPORT/snapshot") bytes (all $PROCS)"
awk -v t0="$t0" -v t1="$t1" -v hz="$HZ" -v d="$DURATION" \
	'BEGIN { printf "exporter CPU: %.1f%% of one core over %d s\n", (t1 - t0) / hz / d * 100, d }'
echo "exporter RSS: $r0 kB at start of window, $peak kB peak"
echo "snapshots dropped in the window: $((d1 - d0)); sent in all: $(metric zernel_exporter_ws_frames_sent_total)"

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# `make demo`: a simulated training job served by the real exporter on
# localhost.  Needs no GPU, no BPF and no root.  Ctrl-C stops everything.
set -eu

BUILD=${BUILD:-build}
SHM=${ZERNEL_DEMO_SHM:-/zernel-demo}
SCENARIO=${SCENARIO:-steady}
METRICS=${METRICS_LISTEN:-127.0.0.1:9091}
WS=${WS_LISTEN:-127.0.0.1:9092}

collector_pid=""
exporter_pid=""

stop() {
	trap - INT TERM EXIT
	[ -n "$exporter_pid" ] && kill "$exporter_pid" 2>/dev/null || true
	[ -n "$collector_pid" ] && kill "$collector_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	echo
	echo "demo: stopped"
}
trap stop INT TERM EXIT

"$BUILD/zernel-collector" --simulate --scenario "$SCENARIO" --shm "$SHM" &
collector_pid=$!
"$BUILD/zernel-exporter" --shm "$SHM" \
	--metrics-listen "$METRICS" --ws-listen "$WS" &
exporter_pid=$!

cat <<MSG

  Zernel demo: simulated job (scenario "$SCENARIO"), nothing real is probed.
    metrics    http://$METRICS/metrics
    live page  http://$METRICS/
    feed       ws://$WS
  Ctrl-C stops everything.

MSG

if [ -x "$BUILD/zernel" ] && [ -t 1 ]; then
	"$BUILD/zernel" watch --url "ws://$WS" || true
else
	wait
fi

# SPDX-License-Identifier: BSD-2-Clause
#
# Sourced by the A/B benchmarks of zernel-exporter (exporter_ab.sh,
# exporter_steady_ab.sh): starts the simulator with 1,000 processes
# (publishing every second) and the builds $OLD and $NEW on its segment,
# and waits until every simulated process is in its states.  Sets TMP
# (removed at exit), EO and EN (the two exporters' pids), OM and NM (their
# metrics ports), OW and NW (their feed ports), and what exporter_env.sh
# sets.
BENCH_NAME=ab
. "$(dirname "$0")/exporter_env.sh"

"$BUILD/zernel-collector" --simulate --processes 1000 --shm "$SHM" \
	--publish-interval 1000 >"$TMP/collector.log" 2>&1 &
pids="$pids $!"
OM=$(free_port); OW=$(free_port); NM=$(free_port); NW=$(free_port)
"$OLD" --shm "$SHM" --metrics-listen "127.0.0.1:$OM" --ws-listen "127.0.0.1:$OW" \
	>"$TMP/old.log" 2>&1 &
EO=$!
"$NEW" --shm "$SHM" --metrics-listen "127.0.0.1:$NM" --ws-listen "127.0.0.1:$NW" \
	>"$TMP/new.log" 2>&1 &
EN=$!
pids="$pids $EO $EN"
# Every simulated process started and in its states (bench/exporter_bench.sh waits the same).
sleep 50

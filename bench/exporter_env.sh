# SPDX-License-Identifier: BSD-2-Clause
#
# Sourced by the zernel-exporter benchmarks (exporter_bench.sh,
# exporter_pair.sh) after they set BENCH_NAME: the build folder (BUILD),
# a segment name (SHM) and a scratch folder (TMP) of their own, both
# removed at exit with every process whose pid is added to $pids; a free
# loopback port (free_port) and a process's CPU ticks (cpu_ticks PID).
BUILD=${BUILD:-build}
SHM=/zernel-$BENCH_NAME-$$
TMP=$(mktemp -d "/tmp/zernel-$BENCH_NAME-XXXXXX")
pids=""

cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	for p in $pids; do wait "$p" 2>/dev/null || true; done
	rm -rf "$TMP" "/dev/shm$SHM"
}
trap cleanup EXIT INT TERM

free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

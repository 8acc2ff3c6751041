#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
#   tools/test-arm64.sh BUILD_DIR SUITE...
#
# arm64 (GH200 and GB200 nodes) from an x86-64 machine: cross-builds the
# collector, the exporter, the CLI and the test runners into BUILD_DIR with
# Debian's cross compiler and arm64 libraries (multiarch, `make test-deps`
# installs them), then runs the named suites under qemu-user, one after
# another.  These are the suites that need no kernel of arm64's:
# parsers, aggregation, NCCL tracking and argument positions, the segment,
# the Prometheus and feed encoders.  What only an arm64 kernel shows (the
# probes attached, the registers they read) needs arm64 hardware.
set -eu

build=${1:?usage: test-arm64.sh BUILD_DIR SUITE...}
shift
triplet=aarch64-linux-gnu
libdir=/usr/lib/$triplet
qemu=qemu-aarch64-static

for tool in $triplet-gcc $qemu; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "test-arm64: $tool is missing: run make test-deps (as root)" >&2
		exit 1
	}
done

# Debian ships these two arm64 libraries without a development package that
# installs beside the x86-64 one (libh2o-evloop-dev is not multiarch,
# libwebsockets-dev clashes on one header): their headers are the same, so
# the link names the arm64 runtime libraries through links of its own.
links=$build/lib-links
mkdir -p "$links"
for pair in libwebsockets.so:libwebsockets.so.17 libh2o-evloop.so:libh2o-evloop.so.0.13; do
	name=${pair%%:*}
	real=$libdir/${pair#*:}
	[ -e "$real" ] || { echo "test-arm64: $real is missing: run make test-deps (as root)" >&2; exit 1; }
	ln -sfn "$real" "$links/$name"
done

runners="common shm collector exporter"
targets="$build/zernel-collector $build/zernel-exporter $build/zernel $build/libzernel-nccl-profiler.so"
for r in $runners; do
	targets="$targets $build/tests/zernel-tests-$r"
done
# shellcheck disable=SC2086
make --no-print-directory -j"$(nproc)" BUILD="$build" ARCH=arm64 CC=$triplet-gcc \
	AR=$triplet-ar LDFLAGS="-L$links" $targets

for program in $targets; do
	readelf -h "$program" | grep -q 'Machine: *AArch64' || {
		echo "test-arm64: $program is not an arm64 program" >&2
		exit 1
	}
done
"$qemu" "$build/zernel-collector" --version

# One qemu process per suite, so that a crash names its suite (a runner's
# buffered output dies with it).  Each suite's closing line is kept,
# indented, and the run closes with their sum in Check's form.  Emulated
# code runs several times slower than native: Check's per-test timeouts,
# which are there to catch hangs, are stretched to match.
export CK_TIMEOUT_MULTIPLIER=8
# qemu-user refuses a seccomp filter, so the sandboxed parser child cannot
# start: suites skip their comparisons through it (the parser suite itself
# is not run here).
export ZERNEL_TESTS_NO_SECCOMP=1
checks=0
failures=0
errors=0
failed=""
for suite in "$@"; do
	runner=""
	for r in $runners; do
		[ -e "tests/$r/check_$suite.c" ] && runner=$r
	done
	[ -n "$runner" ] || { echo "test-arm64: no suite named $suite" >&2; exit 2; }
	tries=0
	while :; do
		status=0
		out=$(ZERNEL_TESTS_STRICT=1 ZERNEL_BUILD=$(realpath "$build") ZERNEL_SRC=$(pwd) \
			"$qemu" "$build/tests/zernel-tests-$runner" "$suite" 2>&1) || status=$?
		printf '%s\n' "$out" | sed -E "s/^([0-9]+%: Checks:)/  $suite: \1/"
		closing=$(printf '%s\n' "$out" | grep -E '^[0-9]+%: Checks: ' | tail -n 1)
		tries=$((tries + 1))
		# Killed by a signal before any result, once: run again, and say so.
		# Seen here as every qemu-user process of a minute or two dying of
		# SIGILL at start whatever it ran, the same binaries passing before
		# and after; a suite that crashes on its own crashes twice.
		[ -z "$closing" ] && [ "$status" -ge 128 ] && [ "$tries" -eq 1 ] || break
		echo "test-arm64: $suite ($runner) ended with status $status and no result: once more"
		sleep 5
	done
	if [ -z "$closing" ]; then
		echo "test-arm64: $suite ($runner) ended with status $status and no result"
		errors=$((errors + 1))
	else
		checks=$((checks + $(echo "$closing" | sed -E 's/.*Checks: ([0-9]+).*/\1/')))
		failures=$((failures + $(echo "$closing" | sed -E 's/.*Failures: ([0-9]+).*/\1/')))
		errors=$((errors + $(echo "$closing" | sed -E 's/.*Errors: ([0-9]+).*/\1/')))
	fi
	[ "$status" -eq 0 ] || failed="$failed $suite"
done
passed=$((checks - failures - errors))
echo "$(( checks > 0 ? 100 * passed / checks : 0 ))%: Checks: $checks, Failures: $failures, Errors: $errors"
[ -z "$failed" ] || { echo "test-arm64: failed under qemu-user:$failed" >&2; exit 1; }

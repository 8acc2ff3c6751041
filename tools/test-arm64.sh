#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
#   tools/test-arm64.sh BUILD_DIR SUITE...
#
# arm64 (GH200 and GB200 nodes) from an x86-64 machine: cross-builds the
# collector, the exporter, the CLI and the test runners into BUILD_DIR with
# Debian's cross compiler and arm64 libraries (multiarch, `make test-deps`
# installs them), then runs the named suites under qemu-user, one runner
# after another.  These are the suites that need no kernel of arm64's:
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
targets="$build/zernel-collector $build/zernel-exporter $build/zernel"
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

# Each runner runs the named suites it holds (77: none of them).
ran=0
failed=0
for r in $runners; do
	status=0
	ZERNEL_TESTS_STRICT=1 ZERNEL_BUILD=$(realpath "$build") ZERNEL_SRC=$(pwd) \
		"$qemu" "$build/tests/zernel-tests-$r" "$@" || status=$?
	case $status in
	0) ran=1 ;;
	77) ;;
	*) ran=1; failed=$status ;;
	esac
done
[ "$ran" -eq 1 ] || { echo "test-arm64: no suite named: $*" >&2; exit 2; }
exit "$failed"

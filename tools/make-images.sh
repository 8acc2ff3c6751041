#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Builds the two images with podman:  tools/make-images.sh BUILD
#   localhost/zernel-exporter:VERSION   localhost/zernel-collector:VERSION
# from the binaries `make` left in BUILD (built on Debian 12, the images'
# base).  The base is docker.io/library/debian:12 when an image registry
# answers; otherwise a Debian 12 the script makes with debootstrap from
# Debian's archive (tools/debian-tree.sh, cached in BUILD/debian-12) and
# imports as localhost/zernel-debian:12.  It says which it used, and the
# sizes, in BUILD/images/report.txt as well.
#
# Where podman's defaults cannot start a container on this host (crun and
# cgroup v1/v2 hybrid mounts, or default rlimits above the host's hard
# limits), BUILD/images/containers.conf holds settings that can, and the
# script says so; CONTAINERS_CONF=that file makes podman use them.
set -eu
# The settings are decided below; one named by the caller may not exist yet.
unset CONTAINERS_CONF

build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^VERSION *:= *//p' "$src/Makefile")
out=$build/images
mkdir -p "$out"
report=$out/report.txt
: >"$report"
say() { echo "make-images: $*" | tee -a "$report"; }

for p in zernel-exporter zernel-collector; do
	[ -x "$build/$p" ] || { echo "make-images: $build/$p is missing: run make" >&2; exit 1; }
done
command -v podman >/dev/null || { echo "make-images: podman is missing (make test-deps)" >&2; exit 1; }

# --- the base
registry_base=docker.io/library/debian:12
if err=$(timeout 30 podman pull -q "$registry_base" 2>&1); then
	base=$registry_base
	say "base: $registry_base, pulled from the registry"
else
	why=$(printf '%s\n' "$err" | tail -n 1)
	sh "$src/tools/debian-tree.sh" "$build/debian-12"
	base=localhost/zernel-debian:12
	stamp=$(cat "$build/debian-12/.zernel-tree")
	if [ "$(podman image inspect --format '{{index .Labels "zernel.tree"}}' "$base" 2>/dev/null)" != "$stamp" ]; then
		tar -C "$build/debian-12" --exclude=./.zernel-tree -cf - . |
			podman import -q --change "LABEL zernel.tree=$stamp" \
				--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
				- "$base" >/dev/null
	fi
	say "base: $base, made with debootstrap (bookworm, minbase) from Debian's archive," \
	    "because no image registry answered ($registry_base: $why)"
fi

# --- a runtime that can start containers here
rm -f "$out/containers.conf"
if ! err=$(podman run --rm "$base" /bin/true 2>&1); then
	cat >"$out/containers.conf" <<CONF
# Written by tools/make-images.sh: podman's defaults failed on this host with
#   $(printf '%s\n' "$err" | tail -n 1)
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=4096:4096"]
[engine]
runtime = "runc"
CONF
	export CONTAINERS_CONF="$out/containers.conf"
	if ! err2=$(podman run --rm "$base" /bin/true 2>&1); then
		echo "make-images: podman cannot start a container here:" >&2
		printf '%s\n%s\n' "$err" "$err2" >&2
		exit 1
	fi
	say "podman: defaults failed ($(printf '%s\n' "$err" | tail -n 1));" \
	    "using runc and rlimits within the host's ($out/containers.conf)"
fi

# --- the images, each from a context holding only its binary and the stager
for p in exporter collector; do
	ctx=$out/context-$p
	rm -rf "$ctx"
	mkdir -p "$ctx"
	cp "$build/zernel-$p" "$src/deploy/containers/stage-root.sh" "$ctx/"
	# What the image is made of; an image made of the same is kept.
	inputs=$( (podman image inspect --format '{{.Id}}' "$base"; cat "$ctx"/* \
		"$src/deploy/containers/Containerfile.$p") | sha256sum | cut -c1-64)
	if [ "$(podman image inspect --format '{{index .Labels "zernel.inputs"}}' \
		"localhost/zernel-$p:$version" 2>/dev/null)" = "$inputs" ]; then
		size=$(podman image inspect --format '{{.Size}}' "localhost/zernel-$p:$version")
		say "image: localhost/zernel-$p:$version, $size bytes" \
		    "($(( (size + 524288) / 1048576 )) MiB), up to date"
		continue
	fi
	old=$(podman image inspect --format '{{.Id}}' "localhost/zernel-$p:$version" 2>/dev/null || true)
	# No layer cache: the runtime stage is seconds of work, and cached
	# stages would pile up as unnamed images on every rebuild.
	podman build -q --layers=false --build-arg BASE="$base" --label "zernel.inputs=$inputs" \
		-f "$src/deploy/containers/Containerfile.$p" \
		-t "localhost/zernel-$p:$version" "$ctx" >"$out/build-$p.log" 2>&1 || {
		tail -n 30 "$out/build-$p.log" >&2
		echo "make-images: building zernel-$p failed; the log is $out/build-$p.log" >&2
		exit 1
	}
	new=$(podman image inspect --format '{{.Id}}' "localhost/zernel-$p:$version")
	# The image this one replaces, unless a container still uses it.
	if [ -n "$old" ] && [ "$old" != "$new" ]; then
		podman rmi "$old" >/dev/null 2>&1 || true
	fi
	size=$(podman image inspect --format '{{.Size}}' "localhost/zernel-$p:$version")
	say "image: localhost/zernel-$p:$version, $size bytes ($(( (size + 524288) / 1048576 )) MiB)"
done

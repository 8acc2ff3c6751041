#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# One Debian 12 root file system, made with debootstrap from Debian's
# archive and kept under the build folder:  tools/debian-tree.sh DIR
# It serves two purposes: the base of the images where no image registry
# can be reached, and the machine the systemd tests boot with
# systemd-nspawn.  So it holds minbase, systemd, and the libraries the
# package depends on (installing the package then needs no network).
# DIR/.zernel-tree names what it was made with; a tree made with anything
# else is made again.
set -eu

dir=$1
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
include=systemd,systemd-sysv,dbus,libbpf1,libelf1,zlib1g,libcap2,libh2o-evloop0.13,libwebsockets17,libjson-c5,libseccomp2,libssl3,libprotobuf-c1
want="bookworm minbase $include"

if [ -r "$dir/.zernel-tree" ] && [ "$(cat "$dir/.zernel-tree")" = "$want" ]; then
	exit 0
fi
command -v debootstrap >/dev/null || { echo "debian-tree: debootstrap is missing (make test-deps)" >&2; exit 1; }
rm -rf "$dir" "$dir.tmp"
mkdir -p "$(dirname "$dir")"
echo "debian-tree: debootstrap --variant=minbase bookworm from $mirror into $dir"
debootstrap --variant=minbase --include="$include" bookworm "$dir.tmp" "$mirror" \
	>"$dir.log" 2>&1 || {
	tail -n 20 "$dir.log" >&2
	echo "debian-tree: debootstrap failed; its log is $dir.log" >&2
	exit 1
}
# Neither the package cache nor the lists are needed again.
rm -rf "$dir.tmp"/var/cache/apt/archives/*.deb "$dir.tmp"/var/lib/apt/lists/*_Packages
echo "$want" >"$dir.tmp/.zernel-tree"
mv "$dir.tmp" "$dir"

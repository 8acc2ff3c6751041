#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# A CPython to test the Python frames against, where Debian 12 ships only
# 3.11:  tools/python-tree.sh DIR VERSION   (VERSION 3.13 or 3.14)
# Debian's python3.X-minimal, its C library and its headers, fetched from
# Debian's archive with apt (a private source list; the system's is left
# alone) and unpacked into DIR, a root file system to chroot into: 3.13
# from Debian 13, 3.14 from Debian testing (forky).
# DIR/.zernel-tree names what it was made with; a tree made with anything
# else is made again.  Without the archive it says so and leaves DIR out:
# the tests that need it then skip, or fail under ZERNEL_TESTS_STRICT.
set -eu

dir=$1
version=$2
case $version in
3.13)	mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}; suite=trixie ;;
3.14)	mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}; suite=forky ;;
*)	echo "python-tree: no source for CPython $version (3.13, 3.14)" >&2; exit 2 ;;
esac
packages="python$version-minimal libpython$version-minimal libpython$version-dev"
packages="$packages libc6 libgcc-s1 libexpat1 zlib1g"
want="$suite $packages"

if [ -r "$dir/.zernel-tree" ] && [ "$(cat "$dir/.zernel-tree")" = "$want" ]; then
	exit 0
fi
command -v apt-get >/dev/null || { echo "python-tree: apt-get is missing" >&2; exit 0; }
mkdir -p "$(dirname "$dir")"
# apt takes relative directories as under its own: absolute ones.
work="$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir").tmp"
rm -rf "$dir" "$work"
mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/debs" "$work/root"
# testing's Release carries a Valid-Until that a mirror kept still outlives.
options="signed-by=/usr/share/keyrings/debian-archive-keyring.gpg check-valid-until=no"
echo "deb [$options] $mirror $suite main" >"$work/apt/sources.list"
apt() {
	apt-get -q -o Dir::Etc::SourceList="$work/apt/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$work/apt/lists" \
		-o Dir::Cache="$work/apt/cache" -o Dir::State::Status=/dev/null \
		-o APT::Sandbox::User="$(id -un)" "$@"
}
echo "python-tree: Debian's python$version ($suite) from $mirror into $dir"
if ! apt update >"$work/apt.log" 2>&1 ||
	! (cd "$work/debs" && apt download $packages) >>"$work/apt.log" 2>&1; then
	tail -n 5 "$work/apt.log" >&2
	echo "python-tree: could not fetch Debian's python$version (no access to $mirror?);" \
		"the CPython $version tests will skip" >&2
	rm -rf "$work"
	exit 0
fi
for deb in "$work"/debs/*.deb; do
	dpkg-deb -x "$deb" "$work/root"
done
# Debian 13 merges /usr: the links base-files would make.
for d in bin lib lib64; do
	[ -e "$work/root/$d" ] || ln -s "usr/$d" "$work/root/$d"
done
mkdir -p "$work/root/tmp" "$work/root/proc"
echo "$want" >"$work/root/.zernel-tree"
mv "$work/root" "$dir"
rm -rf "$work"

#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Builds the Debian package from a copy of the source tree, so the tree
# itself stays clean:  tools/make-deb.sh OUTDIR
# The copy holds the files git tracks plus new ones it does not ignore
# (or, without git, everything but the build folders).  OUTDIR receives
# zernel_<version>_<arch>.deb and lintian.txt, lintian's verdict.
set -eu

out=$1
src=$(cd "$(dirname "$0")/.." && pwd)
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
work=$out/src/zernel-$version

rm -rf "$out"
mkdir -p "$work"
out=$(cd "$out" && pwd)
work=$out/src/zernel-$version
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$src" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 cp --parents -t "$work")
else
	(cd "$src" && tar --exclude=./build --exclude='./build-*' -cf - .) | tar -xf - -C "$work"
fi

(cd "$work" && dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1 || {
	tail -n 40 "$out/build.log" >&2
	echo "make-deb: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
	exit 1
}
mv "$out"/src/*.deb "$out"/
rm -rf "$out/src"

deb=$(ls "$out"/zernel_*.deb)
# Every tag lintian knows of, pedantic included; overrides must say why.
lintian --display-info --pedantic --fail-on error,warning,info,pedantic "$deb" \
	>"$out/lintian.txt" 2>&1 || {
	cat "$out/lintian.txt" >&2
	echo "make-deb: lintian is not clean for $deb" >&2
	exit 1
}
echo "make-deb: $deb (lintian clean)"

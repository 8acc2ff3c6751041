#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Lays out the root file system of a one-program image:
#   stage-root.sh ROOT BINARY DEST
# ROOT receives BINARY at DEST, the shared libraries it loads (as ldd finds
# them in this stage, so they are the Debian packages installed here), the
# dynamic loader, the copyright files of the packages they come from, and
# an /etc/passwd and /etc/group naming root and nobody.  Nothing else: no
# shell, no package manager.
set -eu

root=$1 bin=$2 dest=$3

mkdir -p "$root/etc" "$root/tmp" "$root/$(dirname "$dest")"
chmod 1777 "$root/tmp"
cp "$bin" "$root$dest"
chmod 0755 "$root$dest"

# ldd prints "name => /path (addr)" or "/path (addr)" for the loader.
libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
if ldd "$bin" | grep -q "not found"; then
	ldd "$bin" >&2
	echo "stage-root: $bin needs libraries this stage lacks" >&2
	exit 1
fi
for lib in $libs; do
	cp -L --parents "$lib" "$root"
	pkg=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | head -n 1 | cut -d: -f1) || true
	[ -n "$pkg" ] && [ -r "/usr/share/doc/$pkg/copyright" ] &&
		cp --parents "/usr/share/doc/$pkg/copyright" "$root"
done

printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' \
	>"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"

# The program runs in the staged root exactly as it will in the image.
chroot "$root" "$dest" --version

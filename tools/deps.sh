#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Installs the Debian packages named on the command line that are missing.
# As root it runs apt-get; otherwise it prints the exact command to run and
# fails, so a build never half-starts without its dependencies.
set -eu

missing=""
for pkg in "$@"; do
	status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
	case "$status" in
	*"install ok installed"*) ;;
	*) missing="$missing $pkg" ;;
	esac
done

[ -z "$missing" ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps: these Debian packages are needed:$missing" >&2
	echo "deps: this system has no apt-get; install their equivalents by hand" >&2
	exit 1
fi

# Packages of another architecture (libbpf-dev:arm64) need it added to dpkg first.
foreign=""
for pkg in $missing; do
	case "$pkg" in
	*:*)
		arch=${pkg##*:}
		if [ "$arch" != "$(dpkg --print-architecture)" ] &&
		   ! dpkg --print-foreign-architectures | grep -qx "$arch" &&
		   ! echo "$foreign" | grep -qw "$arch"; then
			foreign="$foreign $arch"
		fi ;;
	esac
done

if [ "$(id -u)" != 0 ]; then
	echo "deps: missing Debian packages. Run, as root:" >&2
	for arch in $foreign; do
		echo "  dpkg --add-architecture $arch" >&2
	done
	[ -n "$foreign" ] && echo "  apt-get update" >&2
	echo "  apt-get install -y$missing" >&2
	exit 1
fi

for arch in $foreign; do
	echo "deps: adding the $arch architecture to dpkg"
	dpkg --add-architecture "$arch"
done

echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists yet.
apt-get update -q >/dev/null || apt-get update
# shellcheck disable=SC2086
apt-get install -y -q $missing

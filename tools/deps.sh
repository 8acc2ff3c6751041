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

if [ "$(id -u)" != 0 ]; then
	echo "deps: missing Debian packages. Run, as root:" >&2
	echo "  apt-get install -y$missing" >&2
	exit 1
fi

echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have no package lists yet.
apt-get update -q >/dev/null || apt-get update
# shellcheck disable=SC2086
apt-get install -y -q $missing

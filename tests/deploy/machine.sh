#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Steps check_boot.c runs inside the booted Debian 12 (systemd-nspawn -b),
# one per call:  machine.sh STEP [ARG]
#   snapshot FILE    every path on the root file system but the volatile ones
#   install DEB      dpkg -i, then each unit's is-enabled and is-active
#   start            mount tracefs as a host has it, enable --now both units
#   show UNIT        MainPID, NRestarts, ActiveState, Result, TimeoutStopUSec
#   metric NAME      NAME's value on the exporter's /metrics (bash /dev/tcp)
#   security UNIT    "same" when systemd-analyze security of the running unit
#                    prints what --offline prints for its file, then that line
#   stop UNIT        systemctl stop; the seconds it took
#   upgrade DEB      DEB repacked as a later version, installed over the first
#   remove | purge   dpkg --remove / --purge zernel
set -eu

units="zernel-collector.service zernel-exporter.service"

case $1 in
snapshot)
	find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp \
		-o -path /var/log -o -path /var/cache -o -path /var/tmp -o -path /mnt \
		-o -path /var/lib/dpkg -o -path /var/lib/systemd/timers -o -path /var/lib/apt \
		-o -path /var/lib/systemd/random-seed -o -path /var/lib/systemd/catalog \) \
		-prune -o -print | sort >"$2"
	;;
install)
	# shellcheck disable=SC2086 # DEB may be a pattern
	dpkg -i $2 >/dev/null
	for u in $units; do
		echo "$u $(systemctl is-enabled "$u" || true) $(systemctl is-active "$u" || true)"
	done
	;;
start)
	mountpoint -q /sys/kernel/tracing/events || {
		umount /sys/kernel/tracing 2>/dev/null || true
		mount -t tracefs nodev /sys/kernel/tracing
	}
	systemctl enable --now $units 2>/dev/null
	;;
show)
	systemctl show -p MainPID,NRestarts,ActiveState,Result,TimeoutStopUSec "$2"
	;;
metric)
	# The machine has no HTTP client; bash has /dev/tcp.
	bash -c 'exec 3<>/dev/tcp/127.0.0.1/9091 &&
		printf "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n" >&3 && cat <&3' |
		awk -v n="$2" '$1 == n { print $2 }'
	;;
security)
	online=$(systemd-analyze security --no-pager "$2")
	offline=$(systemd-analyze security --no-pager --offline=yes "/lib/systemd/system/$2")
	[ "$online" = "$offline" ] && echo same || echo differ
	printf '%s\n' "$online" | grep "Overall exposure level"
	;;
stop)
	t0=$(date +%s%N)
	systemctl stop "$2"
	echo $(( ($(date +%s%N) - t0) / 1000000 ))
	;;
upgrade)
	rm -rf /tmp/up && mkdir -p /tmp/up
	# shellcheck disable=SC2086
	dpkg-deb -R $2 /tmp/up/pkg
	version=$(sed -n 's/^Version: //p' /tmp/up/pkg/DEBIAN/control)
	sed -i "s/^Version: .*/Version: $version+1/" /tmp/up/pkg/DEBIAN/control
	dpkg-deb -b /tmp/up/pkg /tmp/up/zernel.deb >/dev/null
	dpkg -i /tmp/up/zernel.deb >/dev/null
	rm -rf /tmp/up
	dpkg-query -W -f='${Version}\n' zernel
	;;
remove | purge)
	dpkg --"$1" zernel >/dev/null
	for u in $units; do
		echo "$u $(systemctl is-active "$u" || true)"
	done
	;;
*)
	echo "machine.sh: unknown step $1" >&2
	exit 2
	;;
esac

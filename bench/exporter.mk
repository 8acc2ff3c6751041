# SPDX-License-Identifier: BSD-2-Clause
#
# `make bench-exporter`: /metrics latency, throughput, body size and series
# for text, gzipped text and protobuf under wrk next to
# Debian's prometheus-node-exporter, and the WebSocket feed with 1,000
# clients, both with the simulator tracking 1,000 processes.  Prints
# figures; asserts nothing.  Needs wrk, prometheus-node-exporter and
# /usr/bin/python3 (Debian packages wrk, prometheus-node-exporter, python3).

.PHONY: bench-exporter
bench-exporter: $(COLLECTOR) $(EXPORTER)
	$(Q)BUILD=$(abspath $(BUILD)) sh bench/exporter_bench.sh

bench: bench-exporter

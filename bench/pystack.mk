# SPDX-License-Identifier: BSD-2-Clause
#
# `make bench-pystack`: a real PyTorch run watched (scheduler probes and
# Python frames) against the same run not watched.  Needs root.

.PHONY: bench-pystack
bench-pystack: $(COLLECTOR)
	$(Q)sh bench/pystack_bench.sh $(abspath $(COLLECTOR))

# SPDX-License-Identifier: BSD-2-Clause
#
# `make bench-parser`: what reading a watched process's environment and
# cgroup file through the sandboxed parser child costs, against parsing
# them in process, and the identity refresh's share of a core at 1,000
# processes.

BENCH_PARSER := $(BUILD)/bench/bench_parser

$(BENCH_PARSER): $(BUILD)/bench/bench_parser.o $(call obj,$(call not_main,$(COLLECTOR_SRCS))) \
		 $(COLLECTOR_LINK)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ $(COLLECTOR_LIBS) -o $@

.PHONY: bench-parser
bench-parser: $(BENCH_PARSER)
	$(Q)$(BENCH_PARSER)

bench: bench-parser

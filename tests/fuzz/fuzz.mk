# SPDX-License-Identifier: BSD-2-Clause
#
# Coverage-guided fuzzing (clang's libFuzzer, with AddressSanitizer and
# UBSan), one target per parser of untrusted input: tests/fuzz/fuzz_<t>.c,
# seeds in tests/fuzz/corpus/<t>/.  Everything is built again with clang
# under $(BUILD)/fuzz.
#
#   make fuzz                     every target for FUZZ_SECONDS (default 600)
#   make fuzz FUZZ_SECONDS=N      ... for N seconds each
#   make fuzz-smoke               every target for FUZZ_SMOKE_SECONDS (10) over
#                                 its corpus: what `make test` runs
#   make fuzz-seeds               records the segment seeds again from the
#                                 simulator (after a layout change; the shm
#                                 suite fuzz_seeds fails until then)
#
# New inputs land in $(BUILD)/fuzz/corpus/<t>/ (the seeds are only read);
# a crash leaves $(BUILD)/fuzz/crash-<t>-*, to be fixed and added to the
# seeds as a regression input.

FUZZ_TARGETS := ws_rx segment alert_rules cli_feed url webhook_status proc_text elfsyms \
		pycode
FUZZ_SECONDS ?= 600
FUZZ_SMOKE_SECONDS ?= 10
FUZZ_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	       -fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link
# clang reads seccomp.h's SCMP_A0 as a partial initialiser.
FUZZ_WARNINGS := $(WARNINGS) -Wno-missing-field-initializers

.PHONY: fuzz fuzz-build fuzz-smoke fuzz-targets fuzz-seeds

fuzz-seeds: tests-build
	$(Q)ZERNEL_RECORD=1 $(TEST_ENV) $(call test_runner,shm) fuzz_seeds

ifeq ($(FUZZ_INNER),1)
# Inside the clang build: $(BUILD) is the fuzz folder.
FUZZ_EXPORTER := $(call obj,$(call not_main,$(EXPORTER_SRCS)) tests/exporter/prom_validate.c \
		   tests/exporter/strmap.c exporter/web/page.c) \
		   $(BUILD)/exporter/web_assets.o $(PROTO_OBJS) $(EXPORTER_LINK)
FUZZ_LINK_ws_rx          := $(call obj,exporter/feed/ws_rx.c) $(LIB_COMMON)
FUZZ_LINK_segment        := $(FUZZ_EXPORTER)
FUZZ_LINK_alert_rules    := $(FUZZ_EXPORTER)
FUZZ_LINK_webhook_status := $(FUZZ_EXPORTER)
FUZZ_LINK_url            := $(call obj,cli/url.c) $(FUZZ_EXPORTER)
FUZZ_LINK_cli_feed       := $(call obj,$(call not_main,$(CLI_SRCS))) $(CLI_LINK)
FUZZ_LINK_proc_text      := $(call obj,$(addprefix collector/identity/,cgroup_id.c cgroup_path.c) \
			    $(addprefix collector/proc/,proc_env.c proc_stat.c) \
			    collector/probes/discovery.c collector/gpu/gpu_visible.c) $(COLLECTOR_LINK)
FUZZ_LINK_elfsyms        := $(call obj,collector/parser/elfsyms.c collector/parser/pyelf.c) \
			    $(LIB_COMMON)
FUZZ_LINK_pycode         := $(call obj,$(addprefix collector/python/,pycode.c pyline.c pymem.c \
			    pyoffsets.c)) $(LIB_COMMON)
FUZZ_LIBS_ws_rx          :=
FUZZ_LIBS_segment        := $(EXPORTER_LIBS)
FUZZ_LIBS_alert_rules    := $(EXPORTER_LIBS)
FUZZ_LIBS_webhook_status := $(EXPORTER_LIBS)
FUZZ_LIBS_url            := $(EXPORTER_LIBS)
FUZZ_LIBS_cli_feed       := $(CLI_LIBS)
FUZZ_LIBS_proc_text      := $(COLLECTOR_LIBS)
FUZZ_LIBS_elfsyms        := -lelf -lz
FUZZ_LIBS_pycode         :=

define FUZZ_TARGET_RULE
$$(BUILD)/fuzz-$(1): $$(call obj,tests/fuzz/fuzz_$(1).c) $$(FUZZ_LINK_$(1))
	$$(call msg,FUZZLD,$$@)
	$$(Q)$$(CC) $$(CFLAGS) -fsanitize=fuzzer $$^ $$(FUZZ_LIBS_$(1)) -o $$@
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call FUZZ_TARGET_RULE,$(t))))

fuzz-targets: $(foreach t,$(FUZZ_TARGETS),$(BUILD)/fuzz-$(t))
else
FUZZ_DIR := $(BUILD)/fuzz

fuzz-build:
	$(Q)$(MAKE) --no-print-directory BUILD=$(FUZZ_DIR) FUZZ_INNER=1 CC=$(CLANG) \
		CFLAGS="$(FUZZ_CFLAGS)" WARNINGS="$(FUZZ_WARNINGS)" BPF_SKELS= fuzz-targets

# libFuzzer cuts inputs at 1 MiB unless told: a segment image is larger,
# and a cut one never passes the validator.
FUZZ_SEGMENT_FLAGS := -max_len=2097152

# Runs every target for $(1) seconds, niced; prints each one's figures.
fuzz_run = for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_DIR)/corpus/$$t || exit 1; \
		echo "fuzz: $$t for $(1) s"; \
		nice $(FUZZ_DIR)/fuzz-$$t -max_total_time=$(1) -print_final_stats=1 \
			$$(test $$t = segment && echo $(FUZZ_SEGMENT_FLAGS)) \
			-artifact_prefix=$(FUZZ_DIR)/crash-$$t- \
			$(FUZZ_DIR)/corpus/$$t tests/fuzz/corpus/$$t \
			> $(FUZZ_DIR)/$$t.log 2>&1; st=$$?; \
		grep -E '^\#[0-9]+[[:space:]]*DONE|stat::number_of_executed_units|stat::new_units_added' \
			$(FUZZ_DIR)/$$t.log | tr '\n' ' '; echo; \
		if [ $$st -ne 0 ]; then tail -40 $(FUZZ_DIR)/$$t.log; \
			echo "fuzz: $$t FAILED (exit $$st), see $(FUZZ_DIR)/$$t.log"; exit 1; fi; \
	done; echo "fuzz: $(words $(FUZZ_TARGETS)) passed, 0 failed"

fuzz: fuzz-build
	$(Q)$(call fuzz_run,$(FUZZ_SECONDS))

fuzz-smoke: fuzz-build
	$(Q)$(call fuzz_run,$(FUZZ_SMOKE_SECONDS))
endif

# SPDX-License-Identifier: BSD-2-Clause
#
# One non-recursive Makefile for Zernel.  Everything generated lands under
# $(BUILD).  `make V=1` shows the full commands.
#
#   make            build the binaries
#   make demo       build, then run the simulated collector + exporter
#   make test       install what the tests need (as root), build, run all tests
#   make deps       install the Debian packages the build needs (as root)
#   make install    PREFIX=/usr/local DESTDIR= : binaries and systemd units

BUILD    ?= build
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
UNITDIR  ?= $(PREFIX)/lib/systemd/system
DOCDIR   ?= $(PREFIX)/share/doc/zernel
DESTDIR  ?=
VERSION  := 0.1.0

CC       ?= cc
CLANG    ?= clang
BPFTOOL  ?= bpftool
PKG      ?= pkg-config

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' '$(1)' '$(2)';
endif

WARNINGS := -Wall -Wextra -Werror -Wshadow -Wpointer-arith \
	    -Wstrict-prototypes -Wmissing-prototypes
CFLAGS   ?= -O2 -g
CPPFLAGS += -I. -I$(BUILD) -D_GNU_SOURCE -DZERNEL_VERSION='"$(VERSION)"'
ALL_CFLAGS = $(CFLAGS) $(WARNINGS) -std=gnu11 -fno-strict-aliasing -MMD -MP

# SANITIZE=1 builds everything with AddressSanitizer and UBSan.
ifeq ($(SANITIZE),1)
CFLAGS   += -fsanitize=address,undefined -fno-omit-frame-pointer
LDFLAGS  += -fsanitize=address,undefined
endif

COLLECTOR_LIBS := -lbpf -lelf -lz -lcap -ldl -lpthread -lm
EXPORTER_LIBS  := -lh2o-evloop -lssl -lcrypto -lwebsockets -ljson-c \
		  -lseccomp -lcap -lpthread -lm
CLI_LIBS       := -lwebsockets -ljson-c -lpthread -lm
CHECK_LIBS     := $(shell $(PKG) --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm)

# ---------------------------------------------------------------------------
# Sources: every .c in a module folder belongs to that module; main.c is the
# program's entry point and stays out of the test runner.

COMMON_SRCS    := $(wildcard common/*.c)
SHM_SRCS       := $(wildcard shm/*.c)
COLLECTOR_SRCS := $(wildcard collector/*.c)
EXPORTER_SRCS  := $(wildcard exporter/*.c)
CLI_SRCS       := $(wildcard cli/*.c)
BPF_SRCS       := $(wildcard bpf/*.bpf.c)
# TEST_ONLY="hist latency" builds a runner with just those suites, and
# TEST_MODULES="collector" links just those modules: handy while another
# module is mid-change.
TEST_ONLY      ?=
TEST_MODULES   ?= collector exporter cli
CHECK_SRCS     := $(if $(TEST_ONLY),$(foreach s,$(TEST_ONLY),tests/check_$(s).c),$(wildcard tests/check_*.c))
TEST_SRCS      := $(CHECK_SRCS) $(wildcard tests/tu_*.c) tests/testutil.c tests/runner.c

obj = $(patsubst %.c,$(BUILD)/%.o,$(1))
not_main = $(filter-out %/main.c,$(1))

COMMON_OBJS    := $(call obj,$(COMMON_SRCS) $(SHM_SRCS))
COLLECTOR_OBJS := $(call obj,$(COLLECTOR_SRCS))
EXPORTER_OBJS  := $(call obj,$(EXPORTER_SRCS))
CLI_OBJS       := $(call obj,$(CLI_SRCS))
TEST_OBJS      := $(call obj,$(TEST_SRCS))

BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.skel.h,$(BPF_SRCS))
VMLINUX_H := $(BUILD)/bpf/vmlinux.h
BTF_FILE  ?= /sys/kernel/btf/vmlinux
ARCH      := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

COLLECTOR := $(BUILD)/zernel-collector
EXPORTER  := $(BUILD)/zernel-exporter
CLI       := $(BUILD)/zernel
TEST_BIN  := $(BUILD)/tests/zernel-tests
SUITES_H  := $(BUILD)/tests/suites.h

PROGRAMS := $(COLLECTOR) $(if $(EXPORTER_SRCS),$(EXPORTER)) $(if $(CLI_SRCS),$(CLI))

.PHONY: FORCE all deps test-deps bench-deps demo test check-unit test-asan install clean bench
.DEFAULT_GOAL := all
# Keep the BPF objects: the skeletons embed them, and rebuilding is slow.
.SECONDARY: $(BPF_OBJS)

all: $(PROGRAMS)

# ---------------------------------------------------------------------------
# Dependencies (Debian packages).  tools/deps.sh installs what is missing when
# run as root, and otherwise prints the exact apt-get line and fails.

BUILD_DEPS := make gcc clang llvm pkg-config libbpf-dev bpftool libelf-dev \
	      zlib1g-dev libcap-dev libseccomp-dev libh2o-evloop-dev libssl-dev \
	      libwebsockets-dev libjson-c-dev check
TEST_DEPS  := prometheus python3 python3-websockets python3-yaml \
	      python3-torch tmux chromium systemd procps util-linux binutils
BENCH_DEPS := wrk prometheus-node-exporter bpftrace

deps:
	$(Q)sh tools/deps.sh $(BUILD_DEPS)

test-deps:
	$(Q)sh tools/deps.sh $(BUILD_DEPS) $(TEST_DEPS)

bench-deps:
	$(Q)sh tools/deps.sh $(BUILD_DEPS) $(TEST_DEPS) $(BENCH_DEPS)

# ---------------------------------------------------------------------------
# BPF: vmlinux.h from the running kernel's BTF, then .bpf.o, then skeletons.

$(VMLINUX_H):
	$(Q)mkdir -p $(@D)
	$(Q)if [ ! -r $(BTF_FILE) ]; then \
		echo "error: $(BTF_FILE) is missing: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF=y is needed for the BPF probes)" >&2; \
		exit 1; fi
	$(call msg,BTF,$@)
	$(Q)$(BPFTOOL) btf dump file $(BTF_FILE) format c > $@.tmp && mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(VMLINUX_H) $(wildcard bpf/*.h)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD)/bpf -I. \
		-Wall -Werror -c $< -o $@
	$(Q)llvm-strip -g $@ 2>/dev/null || true

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@.tmp && mv $@.tmp $@

# ---------------------------------------------------------------------------
# C objects.  Collector objects wait for the skeletons they include.

$(BUILD)/%.o: %.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c $< -o $@

$(COLLECTOR_OBJS): | $(BPF_SKELS)
$(TEST_OBJS): | $(BPF_SKELS) $(SUITES_H)

$(COLLECTOR): $(COLLECTOR_OBJS) $(COMMON_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(COLLECTOR_LIBS) -o $@

$(EXPORTER): $(EXPORTER_OBJS) $(COMMON_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(EXPORTER_LIBS) -o $@

$(CLI): $(CLI_OBJS) $(COMMON_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(CLI_LIBS) -o $@

# ---------------------------------------------------------------------------
# Tests: one Check runner with a suite per tests/check_<module>.c; the suite
# list is generated so that adding a file is enough.

$(SUITES_H): $(CHECK_SRCS) FORCE
	$(Q)mkdir -p $(@D)
	$(Q)for f in $(sort $(CHECK_SRCS)); do \
		n=$$(basename $$f .c); echo "ZERNEL_SUITE($${n#check_})"; done > $@.tmp
	$(Q)cmp -s $@.tmp $@ 2>/dev/null && rm -f $@.tmp || mv $@.tmp $@

MODULE_SRCS = $(foreach m,$(TEST_MODULES),$(wildcard $(m)/*.c))
TEST_LINK_OBJS = $(TEST_OBJS) $(COMMON_OBJS) $(call obj,$(call not_main,$(MODULE_SRCS)))

$(TEST_BIN): $(TEST_LINK_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(sort $(COLLECTOR_LIBS) $(EXPORTER_LIBS) $(CLI_LIBS)) $(CHECK_LIBS) -o $@

# Helper programs and fake libraries the tests drive (see tests/README.md).
include $(wildcard tests/*.mk)
include exporter/web/web.mk

TEST_ARTIFACTS ?=
tests-build: $(PROGRAMS) $(TEST_BIN) $(TEST_ARTIFACTS)

# The README's test command.  Unit and integration suites in one run, then
# the parser and histogram suites again under AddressSanitizer.  Strict:
# whatever test-deps installs must be there, so nothing skips for want of it.
test: test-deps
	$(Q)$(MAKE) --no-print-directory tests-build
	$(Q)ZERNEL_TESTS_STRICT=1 ZERNEL_BUILD=$(abspath $(BUILD)) ZERNEL_SRC=$(CURDIR) $(TEST_BIN)
	$(Q)$(MAKE) --no-print-directory test-asan

ASAN_SUITES ?= hist latency shm_reader prom ws_rx
test-asan:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SANITIZE=1 $(BUILD)/asan/tests/zernel-tests
	$(Q)ZERNEL_TESTS_STRICT=1 ZERNEL_BUILD=$(abspath $(BUILD)) ZERNEL_SRC=$(CURDIR) \
		ASAN_OPTIONS=detect_leaks=1 $(BUILD)/asan/tests/zernel-tests $(ASAN_SUITES)

check-unit: tests-build
	$(Q)ZERNEL_BUILD=$(abspath $(BUILD)) ZERNEL_SRC=$(CURDIR) $(TEST_BIN) $(SUITES)

# ---------------------------------------------------------------------------

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) sh tools/demo.sh

# The units name /usr/local paths; they follow PREFIX when installed.
install: $(PROGRAMS)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(DOCDIR)
	install -m 0755 $(PROGRAMS) $(DESTDIR)$(BINDIR)/
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/
	for u in systemd/*.service; do \
		sed -e 's|/usr/local/bin|$(BINDIR)|g' -e 's|/usr/local/share/doc/zernel|$(DOCDIR)|g' \
			$$u > $(DESTDIR)$(UNITDIR)/$$(basename $$u) && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$$(basename $$u) || exit 1; \
	done

clean:
	rm -rf $(BUILD)

include $(wildcard bench/*.mk)

# Benchmarks print figures (no pass/fail); those comparing with other tools
# need wrk, prometheus-node-exporter and bpftrace.
bench-exporter bench-probes bench-sched: | bench-deps

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

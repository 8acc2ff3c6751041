# SPDX-License-Identifier: BSD-2-Clause
#
# One non-recursive Makefile for Zernel.  Everything generated lands under
# $(BUILD).  `make V=1` shows the full commands.
#
#   make            build the binaries
#   make demo       build, then run the simulated collector + exporter
#   make test       install what the tests need (as root), build, run all tests
#   make deps       install the Debian packages the build needs (as root)
#   make gpu-check  Zernel vs PyTorch and nvidia-smi, on a node with a GPU (as root)
#   make install    PREFIX=/usr/local DESTDIR= : binaries and systemd units
#   make deb        the Debian package, built by dpkg-buildpackage, lintian clean
#   make images     the exporter and collector images (podman), on Debian 12

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
EXPORTER_LIBS  := -lh2o-evloop -lssl -lcrypto -lwebsockets -ljson-c -lz \
		  -lseccomp -lcap -lpthread -lm
CLI_LIBS       := -lwebsockets -ljson-c -lpthread -lm
CHECK_LIBS     := $(shell $(PKG) --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm)

# ---------------------------------------------------------------------------
# Sources.  The link shows the layers: common/ is a leaf every program
# links; shm/ is two libraries, the reader (name rules, validator, reader)
# that every program may link and the writer that only the collector links;
# catalog/ names every metric family for the programs that print them.
# Every .c in a program folder belongs to that program; main.c is its entry
# point and stays out of its test runner.

COMMON_SRCS    := $(wildcard common/*.c)
SHM_WRITE_SRCS := shm/shm_writer.c
SHM_READ_SRCS  := $(filter-out $(SHM_WRITE_SRCS),$(wildcard shm/*.c))
CATALOG_SRCS   := $(wildcard catalog/*.c)
COLLECTOR_SRCS := $(wildcard collector/*.c)
EXPORTER_SRCS  := $(wildcard exporter/*.c)
CLI_SRCS       := $(wildcard cli/*.c)
BPF_SRCS       := $(wildcard bpf/*.bpf.c)

obj = $(patsubst %.c,$(BUILD)/%.o,$(1))
not_main = $(filter-out %/main.c,$(1))

LIB_COMMON     := $(BUILD)/lib/libzernel-common.a
LIB_SHM        := $(BUILD)/lib/libzernel-shm.a
LIB_SHM_WRITER := $(BUILD)/lib/libzernel-shm-writer.a
LIB_CATALOG    := $(BUILD)/lib/libzernel-catalog.a
LIBS           := $(LIB_COMMON) $(LIB_SHM) $(LIB_SHM_WRITER) $(if $(CATALOG_SRCS),$(LIB_CATALOG))

# Link order: a library before the ones it uses.
COLLECTOR_LINK := $(LIB_SHM_WRITER) $(LIB_SHM) $(LIB_COMMON)
EXPORTER_LINK  := $(if $(CATALOG_SRCS),$(LIB_CATALOG)) $(LIB_SHM) $(LIB_COMMON)
CLI_LINK       := $(if $(CATALOG_SRCS),$(LIB_CATALOG)) $(LIB_SHM) $(LIB_COMMON)

COLLECTOR_OBJS := $(call obj,$(COLLECTOR_SRCS))
EXPORTER_OBJS  := $(call obj,$(EXPORTER_SRCS))
CLI_OBJS       := $(call obj,$(CLI_SRCS))

BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.skel.h,$(BPF_SRCS))
VMLINUX_H := $(BUILD)/bpf/vmlinux.h
BTF_FILE  ?= /sys/kernel/btf/vmlinux
ARCH      := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

COLLECTOR := $(BUILD)/zernel-collector
EXPORTER  := $(BUILD)/zernel-exporter
CLI       := $(BUILD)/zernel

PROGRAMS := $(COLLECTOR) $(EXPORTER) $(CLI)

.PHONY: FORCE all deps test-deps bench-deps demo gpu-check test check-unit test-asan install clean \
	bench feed-contract deb images
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
TEST_DEPS  := prometheus python3 python3-websockets python3-yaml python3-jsonschema \
	      python3-torch tmux chromium systemd procps util-linux binutils \
	      libclang-rt-14-dev
# Packaging, images and the booted Debian 12 the deployment tests use.
DEPLOY_DEPS := debhelper dpkg-dev lintian help2man podman buildah runc debootstrap \
	       systemd-container
TEST_DEPS  += $(DEPLOY_DEPS)
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
		-Wall -Werror -MMD -MP -c $< -o $@
	$(Q)llvm-strip -g $@ 2>/dev/null || true

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@.tmp && mv $@.tmp $@

# ---------------------------------------------------------------------------
# C objects, libraries and programs.  Collector objects wait for the
# skeletons they include.

$(BUILD)/%.o: %.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c $< -o $@

$(COLLECTOR_OBJS): | $(BPF_SKELS)

$(LIB_COMMON): $(call obj,$(COMMON_SRCS))
$(LIB_SHM): $(call obj,$(SHM_READ_SRCS))
$(LIB_SHM_WRITER): $(call obj,$(SHM_WRITE_SRCS))
$(LIB_CATALOG): $(call obj,$(CATALOG_SRCS))
$(LIBS):
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(COLLECTOR): $(COLLECTOR_OBJS) $(COLLECTOR_LINK)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(COLLECTOR_LIBS) -o $@

$(EXPORTER): $(EXPORTER_OBJS) $(EXPORTER_LINK)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(EXPORTER_LIBS) -o $@

$(CLI): $(CLI_OBJS) $(CLI_LINK)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(CLI_LIBS) -o $@

# ---------------------------------------------------------------------------
# Tests: one Check runner per folder of tests/, linking only what its suites
# test: build/tests/zernel-tests-<folder>.  tests/<folder>/check_<name>.c
# exposes <name>_suite(); the suite list is generated, so adding a file is
# enough.  tests/support/ is linked into every runner.

TEST_DIRS        := common shm collector exporter cli deploy
TEST_SUPPORT_OBJS = $(call obj,$(filter-out tests/support/runner.c,$(wildcard tests/support/*.c)))

# What each runner links besides its own folder's objects.
TEST_LINK_common    := $(LIB_COMMON)
TEST_LINK_shm       := $(LIB_SHM_WRITER) $(LIB_SHM) $(LIB_COMMON)
TEST_LINK_collector  = $(call obj,$(call not_main,$(COLLECTOR_SRCS))) $(COLLECTOR_LINK)
TEST_LINK_exporter   = $(call obj,$(call not_main,$(EXPORTER_SRCS))) $(LIB_SHM_WRITER) $(EXPORTER_LINK)
TEST_LINK_cli        = $(call obj,$(call not_main,$(CLI_SRCS))) $(CLI_LINK)
TEST_LINK_deploy    := $(LIB_SHM_WRITER) $(LIB_SHM) $(LIB_COMMON)
TEST_LIBS_common    :=
TEST_LIBS_shm       :=
TEST_LIBS_collector := $(COLLECTOR_LIBS)
TEST_LIBS_exporter  := $(EXPORTER_LIBS)
TEST_LIBS_cli       := $(CLI_LIBS)
TEST_LIBS_deploy    :=

test_runner = $(BUILD)/tests/zernel-tests-$(1)
TEST_RUNNERS := $(foreach d,$(TEST_DIRS),$(call test_runner,$(d)))

define TEST_RUNNER_RULES
$(1)_TEST_SRCS := $$(wildcard tests/$(1)/*.c)
$(1)_CHECK_SRCS := $$(wildcard tests/$(1)/check_*.c)
$(1)_SUITES_H := $$(BUILD)/tests/$(1)/suites.h
$(1)_RUNNER_O := $$(BUILD)/tests/$(1)/runner.o

$$($(1)_SUITES_H): $$($(1)_CHECK_SRCS) FORCE
	$$(Q)mkdir -p $$(@D)
	$$(Q)for f in $$(sort $$($(1)_CHECK_SRCS)); do \
		n=$$$$(basename $$$$f .c); echo "ZERNEL_SUITE($$$${n#check_})"; done > $$@.tmp
	$$(Q)cmp -s $$@.tmp $$@ 2>/dev/null && rm -f $$@.tmp || mv $$@.tmp $$@

$$($(1)_RUNNER_O): tests/support/runner.c $$($(1)_SUITES_H)
	$$(call msg,CC,$$@)
	$$(Q)mkdir -p $$(@D)
	$$(Q)$$(CC) $$(CPPFLAGS) -I$$(BUILD)/tests/$(1) $$(ALL_CFLAGS) -c $$< -o $$@

$$(call obj,$$($(1)_TEST_SRCS)): | $$(BPF_SKELS)

$$(call test_runner,$(1)): $$($(1)_RUNNER_O) $$(call obj,$$($(1)_TEST_SRCS)) $$(TEST_SUPPORT_OBJS) $$(TEST_LINK_$(1))
	$$(call msg,LD,$$@)
	$$(Q)$$(CC) $$(LDFLAGS) $$^ $$(TEST_LIBS_$(1)) $$(CHECK_LIBS) -o $$@
endef
$(foreach d,$(TEST_DIRS),$(eval $(call TEST_RUNNER_RULES,$(d))))

# Helper programs and fake libraries the tests drive.
include $(wildcard tests/*.mk tests/*/*.mk)
include exporter/web/web.mk

TEST_ARTIFACTS ?=
tests-build: $(PROGRAMS) $(TEST_RUNNERS) $(TEST_ARTIFACTS)

TEST_ENV = ZERNEL_BUILD=$(abspath $(BUILD)) ZERNEL_SRC=$(CURDIR)

# Runs every runner with the arguments in $(1) (suite names, or none for
# all); a runner holding none of the named suites answers 77.  Fails when
# any runner fails, or when suites were named and none of them exists.
run_runners = ran=0; for r in $(2); do \
		$(3) $$r $(1); st=$$?; \
		if [ $$st -eq 0 ]; then ran=1; elif [ $$st -ne 77 ]; then exit $$st; fi; \
	done; [ $$ran -eq 1 ] || { echo "no test suite named: $(1)" >&2; exit 2; }

# The README's test command.  Every runner, then the parser and histogram
# suites again under AddressSanitizer, then every fuzz target for a short
# run over its corpus (tests/fuzz/fuzz.mk).  Strict: whatever test-deps installs
# must be there, so nothing skips for want of it.
test: test-deps
	$(Q)$(MAKE) --no-print-directory tests-build
	$(Q)$(call run_runners,,$(TEST_RUNNERS),ZERNEL_TESTS_STRICT=1 $(TEST_ENV))
	$(Q)$(MAKE) --no-print-directory test-asan
	$(Q)$(MAKE) --no-print-directory fuzz-smoke

ASAN_SUITES ?= hist latency shm_reader prom ws_rx utf8 url proc_env cgroup_id kube_pods \
	       gpu_visible gpu_map identity_fuzz
ASAN_DIRS   ?= common shm collector exporter
test-asan:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SANITIZE=1 \
		$(foreach d,$(ASAN_DIRS),$(BUILD)/asan/tests/zernel-tests-$(d))
	$(Q)$(call run_runners,$(ASAN_SUITES),$(foreach d,$(ASAN_DIRS),$(BUILD)/asan/tests/zernel-tests-$(d)),\
		ZERNEL_TESTS_STRICT=1 $(TEST_ENV) ASAN_OPTIONS=detect_leaks=1)

# `make check-unit SUITES="hist shm_reader"` runs chosen suites.
check-unit: tests-build
	$(Q)$(call run_runners,$(SUITES),$(TEST_RUNNERS),$(TEST_ENV))

# `make feed-contract` writes docs/feed.schema.json from the metric catalog
# and records tests/fixtures/feed-*.json from the live exporter again.
feed-contract: tests-build
	$(Q)ZERNEL_RECORD=1 $(TEST_ENV) $(call test_runner,exporter) feed_contract

# ---------------------------------------------------------------------------

# `make gpu-check` compares Zernel with PyTorch and nvidia-smi on a node with
# an NVIDIA GPU and CUDA PyTorch (tools/gpu_check.py; root).  Elsewhere it
# says it was not run and exits 77.
gpu-check: all
	$(Q)$(or $(GPU_CHECK_PYTHON),python3) tools/gpu_check.py --build $(BUILD)

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

# The Debian package, from a copy of the tree (tools/make-deb.sh); lintian
# must be clean, debian/zernel.lintian-overrides says why for each override.
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null)
DEB      := $(BUILD)/deb/zernel_$(VERSION)_$(DEB_ARCH).deb

deb: $(DEB)

$(DEB): $(PROGRAMS) $(wildcard debian/* debian/source/* systemd/* docs/*) README.md \
		Makefile tools/make-deb.sh
	$(call msg,DEB,$@)
	$(Q)sh tools/make-deb.sh $(BUILD)/deb

# Images from the binaries built here, on debian:12 or, with no image
# registry in reach, on a Debian 12 made with debootstrap and cached in
# $(BUILD)/debian-12 (tools/make-images.sh says which, and the sizes).
images: $(COLLECTOR) $(EXPORTER)
	$(Q)sh tools/make-images.sh $(BUILD)

include $(wildcard bench/*.mk)

# Benchmarks print figures (no pass/fail); those comparing with other tools
# need wrk, prometheus-node-exporter and bpftrace.
bench-exporter bench-probes bench-sched: | bench-deps

# Dependency files, only where objects are built: the Debian tree, the
# package's build copy and the image contexts under $(BUILD) hold folders
# and files named *.d that are no dependency files.
SRC_DIRS := common shm catalog collector exporter cli bpf tests bench
-include $(shell find $(addprefix $(BUILD)/,$(SRC_DIRS)) -name '*.d' -type f 2>/dev/null)

# SPDX-License-Identifier: BSD-2-Clause
#
# The long runs `make test` does at a smaller size.  Root (BPF).
#
#   make churn    200 library files probed while mapped and detached after,
#                 then SIGTERM with about 1,000 uprobe links (tests/collector/
#                 check_probes_churn.c)
#   make soak     the collector and exporter for SOAK_SECONDS (default an
#                 hour) under load and churn (tests/collector/check_soak.c);
#                 `make test` runs it for 3 minutes

SOAK_SECONDS ?= 3600

.PHONY: churn soak

churn: tests-build
	$(Q)ZERNEL_CHURN_FILES=200 ZERNEL_CHURN_SIGTERM_FILES=32 ZERNEL_TESTS_STRICT=1 $(TEST_ENV) \
		$(call test_runner,collector) probes_churn

soak: tests-build
	$(Q)ZERNEL_SOAK_SECONDS=$(SOAK_SECONDS) ZERNEL_TESTS_STRICT=1 $(TEST_ENV) \
		$(call test_runner,collector) soak

# SPDX-License-Identifier: BSD-2-Clause
#
# A stand-in for a CPython the collector does not support: an executable
# named python3.12 that exports _PyRuntime and a 3.12 Py_Version, the way
# the real one does (tests/workloads_py).

PY_UNSUPPORTED := $(BUILD)/tests/workloads_py/python3.12

TEST_ARTIFACTS += $(PY_UNSUPPORTED)

$(PY_UNSUPPORTED): tests/workloads_py/py_unsupported.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -rdynamic $< -o $@

# The Python-stack tests read `zernel explain --json`.
TEST_LIBS_collector += -ljson-c

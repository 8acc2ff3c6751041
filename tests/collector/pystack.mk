# SPDX-License-Identifier: BSD-2-Clause
#
# A stand-in for a CPython the collector does not support: an executable
# named python3.9 that exports _PyRuntime and PyCode_Type, the way the real
# one does (tests/workloads_py).

PY_UNSUPPORTED := $(BUILD)/tests/workloads_py/python3.9

TEST_ARTIFACTS += $(PY_UNSUPPORTED)

$(PY_UNSUPPORTED): tests/workloads_py/py_unsupported.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -rdynamic $< -o $@

# The Python-stack tests read `zernel explain --json`.
TEST_LIBS_collector += -ljson-c

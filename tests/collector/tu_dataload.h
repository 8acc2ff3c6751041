/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers of the PyTorch DataLoader tests: run tests/py/dataloader_wait.py
 * (a real DataLoader whose items take a known time to read, timing its
 * own next() calls) under a collector, and compare figures.  Root tests.
 */
#ifndef ZERNEL_TU_DATALOAD_H
#define ZERNEL_TU_DATALOAD_H

#include <stdint.h>

#include "tests/collector/tu_waits.h"

/*
 * Starts dataloader_wait.py args (NULL-terminated) watched by c, started
 * with flags (NULL-terminated; NULL: none), and lets it go.  w->pid is 0
 * when Debian's PyTorch is missing (skipped, said).
 */
void td_start(struct tp_collector *c, struct tw_work *w, const char *const *args,
	      const char *const *flags);

/*
 * Runs dataloader_wait.py args (NULL-terminated) watched by c, started
 * with flags (NULL-terminated; NULL: none), through its epoch ("done")
 * and a settled segment.  w->pid is 0 when Debian's PyTorch is missing
 * (skipped, said).
 */
void td_run(struct tp_collector *c, struct tw_work *w, const char *const *args,
	    const char *const *flags);

/* Asserts |got - want| <= rel * want (ns), naming what. */
void td_assert_near(const char *what, uint64_t got, uint64_t want, double rel);
/* The same, or within abs_ns where that is more. */
void td_assert_near_or(const char *what, uint64_t got, uint64_t want, double rel,
		       uint64_t abs_ns);

#endif /* ZERNEL_TU_DATALOAD_H */

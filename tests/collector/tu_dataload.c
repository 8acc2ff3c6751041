/* SPDX-License-Identifier: BSD-2-Clause */
#include <check.h>
#include <stdio.h>
#include <unistd.h>

#include "tests/collector/tu_dataload.h"
#include "tests/support/testutil.h"

void td_start(struct tp_collector *c, struct tw_work *w, const char *const *args,
	      const char *const *flags)
{
	if (access("/usr/bin/python3", X_OK) != 0 ||
	    tu_system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0) {
		tu_skip_missing("pytorch dataloader: /usr/bin/python3 with torch "
			"(python3-torch) is missing\n");
		w->pid = 0;
		return;
	}
	ck_assert_int_eq(tw_start_py(w, "dataloader_wait.py", args), 0);
	if (flags) {
		char pid[16];

		snprintf(pid, sizeof(pid), "%d", (int)w->pid);
		ck_assert_msg(tw_collector_watch_extra(c, pid, flags, w->pid) == 0,
			      "collector did not start; see %s", c->log);
	} else {
		ck_assert_msg(tw_collector_watch_pid(c, w->pid) == 0,
			      "collector did not start; see %s", c->log);
	}
	tw_go(w);
}

void td_run(struct tp_collector *c, struct tw_work *w, const char *const *args,
	    const char *const *flags)
{
	td_start(c, w, args, flags);
	if (w->pid == 0)
		return;
	ck_assert_int_eq(tw_wait_line(w, "done", 60000), 0);
	ck_assert_int_eq(tw_settle(c), 0);
}

void td_assert_near(const char *what, uint64_t got, uint64_t want, double rel)
{
	td_assert_near_or(what, got, want, rel, 0);
}

void td_assert_near_or(const char *what, uint64_t got, uint64_t want, double rel,
		       uint64_t abs_ns)
{
	double slack = (double)want * rel > (double)abs_ns ? (double)want * rel : (double)abs_ns;

	ck_assert_msg((double)got >= (double)want - slack && (double)got <= (double)want + slack,
		      "%s: got %llu ns, want %llu ns within %.0f%% or %.1f ms", what,
		      (unsigned long long)got, (unsigned long long)want, rel * 100, abs_ns / 1e6);
}

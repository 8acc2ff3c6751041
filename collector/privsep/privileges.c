// SPDX-License-Identifier: BSD-2-Clause
/*
 * Capability checks and drops for zernel-collector (see privileges.h for the
 * set and the reason for each).  Runs privileged, before and right after the
 * probes are attached; it never raises a capability, only removes them.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector/privsep/privileges.h"
#include "common/log.h"

struct priv_cap {
	cap_value_t cap;
	const char *name;
	int required;		/* at start */
	int keep;		/* after attaching */
	const char *without;	/* what does not work without it */
};

/* What finding the libraries of other users' processes needs, on any kernel. */
#define CAP_ROWS_INSPECT  \
	{ CAP_SYS_PTRACE, "CAP_SYS_PTRACE", 0, 1, \
	  "processes of other users cannot be inspected for CUDA/NCCL libraries" }, \
	{ CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH", 0, 1, \
	  "libraries under directories that are not world-searchable cannot be probed" }

/* Before Linux 5.8, CAP_SYS_ADMIN stands in for these two (priv_table()). */
static const struct priv_cap priv_modern[] = {
	{ CAP_BPF, "CAP_BPF", 1, 1, "the BPF programs cannot be loaded" },
	{ CAP_PERFMON, "CAP_PERFMON", 1, 1, "tracepoints and uprobes cannot be attached" },
	CAP_ROWS_INSPECT,
	{ CAP_SYS_RESOURCE, "CAP_SYS_RESOURCE", 0, 0,
	  "on kernels before 5.11 the BPF maps may exceed RLIMIT_MEMLOCK" },
};

static const struct priv_cap priv_legacy[] = {
	{ CAP_SYS_ADMIN, "CAP_SYS_ADMIN", 1, 1,
	  "this kernel predates CAP_BPF: the BPF programs cannot be loaded" },
	CAP_ROWS_INSPECT,
	{ CAP_SYS_RESOURCE, "CAP_SYS_RESOURCE", 0, 0,
	  "the BPF maps may exceed RLIMIT_MEMLOCK" },
};

static const struct priv_cap *priv_table(size_t *n)
{
	if (CAP_IS_SUPPORTED(CAP_BPF)) {
		*n = sizeof(priv_modern) / sizeof(priv_modern[0]);
		return priv_modern;
	}
	*n = sizeof(priv_legacy) / sizeof(priv_legacy[0]);
	return priv_legacy;
}

static void append(char *buf, size_t len, const char *word)
{
	size_t used;

	if (!buf || !len)
		return;
	used = strlen(buf);
	snprintf(buf + used, len - used, "%s%s", used ? " " : "", word);
}

#define UPROBE_TYPE_FILE "/sys/bus/event_source/devices/uprobe/type"

/*
 * May this process create a uprobe perf event with its current effective
 * set?  Asks the kernel about a probe on "/": the capability check comes
 * first (EACCES), then the path is refused as not a regular file (EINVAL),
 * so nothing is ever registered.  1 yes, 0 no, -errno when unknown.
 */
static int uprobe_allowed(void)
{
	struct perf_event_attr attr;
	FILE *f = fopen(UPROBE_TYPE_FILE, "r");
	unsigned int type;
	long fd;

	if (!f)
		return -errno;
	if (fscanf(f, "%u", &type) != 1) {
		fclose(f);
		return -EINVAL;
	}
	fclose(f);
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = type;
	attr.disabled = 1;
	attr.uprobe_path = (uint64_t)(uintptr_t)"/";
	fd = syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		close((int)fd);
		return 1;
	}
	if (errno == EACCES || errno == EPERM)
		return 0;
	return errno == EINVAL ? 1 : -errno;
}

/*
 * Does this kernel want CAP_SYS_ADMIN, not just CAP_PERFMON, for uprobes?
 * Since the 2025 fix "perf: Require CAP_SYS_ADMIN for uprobes" (mainline and
 * stable) it does.  Finds out by lowering the effective set for one call;
 * the permitted set is untouched, so the capability comes straight back.
 */
int privileges_uprobes_need_sys_admin(void)
{
	cap_value_t admin = CAP_SYS_ADMIN;
	cap_flag_value_t held = CAP_CLEAR;
	cap_t saved = cap_get_proc(), lowered = NULL;
	int r, ret;

	if (!saved)
		return -errno;
	cap_get_flag(saved, CAP_SYS_ADMIN, CAP_EFFECTIVE, &held);
	if (held != CAP_SET) {
		/* Without it: allowed means perfmon suffices. */
		r = uprobe_allowed();
		ret = r < 0 ? r : !r;
		goto cleanup;
	}
	lowered = cap_dup(saved);
	if (!lowered || cap_set_flag(lowered, CAP_EFFECTIVE, 1, &admin, CAP_CLEAR) < 0 ||
	    cap_set_proc(lowered) < 0) {
		ret = -errno;
		goto cleanup;
	}
	r = uprobe_allowed();
	if (cap_set_proc(saved) < 0) {
		ret = -errno;
		log_warn("capabilities: cannot restore the effective set");
		goto cleanup;
	}
	ret = r < 0 ? r : !r;
cleanup:
	cap_free(lowered);
	cap_free(saved);
	return ret;
}

int privileges_check(char *missing, size_t len, int perf_uprobes)
{
	const struct priv_cap *t;
	cap_t now;
	size_t n;
	int ret = 0;

	if (missing && len)
		missing[0] = '\0';
	now = cap_get_proc();
	if (!now) {
		log_warn("cannot read this process's capabilities");
		return -errno;
	}
	t = priv_table(&n);
	for (size_t i = 0; i < n; i++) {
		cap_flag_value_t v = CAP_CLEAR;

		if (cap_get_flag(now, t[i].cap, CAP_EFFECTIVE, &v) == 0 && v == CAP_SET)
			continue;
		append(missing, len, t[i].name);
		if (t[i].required) {
			log_error("missing capability %s: %s", t[i].name, t[i].without);
			ret = -EPERM;
		} else {
			log_warnx("missing capability %s: %s", t[i].name, t[i].without);
		}
	}
	cap_free(now);
	if (perf_uprobes && CAP_IS_SUPPORTED(CAP_BPF) && uprobe_allowed() == 0) {
		append(missing, len, "CAP_SYS_ADMIN");
		log_error("missing capability CAP_SYS_ADMIN: this kernel allows uprobes "
			  "(CUDA/NCCL probes) only with CAP_SYS_ADMIN");
		ret = -EPERM;
	}
	return ret;
}

/*
 * Keeps the capabilities of t marked keep (when held and keep_any), and
 * CAP_SYS_ADMIN where perf uprobes need it; drops the rest.
 */
static int drop_except(int keep_any, int perf_uprobes)
{
	cap_value_t keep[8];	/* the table's keep entries, plus CAP_SYS_ADMIN */
	int nkeep = 0, ret = 0;
	cap_t now = NULL, want = NULL;
	const struct priv_cap *t;
	size_t n;

	now = cap_get_proc();
	want = cap_init();
	if (!now || !want) {
		ret = -errno;
		log_warn("capabilities: cannot read the current set");
		goto cleanup;
	}
	t = priv_table(&n);
	for (size_t i = 0; keep_any && i < n; i++) {
		cap_flag_value_t v = CAP_CLEAR;

		if (t[i].keep && nkeep < (int)(sizeof(keep) / sizeof(keep[0])) &&
		    cap_get_flag(now, t[i].cap, CAP_PERMITTED, &v) == 0 && v == CAP_SET)
			keep[nkeep++] = t[i].cap;
	}
	/* Discovery attaches uprobes to libraries found later. */
	if (keep_any && perf_uprobes && CAP_IS_SUPPORTED(CAP_BPF) &&
	    privileges_uprobes_need_sys_admin() == 1) {
		cap_flag_value_t v = CAP_CLEAR;

		if (cap_get_flag(now, CAP_SYS_ADMIN, CAP_PERMITTED, &v) == 0 && v == CAP_SET) {
			keep[nkeep++] = CAP_SYS_ADMIN;
			log_info("keeping CAP_SYS_ADMIN: this kernel creates uprobes only with it, "
				 "and library discovery attaches uprobes while running");
		}
	}
	if (nkeep && (cap_set_flag(want, CAP_EFFECTIVE, nkeep, keep, CAP_SET) < 0 ||
		      cap_set_flag(want, CAP_PERMITTED, nkeep, keep, CAP_SET) < 0)) {
		ret = -errno;
		log_warn("capabilities: cannot build the kept set");
		goto cleanup;
	}

	/* Bounding set and ambient set first: the former needs CAP_SETPCAP. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) {
		ret = -errno;
		log_warn("capabilities: clearing the ambient set");
		goto cleanup;
	}
	{
		cap_flag_value_t setpcap = CAP_CLEAR;

		cap_get_flag(now, CAP_SETPCAP, CAP_EFFECTIVE, &setpcap);
		for (cap_value_t c = 0; setpcap == CAP_SET && c < cap_max_bits(); c++) {
			cap_flag_value_t kept = CAP_CLEAR;

			cap_get_flag(want, c, CAP_PERMITTED, &kept);
			if (kept == CAP_SET || prctl(PR_CAPBSET_READ, c, 0, 0, 0) != 1)
				continue;
			if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
				ret = -errno;
				log_warn("capabilities: dropping %d from the bounding set", (int)c);
				goto cleanup;
			}
		}
		/*
		 * Without CAP_SETPCAP (started non-root with file capabilities)
		 * the bounding set stays; NO_NEW_PRIVS below makes it inert.
		 */
	}
	if (cap_set_proc(want) < 0) {
		ret = -errno;
		log_warn("capabilities: cap_set_proc");
		goto cleanup;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		ret = -errno;
		log_warn("capabilities: PR_SET_NO_NEW_PRIVS");
		goto cleanup;
	}

	/* Verify: exactly the kept set, and nothing can come back. */
	cap_free(now);
	now = cap_get_proc();
	if (!now || cap_compare(now, want) != 0) {
		ret = -EPERM;
		log_error("capabilities: the process still holds more than it kept");
		goto cleanup;
	}
	{
		char *text = cap_to_text(want, NULL);

		log_info("capabilities kept: %s",
			 nkeep ? (text ? text : "?") : "none");
		cap_free(text);
	}
cleanup:
	cap_free(now);
	cap_free(want);
	return ret;
}

int privileges_drop_to_steady(int perf_uprobes)
{
	return drop_except(1, perf_uprobes);
}

int privileges_drop_all(void)
{
	return drop_except(0, 0);
}

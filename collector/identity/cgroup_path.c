/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Cgroup naming patterns; see cgroup_path.h.  A path is walked one
 * component at a time, outermost first, so that nesting (a kind node's
 * pods inside a docker container) ends on the innermost container.
 *
 * Kubernetes, systemd cgroup driver (kubelet --cgroup-driver=systemd).  The
 * pod UID is in the slice name with '_' for '-', since '-' is systemd's
 * nesting separator; Guaranteed pods have no QoS level:
 *   /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0d7cf2b4_5a3b_4c6e_9f1e_8b2a6c1d4e5f.slice/cri-containerd-3f1c...(64 hex).scope
 *   /kubepods.slice/kubepods-pod0d7cf2b4_5a3b_4c6e_9f1e_8b2a6c1d4e5f.slice/crio-3f1c...(64 hex).scope
 *   /kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid>.slice/docker-<id>.scope   (cri-dockerd)
 *   /kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod<uid>.slice/cri-containerd-<id>.scope
 *     (kubelet --cgroup-root=/kubelet, as on kind nodes)
 * Kubernetes, cgroupfs driver.  containerd and dockershim name the
 * container's cgroup by its bare id, so the runtime is not told:
 *   /kubepods/burstable/pod0d7cf2b4-5a3b-4c6e-9f1e-8b2a6c1d4e5f/3f1c...(64 hex)
 *   /kubepods/pod<uid>/<id>                      (Guaranteed)
 *   /kubepods/besteffort/pod<uid>/crio-<id>       (CRI-O)
 * Read from another cgroup namespace (a collector in a container of its
 * own, on cgroup v2), a path climbs out of the reader's cgroup and comes
 * down again, "kubepods" left above the climb:
 *   /../../besteffort/pod<uid>/<id>                (cgroupfs, another QoS level)
 *   /../../../pod<uid>/<id>                        (cgroupfs, the reader's level)
 *   /../../kubepods-besteffort.slice/kubepods-besteffort-pod<uid>.slice/...   (systemd)
 * Static pods (kubelet manifests) have a 32-hex-digit UID instead:
 *   /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5c1b7bc8a3fa1be5bd1a8f62d5b7b1d3.slice/...
 * CRI-O's monitor: crio-conmon-<id>.scope next to crio-<id>.scope.
 * Docker:  /system.slice/docker-<id>.scope (systemd driver), /docker/<id> (cgroupfs)
 * Podman:  /machine.slice/libpod-<id>.scope, and .../libpod-<id>.scope/container
 *          when the container runs its own init; /machine.slice/libpod-conmon-<id>.scope;
 *          rootless /user.slice/user-1000.slice/user@1000.service/user.slice/libpod-<id>.scope;
 *          cgroupfs manager /libpod_parent/libpod-<id>
 * Slurm, cgroup v1 (task/cgroup, one tree per controller; "slurm_<node>"
 * with several slurmd on one host):
 *   /slurm/uid_1000/job_4242/step_0/task_1
 *   /slurm_node07/uid_1000/job_4242/step_batch/task_0
 * Slurm, cgroup v2 (cgroup/v2 plugin, Slurm 22.05 and later):
 *   /system.slice/slurmstepd.scope/job_4242/step_0/user/task_1
 *   /system.slice/slurmstepd.scope/job_4242/step_extern/slurm
 * systemd, when none of the above:
 *   /system.slice/jupyter.service              unit jupyter.service, slice system.slice
 *   /user.slice/user-1000.slice/session-4.scope unit session-4.scope, slice user-1000.slice
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "collector/identity/cgroup_path.h"
#include "common/idtext.h"
#include "common/util.h"

struct walk {
	struct cgroup_id *out;
	int delegated;		/* below a user@UID.service */
	int kube_fs;		/* below /kubepods (cgroupfs driver) */
	int climbed;		/* the path climbed out of the reader's cgroup namespace */
	unsigned int since_climb;	/* components read since the last ".." */
	uint32_t fs_qos;	/* the QoS level seen below /kubepods */
	int slurm;		/* below /slurm or slurmstepd.scope */
	int after_docker;	/* the previous component was "docker" */
	int found;
};

struct comp {
	const char *s;
	size_t n;
};

static int is(struct comp c, const char *lit)
{
	return c.n == strlen(lit) && memcmp(c.s, lit, c.n) == 0;
}

/* Removes prefix (returns 1) when c starts with it. */
static int eat_prefix(struct comp *c, const char *prefix)
{
	size_t n = strlen(prefix);

	if (c->n < n || memcmp(c->s, prefix, n) != 0)
		return 0;
	c->s += n;
	c->n -= n;
	return 1;
}

static int eat_suffix(struct comp *c, const char *suffix)
{
	size_t n = strlen(suffix);

	if (c->n < n || memcmp(c->s + c->n - n, suffix, n) != 0)
		return 0;
	c->n -= n;
	return 1;
}

/* A whole decimal number of at most ten digits, up to UINT32_MAX. */
static int decimal(struct comp c, uint64_t *v)
{
	char buf[12];

	if (c.n == 0 || c.n > 10)
		return 0;
	for (size_t i = 0; i < c.n; i++)
		if (c.s[i] < '0' || c.s[i] > '9')
			return 0;
	memcpy(buf, c.s, c.n);
	buf[c.n] = '\0';
	return parse_u64(buf, 0, UINT32_MAX, v) == 0;
}

static void set_container(struct walk *w, struct comp id, uint32_t runtime, int conmon)
{
	memcpy(w->out->container_id, id.s, id.n);
	w->out->container_id[id.n] = '\0';
	w->out->runtime = runtime;
	if (conmon)
		w->out->flags |= CGROUP_ID_F_CONMON;
	else
		w->out->flags &= ~CGROUP_ID_F_CONMON;
	w->found = 1;
}

/* "<prefix><64 hex><suffix>" container cgroups; returns 1 when c is one. */
static int match_container(struct walk *w, struct comp c)
{
	static const struct {
		const char *prefix, *suffix;
		uint32_t runtime;
		int conmon;
	} forms[] = {
		/* Longer prefixes first: "crio-conmon-" before "crio-". */
		{ "cri-containerd-", ".scope", CGROUP_RUNTIME_CONTAINERD, 0 },
		{ "crio-conmon-", ".scope", CGROUP_RUNTIME_CRIO, 1 },
		{ "crio-", ".scope", CGROUP_RUNTIME_CRIO, 0 },
		{ "crio-", "", CGROUP_RUNTIME_CRIO, 0 },
		{ "docker-", ".scope", CGROUP_RUNTIME_DOCKER, 0 },
		{ "libpod-conmon-", ".scope", CGROUP_RUNTIME_PODMAN, 1 },
		{ "libpod-conmon-", "", CGROUP_RUNTIME_PODMAN, 1 },
		{ "libpod-", ".scope", CGROUP_RUNTIME_PODMAN, 0 },
		{ "libpod-", "", CGROUP_RUNTIME_PODMAN, 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(forms); i++) {
		struct comp id = c;

		if (eat_prefix(&id, forms[i].prefix) && eat_suffix(&id, forms[i].suffix) &&
		    idtext_is_container_id(id.s, id.n)) {
			set_container(w, id, forms[i].runtime, forms[i].conmon);
			return 1;
		}
	}
	if (idtext_is_container_id(c.s, c.n)) {
		set_container(w, c, w->after_docker ? CGROUP_RUNTIME_DOCKER : CGROUP_RUNTIME_UNKNOWN, 0);
		return 1;
	}
	return 0;
}

static void set_pod(struct walk *w, struct comp uid, char sep, uint32_t qos)
{
	char canon[IDTEXT_POD_UID_LEN];

	/* A malformed level keeps what an outer level found. */
	if (idtext_pod_uid(uid.s, uid.n, sep, canon) != 0)
		return;
	memcpy(w->out->pod_uid, canon, sizeof(canon));
	w->out->qos = qos;
	w->found = 1;
}

/* "-burstable" or "-besteffort" after "kubepods"; Guaranteed pods have none. */
static uint32_t eat_qos(struct comp *c)
{
	if (eat_prefix(c, "-burstable"))
		return CGROUP_QOS_BURSTABLE;
	if (eat_prefix(c, "-besteffort"))
		return CGROUP_QOS_BESTEFFORT;
	return CGROUP_QOS_GUARANTEED;
}

/* Kubernetes, both drivers; returns 1 when c is one of kubelet's cgroups. */
static int match_kube(struct walk *w, struct comp c)
{
	struct comp body = c;
	const char *k;
	uint32_t qos;

	/*
	 * cgroupfs, from another cgroup namespace: the level right after the
	 * climb is kubepods' own (a QoS level, or a pod beside the reader's).
	 * Anywhere else, bare "burstable" or "pod<uid>" names mean nothing.
	 */
	if (w->climbed && w->since_climb == 0 && !w->kube_fs) {
		if (is(c, "burstable") || is(c, "besteffort")) {
			w->kube_fs = 1;
			w->fs_qos = is(c, "burstable") ? CGROUP_QOS_BURSTABLE : CGROUP_QOS_BESTEFFORT;
			return 1;
		}
		if (eat_prefix(&body, "pod")) {
			set_pod(w, body, '-', CGROUP_QOS_UNKNOWN);
			w->kube_fs = w->out->pod_uid[0] != '\0';
			return w->kube_fs;
		}
	}
	/* cgroupfs: /kubepods[/burstable|/besteffort]/pod<uid> */
	if (is(c, "kubepods")) {
		w->kube_fs = 1;
		w->fs_qos = CGROUP_QOS_GUARANTEED;
		return 1;
	}
	if (w->kube_fs && is(c, "burstable")) {
		w->fs_qos = CGROUP_QOS_BURSTABLE;
		return 1;
	}
	if (w->kube_fs && is(c, "besteffort")) {
		w->fs_qos = CGROUP_QOS_BESTEFFORT;
		return 1;
	}
	if (w->kube_fs && eat_prefix(&body, "pod")) {
		set_pod(w, body, '-', w->fs_qos);
		return 1;
	}
	/* systemd: "[<prefix>-]kubepods[-<qos>][-pod<uid>].slice" */
	if (!eat_suffix(&body, ".slice"))
		return 0;
	k = memmem(body.s, body.n, "kubepods", 8);
	if (!k || (k != body.s && k[-1] != '-'))
		return 0;
	body.n -= (size_t)(k + 8 - body.s);
	body.s = k + 8;
	qos = eat_qos(&body);
	if (body.n == 0)
		return 1;	/* the root or a QoS slice */
	if (!eat_prefix(&body, "-pod"))
		return 0;
	set_pod(w, body, '_', qos);
	return 1;
}

/* Slurm's trees; returns 1 when c is one of its levels. */
static int match_slurm(struct walk *w, struct comp c)
{
	struct comp v = c;
	uint64_t n;

	if (is(c, "slurm") || is(c, "slurmstepd.scope") ||
	    (eat_prefix(&v, "slurm_") && v.n > 0)) {
		w->slurm = 1;
		return 1;
	}
	if (!w->slurm)
		return 0;
	v = c;
	if (eat_prefix(&v, "uid_") && decimal(v, &n)) {
		w->out->slurm_uid = (uint32_t)n;
		return 1;
	}
	v = c;
	if (eat_prefix(&v, "job_") && decimal(v, &n) && n > 0) {
		w->out->slurm_job_id = n;
		w->out->slurm_step[0] = '\0';
		w->found = 1;
		return 1;
	}
	v = c;
	if (w->out->slurm_job_id && eat_prefix(&v, "step_") &&
	    (decimal(v, &n) || is(v, "batch") || is(v, "extern") || is(v, "interactive"))) {
		memcpy(w->out->slurm_step, v.s, v.n);
		w->out->slurm_step[v.n] = '\0';
		return 1;
	}
	return 0;
}

static void keep_unit(char *dst, struct comp c)
{
	if (idtext_copy(dst, CGROUP_ID_UNIT_MAX, c.s, c.n) != 0)
		dst[0] = '\0';
}

static void match_component(struct walk *w, struct comp c)
{
	struct comp v = c;
	uint64_t uid;

	if (eat_prefix(&v, "user@") && eat_suffix(&v, ".service") && decimal(v, &uid))
		w->delegated = 1;
	/* Containers count even when delegated: rootless podman lives there. */
	if (!match_container(w, c) && !w->delegated && !match_kube(w, c))
		match_slurm(w, c);
	/* The innermost unit and slice, kept for when nothing above matched. */
	v = c;
	if (eat_suffix(&v, ".slice") && v.n > 0)
		keep_unit(w->out->slice, c);
	v = c;
	if ((eat_suffix(&v, ".service") || eat_suffix(&v, ".scope")) && v.n > 0)
		keep_unit(w->out->unit, c);
	w->after_docker = is(c, "docker");
}

int cgroup_path_match(const char *path, size_t len, struct cgroup_id *out)
{
	struct walk w = { .out = out };
	size_t i = 0;

	if (len == 0 || path[0] != '/')
		return -EINVAL;
	while (i < len) {
		struct comp c;

		while (i < len && path[i] == '/')
			i++;
		c.s = path + i;
		while (i < len && path[i] != '/')
			i++;
		c.n = (size_t)(path + i - c.s);
		if (c.n == 0)
			break;
		if (is(c, "..")) {
			/* Only a reader in another cgroup namespace sees "..". */
			out->flags |= CGROUP_ID_F_OUTSIDE_NS;
			w.climbed = 1;
			w.since_climb = 0;
			continue;
		}
		match_component(&w, c);
		w.since_climb++;
	}
	if (w.delegated)
		out->flags |= CGROUP_ID_F_DELEGATED;
	if (w.found) {
		out->unit[0] = '\0';
		out->slice[0] = '\0';
	} else {
		out->slurm_uid = CGROUP_ID_NO_UID;	/* a uid_N level without a job */
	}
	return w.found;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which container, Kubernetes pod, Slurm job or systemd unit a process
 * runs in, from the names of its cgroups in /proc/PID/cgroup (readable by
 * anyone; the collector calls it as root).  The names are the ones that
 * kubelet, the container runtimes, Slurm and systemd give the cgroups they
 * create; cgroup_path.c lists each pattern with a real example.
 *
 * On a hybrid host (cgroup v2 at /sys/fs/cgroup/unified next to v1
 * hierarchies) a process has one line per hierarchy.  The lines are tried
 * in this order: the v2 line ("0::/path"), the name=systemd line, then the
 * controller lines as listed; "/" is skipped, the first line whose path
 * names a container, pod or Slurm job gives the identity, and when none
 * does, the first line that is not "/" gives the systemd unit and slice.
 *
 * Cgroup names can be chosen by whoever may create cgroups, which systemd
 * grants to users inside their user@UID.service.  So nothing found below
 * such a unit is taken as a pod or a Slurm job (kubelet and slurmstepd do
 * not run there); containers are (rootless podman does), flagged
 * CGROUP_ID_F_DELEGATED.  From a cgroup namespace other than the host's
 * (a collector in a container on cgroup v2), paths start with "/.."
 * (CGROUP_ID_F_OUTSIDE_NS) and lose the levels above the reader's: pods
 * are still found (cgroup_path.c), their QoS level not always.
 */
#ifndef ZERNEL_CGROUP_ID_H
#define ZERNEL_CGROUP_ID_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/idtext.h"

/* Bytes of /proc/PID/cgroup read at most. */
#define CGROUP_ID_READ_MAX	(16 * 1024)
/* Longest cgroup path considered; a longer line is skipped. */
#define CGROUP_ID_PATH_MAX	1024
/* Longest systemd unit or slice name kept (systemd's own limit is 255). */
#define CGROUP_ID_UNIT_MAX	256
/* Longest Slurm step name kept: a number, "batch", "extern", "interactive". */
#define CGROUP_ID_STEP_MAX	16
#define CGROUP_ID_NO_UID	UINT32_MAX

/* Each runtime and qos class: its enum constant's tail and the name it is shown by. */
#define CGROUP_RUNTIME_LIST(X)							\
	X(NONE, "")		/* not in a container */			\
	X(UNKNOWN, "unknown")	/* a container id with no runtime in its name */ \
	X(CONTAINERD, "containerd")						\
	X(CRIO, "cri-o")							\
	X(DOCKER, "docker")							\
	X(PODMAN, "podman")

#define CGROUP_QOS_LIST(X)							\
	X(NONE, "")		/* not a Kubernetes pod */			\
	X(GUARANTEED, "guaranteed")						\
	X(BURSTABLE, "burstable")						\
	X(BESTEFFORT, "besteffort")						\
	X(UNKNOWN, "unknown")	/* a pod seen from another cgroup namespace */

#define CGROUP_RUNTIME_ENUM(tail, name)	CGROUP_RUNTIME_##tail,
#define CGROUP_QOS_ENUM(tail, name)	CGROUP_QOS_##tail,
enum cgroup_runtime { CGROUP_RUNTIME_LIST(CGROUP_RUNTIME_ENUM) };
enum cgroup_qos { CGROUP_QOS_LIST(CGROUP_QOS_ENUM) };
#undef CGROUP_RUNTIME_ENUM
#undef CGROUP_QOS_ENUM

enum cgroup_source {
	CGROUP_SOURCE_NONE = 0,		/* no usable line */
	CGROUP_SOURCE_V2,		/* "0::/path" */
	CGROUP_SOURCE_V1_SYSTEMD,	/* "N:name=systemd:/path" */
	CGROUP_SOURCE_V1_CONTROLLER,	/* "N:cpu,cpuacct:/path" and the like */
};

/* The cgroup is the runtime's monitor (conmon), not the container itself. */
#define CGROUP_ID_F_CONMON	0x01u
/* Below a user@UID.service: named by that user (see above); set for any path. */
#define CGROUP_ID_F_DELEGATED	0x02u
/* The path starts with "/..": read from another cgroup namespace. */
#define CGROUP_ID_F_OUTSIDE_NS	0x04u
/* The file is not what the kernel writes (bad line, hierarchy twice): nothing used. */
#define CGROUP_ID_F_MALFORMED	0x08u
/* A line's path was longer than CGROUP_ID_PATH_MAX and was skipped. */
#define CGROUP_ID_F_TOO_LONG	0x10u
/* The file was longer than CGROUP_ID_READ_MAX: the rest was not read. */
#define CGROUP_ID_F_TRUNCATED	0x20u
/* The chosen path is not printable UTF-8: matched, but not copied to path. */
#define CGROUP_ID_F_ODD_BYTES	0x40u

struct cgroup_id {
	uint32_t source;		/* enum cgroup_source of the line used */
	uint32_t runtime;		/* enum cgroup_runtime */
	uint32_t qos;			/* enum cgroup_qos */
	uint32_t flags;			/* CGROUP_ID_F_* */
	char container_id[IDTEXT_CONTAINER_ID_LEN];	/* 64 hex, or "" */
	char pod_uid[IDTEXT_POD_UID_LEN];		/* canonical UID, or "" */
	/* Slurm: job 0 means not a Slurm job. */
	uint64_t slurm_job_id;
	uint32_t slurm_uid;		/* in v1 paths only; CGROUP_ID_NO_UID otherwise */
	char slurm_step[CGROUP_ID_STEP_MAX];	/* "" for the job's own cgroup */
	/* Only when none of the above: the innermost systemd unit and slice. */
	char unit[CGROUP_ID_UNIT_MAX];
	char slice[CGROUP_ID_UNIT_MAX];
	char path[CGROUP_ID_PATH_MAX];	/* the path used, when printable */
};

/*
 * Reads /proc/<pid>/cgroup into out, in this process.  Returns 0 (out may still say
 * nothing: a process in the root cgroup), -ENOENT when the process is
 * gone, -EBADMSG when the file is malformed (nothing used), -ENODATA when
 * it holds no complete line, or another -errno.  out is always fully
 * written.
 */
int cgroup_id_read(pid_t pid, struct cgroup_id *out);
/* The same from any file laid out like /proc/PID/cgroup. */
int cgroup_id_read_file(const char *path, struct cgroup_id *out);
/* Parses text[0..len) as the contents of /proc/PID/cgroup. */
int cgroup_id_parse(const char *text, size_t len, struct cgroup_id *out);
/*
 * The collector parses no cgroup file itself: it opens /proc/<pid>/cgroup
 * (a descriptor, or -errno as cgroup_id_read returns them) and its parser
 * child reads it from the descriptor as cgroup_id_read does (parser.h).
 */
int cgroup_id_open(pid_t pid);
/* out as a read that found nothing leaves it. */
void cgroup_id_reset(struct cgroup_id *out);
int cgroup_id_read_fd(int fd, struct cgroup_id *out);
/*
 * 0 when id holds what a parse can: enumerations and flags it knows, and
 * each text terminated inside its field and of its kind (a container id,
 * a canonical pod UID, a Slurm step, printable UTF-8), whose bytes after
 * its end are then cleared; -EPROTO otherwise.  For an answer from
 * another process (the parser child).
 */
int cgroup_id_admit(struct cgroup_id *id);

/* "containerd", "cri-o", "docker", "podman", "unknown"; "" for NONE. */
const char *cgroup_runtime_name(uint32_t runtime);
/* "guaranteed", "burstable", "besteffort"; "" for NONE. */
const char *cgroup_qos_name(uint32_t qos);

#endif /* ZERNEL_CGROUP_ID_H */

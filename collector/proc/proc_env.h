/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Who a process says it is, from /proc/PID/environ: its torch.distributed,
 * MPI and Slurm coordinates and the GPU selection it was started with.
 * Reading another process's environment needs root (or ptrace rights).
 *
 * Only the variables listed below are kept, each in a named field; every
 * other variable's value is skipped unread (tokens, passwords, keys live
 * in environments) and the buffers that briefly held raw bytes are wiped.
 * Values are checked before they are stored: a value that fails its check
 * leaves its field empty and marked PROC_ENV_INVALID, never half-stored.
 *
 * /proc/PID/environ is the environment the process was exec'd with; a
 * later setenv() or os.environ[...] = ... in the process does not show.
 * Launchers (torchrun, srun, mpirun, the container runtimes) set these
 * variables before exec, which is why this source is enough.
 */
#ifndef ZERNEL_PROC_ENV_H
#define ZERNEL_PROC_ENV_H

#include <stdint.h>
#include <sys/types.h>

/* Bytes of an environment read at most; the rest is counted, not read. */
#define PROC_ENV_READ_MAX	(64 * 1024)
/* Longest id or address kept, plus NUL (a host name is up to 253). */
#define PROC_ENV_ID_MAX		256
/*
 * Longest device list kept, plus NUL: 56 MIG UUIDs ("MIG-" + 36, comma
 * separated; 8 GPUs of 7 instances each) fit.
 */
#define PROC_ENV_DEVICES_MAX	2304
/* Ranks, sizes and counts above this are refused as nonsense. */
#define PROC_ENV_RANK_MAX	((1 << 24) - 1)

enum proc_env_state {
	PROC_ENV_ABSENT = 0,	/* not in the environment */
	PROC_ENV_SET,		/* present and valid: value holds it */
	PROC_ENV_INVALID,	/* present but refused: value is zero or "" */
};

struct proc_env_num {
	uint32_t state;		/* enum proc_env_state */
	uint32_t pad;
	uint64_t value;
};

struct proc_env_id {
	uint32_t state;
	char value[PROC_ENV_ID_MAX];
};

struct proc_env_devices {
	uint32_t state;
	char value[PROC_ENV_DEVICES_MAX];
};

/* The environment was longer than PROC_ENV_READ_MAX: the rest was not read. */
#define PROC_ENV_F_TRUNCATED	0x1u
/* The last entry had no terminating NUL (cut by the limit or by an exit): dropped. */
#define PROC_ENV_F_CUT_ENTRY	0x2u
/* A kept name appeared twice with different values: marked invalid. */
#define PROC_ENV_F_CONFLICT	0x4u
/* Entries without '=' (a process that rewrote its environment area). */
#define PROC_ENV_F_MALFORMED	0x8u

struct proc_env {
	/* torch.distributed, as torchrun / torchelastic set them. */
	struct proc_env_num rank;
	struct proc_env_num local_rank;
	struct proc_env_num world_size;
	struct proc_env_num local_world_size;
	struct proc_env_num group_rank;
	struct proc_env_num restart_count;	/* TORCHELASTIC_RESTART_COUNT */
	struct proc_env_id run_id;		/* TORCHELASTIC_RUN_ID */
	/*
	 * The rendezvous address: with a plain launcher (mp.spawn, mpirun)
	 * it is the only key that the processes of one job share across
	 * nodes.  An address, not a credential.
	 */
	struct proc_env_id master_addr;
	struct proc_env_num master_port;
	/* Open MPI's launcher (mpirun), for jobs that take rank from MPI. */
	struct proc_env_num ompi_rank;		/* OMPI_COMM_WORLD_RANK */
	struct proc_env_num ompi_local_rank;	/* OMPI_COMM_WORLD_LOCAL_RANK */
	struct proc_env_num ompi_size;		/* OMPI_COMM_WORLD_SIZE */
	/* Slurm (srun / sbatch). */
	struct proc_env_num slurm_job_id;
	struct proc_env_num slurm_step_id;
	struct proc_env_num slurm_procid;
	struct proc_env_num slurm_localid;
	struct proc_env_num slurm_ntasks;
	struct proc_env_num slurm_array_job_id;
	struct proc_env_num slurm_array_task_id;
	/* The job's GPUs by their node-wide ids (gpu_base.c), the step's first. */
	struct proc_env_devices slurm_step_gpus;
	struct proc_env_devices slurm_job_gpus;
	/* GPU selection, parsed by gpu_visible. */
	struct proc_env_devices cuda_visible_devices;
	struct proc_env_devices nvidia_visible_devices;
	struct proc_env_id cuda_device_order;

	/* How the read went. */
	uint32_t bytes;		/* bytes read, at most PROC_ENV_READ_MAX */
	uint32_t entries;	/* complete entries seen */
	uint32_t refused;	/* kept names whose value failed its check */
	uint32_t flags;		/* PROC_ENV_F_* */
};

/*
 * Reads /proc/<pid>/environ into out, in this process.  Returns 0 (fields
 * as found in the complete entries read), -ENOENT when there is no such
 * process, -EACCES or -EPERM when its environment may not be read,
 * -ENODATA when it has none to read (a kernel thread, a zombie, a process
 * that exited before any byte was read, or one caught inside execve(),
 * which names the new program before it lays out the new environment:
 * read again later).  Nothing is kept then.  out is always fully written.
 * The collector parses no environment itself: it opens the file
 * (proc_env_open) and its parser child reads it (parser_environ).
 */
int proc_env_read(pid_t pid, struct proc_env *out);
/* The same from any file laid out like /proc/PID/environ. */
int proc_env_read_file(const char *path, struct proc_env *out);
/* /proc/<pid>/environ opened for reading: a descriptor, or -errno as above. */
int proc_env_open(pid_t pid);
/* The same from a descriptor open on such a file, read to its end (or the limit). */
int proc_env_read_fd(int fd, struct proc_env *out);
/*
 * Parses buf[0..len) as one whole environ image (NUL-separated
 * "NAME=value" entries); what the readers do after reading.
 */
void proc_env_parse(const char *buf, size_t len, struct proc_env *out);
/*
 * 0 when e is what the readers could have written: every field absent,
 * refused (zero past its state) or set to a value its check admits, in
 * the bytes the scanner stores, and counts that fit together; -EPROTO
 * otherwise.  For an answer from another process (the parser child).
 */
int proc_env_check(const struct proc_env *e);

#endif /* ZERNEL_PROC_ENV_H */

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The NVIDIA device nodes a process has open, from /proc/PID/fd: a second
 * source for which physical GPUs it uses.  Root (another process's file
 * descriptors).
 *
 * A node is known by its device number, not by its name: the driver's
 * character devices have major 195, /dev/nvidiaN is minor N, and 254 and
 * 255 are nvidia-modeset and nvidiactl.  A container's /dev may hold
 * anything under any name, but a descriptor on 195:N reaches GPU N.  The
 * minor number is the driver's ("Minor Number" in nvidia-smi -q, "Device
 * Minor" in /proc/driver/nvidia/gpus/<bus>/information); it need not equal
 * NVML's index.  Only descriptors whose path is under /dev are looked at
 * (see gpu_fds.c).
 */
#ifndef ZERNEL_GPU_FDS_H
#define ZERNEL_GPU_FDS_H

#include <stdint.h>
#include <sys/types.h>

#define GPU_FDS_NVIDIA_MAJOR	195
#define GPU_FDS_MINOR_CTL	255
#define GPU_FDS_MINOR_MODESET	254
/* File descriptors looked at per process at most. */
#define GPU_FDS_SCAN_MAX	16384

/* nvidiactl is open: the process has initialised the NVIDIA driver. */
#define GPU_FDS_F_CTL		0x1u
/* More descriptors than GPU_FDS_SCAN_MAX: the set may be incomplete. */
#define GPU_FDS_F_CUT		0x2u

struct gpu_fds {
	uint64_t minors[4];	/* bit N: some descriptor is on /dev/nvidiaN (N < 254) */
	uint32_t n;		/* distinct GPU nodes open */
	uint32_t flags;		/* GPU_FDS_F_* */
	uint32_t fds;		/* descriptors looked at */
	uint32_t pad;
};

/*
 * Fills out from /proc/<pid>/fd.  Returns 0, -ENOENT when the process is
 * gone, -EACCES when its descriptors may not be read.  out is always fully
 * written.
 */
int gpu_fds_read(pid_t pid, struct gpu_fds *out);
/* The same from any directory of descriptor links (tests). */
int gpu_fds_read_dir(const char *fd_dir, struct gpu_fds *out);
/* 1 when minor is among out's open GPU nodes. */
int gpu_fds_has(const struct gpu_fds *f, uint32_t minor);
/* The one open GPU node's minor when exactly one is open; -1 otherwise. */
int gpu_fds_single(const struct gpu_fds *f);

#endif /* ZERNEL_GPU_FDS_H */

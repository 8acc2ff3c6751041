/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The two device selection variables, parsed into ordered lists of
 * device references; gpu_map then says which physical GPU each CUDA
 * ordinal is.  Pure; no privilege.
 *
 * CUDA_VISIBLE_DEVICES (read by the CUDA driver in the process).  NVIDIA's
 * documented rules: a comma-separated sequence of GPU indices or UUIDs
 * ("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", or enough of its start,
 * "GPU-" included, to pick one GPU); only those devices are visible, in
 * the order of the sequence; if one of the indices is invalid, only the
 * devices before it are visible ("0,2,-1,1" shows devices 0 and 2).  MIG
 * instances are "MIG-<UUID>" (drivers R470 and later) or
 * "MIG-GPU-<GPU UUID>/<GPU instance>/<compute instance>" (R450).
 * Undocumented behaviour, as PyTorch models it after testing the driver
 * (torch.cuda._parse_visible_devices), is followed too: an index entry is
 * read like strtoul ("1gpu2" is 1, leading blanks skipped); the first
 * entry's form (index, "GPU-", "MIG-") is the list's form and an entry of
 * another form ends the list; a repeated entry hides every device.  An
 * empty value hides every device; unset shows all.
 *
 * NVIDIA_VISIBLE_DEVICES (read by the NVIDIA container runtime when the
 * container is created, to choose the device nodes it gets): "all",
 * "none" (no GPU, driver still mounted), "void" or empty (the runtime
 * does nothing), or a comma-separated list of NVML indices, GPU UUIDs,
 * MIG UUIDs and "<GPU index>:<MIG index>".  A value the runtime would
 * reject, and the volume-mount and CDI forms whose list is elsewhere,
 * are INVALID here: the device set is then unknown.
 */
#ifndef ZERNEL_GPU_VISIBLE_H
#define ZERNEL_GPU_VISIBLE_H

#include <stddef.h>
#include <stdint.h>

/* Entries kept; 8 GPUs of 7 MIG instances each fit. */
#define GPU_VISIBLE_MAX		64
/* Longest device reference kept ("MIG-GPU-<36>/<gi>/<ci>" is at most 66 bytes). */
#define GPU_REF_MAX		80

enum gpu_ref_kind {
	GPU_REF_INDEX = 1,	/* "3" */
	GPU_REF_UUID,		/* "GPU-8932f937-..." or a prefix of one, "GPU-" included */
	GPU_REF_MIG,		/* "MIG-<uuid>" or "MIG-GPU-<uuid>/<gi>/<ci>" */
	GPU_REF_MIG_INDEX,	/* "0:1", NVIDIA_VISIBLE_DEVICES only */
};

struct gpu_ref {
	uint32_t kind;		/* enum gpu_ref_kind */
	uint32_t index;		/* INDEX; the GPU's index for MIG_INDEX */
	uint32_t mig;		/* MIG_INDEX: the MIG device's index on that GPU */
	char id[GPU_REF_MAX];	/* UUID and MIG forms, as given */
};

enum gpu_list_mode {
	GPU_LIST_UNSET = 0,	/* the variable is not set */
	GPU_LIST_ALL,		/* NVIDIA_VISIBLE_DEVICES=all */
	GPU_LIST_NONE,		/* no device */
	GPU_LIST_VOID,		/* NVIDIA_VISIBLE_DEVICES=void or empty: the runtime did nothing */
	GPU_LIST_DEVICES,	/* ref[0..n) */
	GPU_LIST_INVALID,	/* not understood: the device set is unknown */
};

/* CUDA: an entry that is not a device reference ended the list there. */
#define GPU_VISIBLE_F_STOPPED	0x1u
/* CUDA: an entry repeated, which hides every device. */
#define GPU_VISIBLE_F_REPEATED	0x2u
/* CUDA: an entry of another form than the first ended the list. */
#define GPU_VISIBLE_F_MIXED	0x4u
/* More than GPU_VISIBLE_MAX entries: the list is cut, its length is a floor. */
#define GPU_VISIBLE_F_CUT	0x8u
/* CUDA: an index entry with trailing text read as its leading number. */
#define GPU_VISIBLE_F_LAX	0x10u

struct gpu_visible {
	uint32_t mode;		/* enum gpu_list_mode */
	uint32_t n;
	uint32_t flags;		/* GPU_VISIBLE_F_* */
	uint32_t pad;
	struct gpu_ref ref[GPU_VISIBLE_MAX];
};

/* Parses a CUDA_VISIBLE_DEVICES value (NULL: unset).  Returns 0. */
int gpu_visible_parse_cuda(const char *value, struct gpu_visible *out);
/* Parses an NVIDIA_VISIBLE_DEVICES value (NULL: unset).  Returns 0, or -EINVAL (mode INVALID). */
int gpu_visible_parse_nvidia(const char *value, struct gpu_visible *out);

/*
 * The parent GPU's UUID named inside a MIG reference of the R450 form
 * "MIG-GPU-<uuid>/<gi>/<ci>", copied into uuid[len]; -ENOENT for the
 * "MIG-<uuid>" form, which names the instance alone.
 */
int gpu_ref_mig_parent(const struct gpu_ref *r, char *uuid, size_t len);

#endif /* ZERNEL_GPU_VISIBLE_H */

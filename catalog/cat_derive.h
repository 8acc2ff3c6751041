/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Private to catalog/: the label texts and derived values the table in
 * catalog.c names (cat_derive.c).  Label texts fill buf and return 0, or
 * -ENOENT when the row has no such label; values take the row.
 */
#ifndef ZERNEL_CAT_DERIVE_H
#define ZERNEL_CAT_DERIVE_H

#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"

int cat_text_comm(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_watch_reason(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_mode(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_scenario(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_table(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_mem_key(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_mem_gpu(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_gpu_uuid(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_gpu_model(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_mem_uuid(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_mem_model(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_gpu_map(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_gpu_used_source(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_op(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_comm_origin(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_status(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_stale_reason(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_version(char *buf, size_t len, const struct cat_input *in, const void *row);
/* A process's identity (cat_ident.c): "unknown" where the collector found none. */
int cat_text_pod(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_namespace(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_container(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_container_id(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_runtime(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_pod_uid(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_slurm_job(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_slurm_step(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_rank(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_local_rank(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_world_size(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_group_rank(char *buf, size_t len, const struct cat_input *in, const void *row);
int cat_text_run_id(char *buf, size_t len, const struct cat_input *in, const void *row);
uint64_t cat_mem_from_start(const struct cat_input *in, const void *row);
int cat_mem_driver_known(const struct cat_input *in, const void *row);
uint64_t cat_gpu_used_for_oom(const struct cat_input *in, const void *row);
uint64_t cat_proc_gpu_bytes(const struct cat_input *in, const void *row);
uint64_t cat_procs_truncated(const struct cat_input *in, const void *row);
uint64_t cat_proc_stall_sites(const struct cat_input *in, const void *row);
uint64_t cat_collector_up(const struct cat_input *in, const void *row);
const struct shm_latency *cat_allreduce_duration(const struct cat_input *in, const void *row);

#endif /* ZERNEL_CAT_DERIVE_H */

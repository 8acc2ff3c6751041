/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The simulated job's identity (see sim_ident.h).  Unprivileged, pure.
 */
#include <stdio.h>
#include <string.h>

#include "collector/sim/sim_ident.h"

/* splitmix64: a well-mixed 64-bit value from any 64-bit input. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void sim_ident_build(uint64_t seed, uint32_t rank, uint32_t world_size,
		     struct shm_identity *out)
{
	uint64_t k = mix(seed ^ ((uint64_t)rank << 32));
	uint64_t c[4] = { mix(k + 1), mix(k + 2), mix(k + 3), mix(k + 4) };
	uint64_t u = mix(k + 5), v = mix(k + 6);

	memset(out, 0, sizeof(*out));
	out->runtime = SHM_ID_RUNTIME_CONTAINERD;
	snprintf(out->container_id, sizeof(out->container_id), "%016llx%016llx%016llx%016llx",
		 (unsigned long long)c[0], (unsigned long long)c[1],
		 (unsigned long long)c[2], (unsigned long long)c[3]);
	/* A version-4 UUID, as the API server makes them. */
	snprintf(out->pod_uid, sizeof(out->pod_uid), "%08llx-%04llx-4%03llx-%04llx-%012llx",
		 (unsigned long long)(u >> 32), (unsigned long long)((u >> 16) & 0xffff),
		 (unsigned long long)(u & 0xfff),
		 (unsigned long long)(0x8000 | ((v >> 48) & 0x3fff)),
		 (unsigned long long)(v & 0xffffffffffffull));
	snprintf(out->namespace, sizeof(out->namespace), "%s", SIM_NAMESPACE);
	snprintf(out->pod, sizeof(out->pod), "%s%u", SIM_POD_PREFIX, rank);
	snprintf(out->container, sizeof(out->container), "%s", SIM_CONTAINER);
	snprintf(out->run_id, sizeof(out->run_id), "%s", SIM_RUN_ID);
	out->rank = (int32_t)rank;
	out->local_rank = 0;
	out->world_size = (int32_t)world_size;
	out->group_rank = (int32_t)rank;
}

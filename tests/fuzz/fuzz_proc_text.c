/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: what the collector reads from a watched process's
 * /proc files, which any process (a hostile container included) shapes:
 * environ, cgroup, maps lines, CUDA_VISIBLE_DEVICES and
 * NVIDIA_VISIBLE_DEVICES values.  The first byte picks the parser.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/gpu/gpu_visible.h"
#include "collector/identity/cgroup_id.h"
#include "collector/identity/cgroup_path.h"
#include "collector/proc/proc_env.h"
#include "collector/probes/discovery.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct proc_env env;
	static struct cgroup_id cg;
	static struct gpu_visible vis;
	char *s, *file;

	if (size < 1)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 5) {
	case 0:
		proc_env_parse(s, size - 1, &env);
		break;
	case 1:
		cgroup_id_parse(s, size - 1, &cg);
		break;
	case 2:
		if (s[0] == '/')
			cgroup_path_match(s, strlen(s), &cg);
		break;
	case 3:
		if (discovery_maps_line(s, &file) && (!file || file[0] != '/'))
			abort();
		break;
	default:
		gpu_visible_parse_cuda(s, &vis);
		gpu_visible_parse_nvidia(s, &vis);
		break;
	}
	free(s);
	return 0;
}

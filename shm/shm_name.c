/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Checks segment names before they reach shm_open(3), which would otherwise
 * accept some odd ones (glibc strips extra leading slashes) or fail with
 * less helpful errors.
 */
#include <errno.h>
#include <string.h>

#include "shm/shm_name.h"

const char *shm_name_problem(const char *name)
{
	size_t len;

	if (!name || !*name)
		return "the segment name is empty";
	if (name[0] != '/')
		return "the segment name must start with '/'";
	len = strlen(name);
	if (len < 2)
		return "the segment name needs characters after '/'";
	if (len > SHM_NAME_MAX)
		return "the segment name is longer than 255 characters";
	if (strchr(name + 1, '/'))
		return "the segment name may contain no '/' after the first";
	if (strcmp(name, "/.") == 0 || strcmp(name, "/..") == 0)
		return "the segment name may not be \".\" or \"..\"";
	return NULL;
}

int shm_name_check(const char *name)
{
	return shm_name_problem(name) ? -EINVAL : 0;
}

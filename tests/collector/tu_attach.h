/* SPDX-License-Identifier: BSD-2-Clause */
/* The probe families' attachments, in attach order (collector/probes/families.c). */
#ifndef ZERNEL_TU_ATTACH_H
#define ZERNEL_TU_ATTACH_H

#include <stddef.h>

#include "collector/probes/probe_family.h"

static inline const struct probe_attach *tu_attach_rows(void)
{
	size_t n;

	return probe_attach_rows(&n);
}

static inline size_t tu_attach_count(void)
{
	size_t n;

	probe_attach_rows(&n);
	return n;
}

#endif /* ZERNEL_TU_ATTACH_H */

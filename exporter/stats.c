/* SPDX-License-Identifier: BSD-2-Clause */
/* The exporter's shared counters (see stats.h). */
#include "exporter/stats.h"

struct exporter_stats exporter_stats;

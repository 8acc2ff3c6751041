/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: the answer a webhook receiver sends back.  A status
 * is 100..599 or an error, and is read from the first line only.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "exporter/alerts/webhook_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int st = webhook_http_status((const char *)data, size);

	if (st != -EPROTO && (st < 100 || st > 599))
		abort();
	if (st > 0 && size > 12 && webhook_http_status((const char *)data, 12) != st)
		abort();
	return 0;
}

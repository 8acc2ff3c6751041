// SPDX-License-Identifier: BSD-2-Clause
/*
 * NCCL's commHash (see nccl_hash.h): the arithmetic NCCL 2.28 uses, so
 * the values match NCCL's own byte for byte.  No privilege.
 */
#include <string.h>

#include "collector/agg/nccl_hash.h"

/* eatHash: the size, then 8-byte little-endian chunks, the last one short. */
static void eat(uint64_t acc[2], const void *bytes, size_t size)
{
	const unsigned char *p = bytes;

	acc[0] ^= size;
	while (size != 0) {
		size_t chunk = size < 8 ? size : 8;
		uint64_t x = 0;

		acc[0] += acc[1];
		acc[1] ^= acc[0];
		acc[0] ^= acc[0] >> 31;
		acc[0] *= 0x9de62bbc8cef3ce3ull;
		acc[1] ^= acc[1] >> 32;
		acc[1] *= 0x485cd6311b599e79ull;
		memcpy(&x, p, chunk);	/* little-endian hosts, as NCCL's memcpy */
		p += chunk;
		size -= chunk;
		acc[0] += x;
	}
}

static uint64_t digest(const uint64_t acc[2])
{
	uint64_t h = acc[0];

	h ^= h >> 31;
	h *= 0xbac3bd562846de6bull;
	h += acc[1];
	h ^= h >> 32;
	h *= 0x995a187a14e7b445ull;
	return h;
}

uint64_t nccl_hash_bytes(const void *bytes, size_t size)
{
	uint64_t acc[2] = { 1, 1 };

	eat(acc, bytes, size);
	return digest(acc);
}

uint64_t nccl_hash_unique_id(const uint8_t id[NCCL_HASH_ID_BYTES])
{
	return nccl_hash_bytes(id, NCCL_HASH_ID_BYTES);
}

uint64_t nccl_hash_child(uint64_t parent_hash, int32_t split_count, int32_t color)
{
	uint64_t acc[2] = { 1, 1 };

	eat(acc, &parent_hash, sizeof(parent_hash));
	eat(acc, &split_count, sizeof(split_count));
	eat(acc, &color, sizeof(color));
	return digest(acc);
}

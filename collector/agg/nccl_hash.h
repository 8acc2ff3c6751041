/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NCCL's communicator hash (commHash), computed the way NCCL 2.28 does it
 * in src/init.cc with the eatHash/digestHash of src/include/bitops.h, so
 * that every rank on every node names a communicator with the value NCCL
 * prints as "commId 0x..." in its INFO log.  Pure functions; no privilege.
 *
 *   - ncclCommInitRank(Config), ncclCommInitRankScalable: getHash of the
 *     128 bytes of the ncclUniqueId (commIds[0] for the scalable init);
 *   - ncclCommSplit: the parent's hash, then the parent's split count
 *     (an int, incremented by every split of that parent, before it
 *     starts, NCCL_SPLIT_NOCOLOR included), then the colour (an int),
 *     each eaten separately;
 *   - ncclCommShrink: the same with split count 0 and colour 0 (NCCL does
 *     not count shrinks as splits and passes colour 0).
 */
#ifndef ZERNEL_NCCL_HASH_H
#define ZERNEL_NCCL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define NCCL_HASH_ID_BYTES	128u	/* NCCL_UNIQUE_ID_BYTES */

/* NCCL's getHash(bytes, size): eatHash into {1, 1}, then digestHash. */
uint64_t nccl_hash_bytes(const void *bytes, size_t size);

/* commHash of a communicator made from this ncclUniqueId. */
uint64_t nccl_hash_unique_id(const uint8_t id[NCCL_HASH_ID_BYTES]);

/* commHash of a split (or, split_count 0 and color 0, shrunk) child. */
uint64_t nccl_hash_child(uint64_t parent_hash, int32_t split_count, int32_t color);

#endif /* ZERNEL_NCCL_HASH_H */

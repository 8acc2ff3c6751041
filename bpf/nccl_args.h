/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/*
 * Where the NCCL probes find the arguments that the first five integer
 * registers do not hold, per architecture, at a function's entry: one
 * table, read by the BPF programs (collector/probes/nccl/nccl.bpf.c) and checked against
 * each calling convention's rules for every probed signature by a test
 * (tests/collector/check_nccl_args.c), so that a probe cannot read a
 * garbage stream or communicator on one architecture while it is right on
 * the other.
 *
 * x86-64 (System V): six integer registers (rdi, rsi, rdx, rcx, r8, r9),
 * then 8-byte stack slots above the return address.  A structure larger
 * than 16 bytes passed by value (ncclUniqueId, 128 bytes) is copied into
 * the stack slots and takes no register, so the integer arguments after
 * it move up one register.
 *
 * AArch64 (AAPCS64): eight integer registers (x0-x7), then the stack.  A
 * composite larger than 16 bytes is copied by the caller and passed as a
 * pointer to the copy, in the next integer register.
 *
 * A location is ZN_LOC(kind, n): integer register n (0-based), the value
 * in stack slot n, or the address of the bytes that start at stack slot n.
 */
#ifndef ZERNEL_BPF_NCCL_ARGS_H
#define ZERNEL_BPF_NCCL_ARGS_H

#define ZN_IN_REG		0u
#define ZN_ON_STACK		1u
#define ZN_STACK_BYTES		2u
#define ZN_LOC(kind, n)		((kind) << 8 | (n))
#define ZN_LOC_KIND(loc)	((loc) >> 8)
#define ZN_LOC_N(loc)		((loc) & 0xffu)

/*
 * Integer argument n (1-based) of a function whose arguments before it
 * are all integers or pointers: the sixth and seventh registers differ.
 */
#define ZN_X86_ARG_LOC(n)	((n) <= 6 ? ZN_LOC(ZN_IN_REG, (n) - 1) : ZN_LOC(ZN_ON_STACK, (n) - 7))
#define ZN_ARM64_ARG_LOC(n)	((n) <= 8 ? ZN_LOC(ZN_IN_REG, (n) - 1) : ZN_LOC(ZN_ON_STACK, (n) - 9))

/*
 * The calls the NCCL probes time, each probed by the program zn_<name>
 * with its operation, and the positions (1-based, as nccl.h declares them)
 * of its count, datatype, comm and stream.  The programs are made from
 * this list, and the test lays each position out by both conventions
 * against nccl.h's own declarations, so neither can drift alone.
 */
#define ZN_COLLECTIVES(X)							\
	X(all_reduce,	  SHM_NCCL_ALL_REDUCE,	    3, 4, 6, 7)		\
	X(all_gather,	  SHM_NCCL_ALL_GATHER,	    3, 4, 5, 6)		\
	X(reduce_scatter, SHM_NCCL_REDUCE_SCATTER, 3, 4, 6, 7)		\
	X(broadcast,	  SHM_NCCL_BROADCAST,	    3, 4, 6, 7)		\
	X(bcast,	  SHM_NCCL_BROADCAST,	    2, 3, 5, 6)		\
	X(reduce,	  SHM_NCCL_REDUCE,	    3, 4, 7, 8)		\
	X(send,		  SHM_NCCL_SEND,	    2, 3, 5, 6)		\
	X(recv,		  SHM_NCCL_RECV,	    2, 3, 5, 6)		\
	X(all_to_all,	  SHM_NCCL_ALL_TO_ALL,	    3, 4, 5, 6)		\
	X(gather,	  SHM_NCCL_GATHER,	    3, 4, 6, 7)		\
	X(scatter,	  SHM_NCCL_SCATTER,	    3, 4, 6, 7)

/* ncclCommInitRank(Config)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank[, config]) */
#define ZN_X86_INIT_ID		ZN_LOC(ZN_STACK_BYTES, 0)
#define ZN_X86_INIT_RANK	ZN_LOC(ZN_IN_REG, 2)
#define ZN_ARM64_INIT_ID	ZN_LOC(ZN_IN_REG, 2)
#define ZN_ARM64_INIT_RANK	ZN_LOC(ZN_IN_REG, 3)

#if defined(__TARGET_ARCH_x86)
#define ZN_ARG_LOC(n)		ZN_X86_ARG_LOC(n)
#define ZN_INIT_ID		ZN_X86_INIT_ID
#define ZN_INIT_RANK		ZN_X86_INIT_RANK
/* Stack slot 0 at entry: past the return address the call pushed. */
#define ZN_STACK_SLOT0		8
#elif defined(__TARGET_ARCH_arm64)
#define ZN_ARG_LOC(n)		ZN_ARM64_ARG_LOC(n)
#define ZN_INIT_ID		ZN_ARM64_INIT_ID
#define ZN_INIT_RANK		ZN_ARM64_INIT_RANK
/* The return address is in x30, not on the stack. */
#define ZN_STACK_SLOT0		0
#endif

#endif /* ZERNEL_BPF_NCCL_ARGS_H */

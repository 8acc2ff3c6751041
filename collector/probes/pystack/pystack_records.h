/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Python stack family's record: a stall and the frames it happened
 * in (sent by the scheduler's program and by this family's).
 * Part of the probe ABI (bpf/probe_abi.h, which numbers every record
 * type and includes this): BPF code and the collector read it through
 * that header.
 */
#ifndef ZERNEL_PYSTACK_RECORDS_H
#define ZERNEL_PYSTACK_RECORDS_H

#include "bpf/probe_abi.h"

/*
 * A watched Python thread stalled for ns (above the threshold): its
 * Python frames as the interpreter held them when the stall began,
 * innermost first.  A frame is its code object's address and the address
 * of its last instruction; the collector reads the code object (file,
 * function, line table) from the process, which still holds it.
 */
#define ZP_MAX_FRAMES		16

struct zev_py_frame {
	__u64 code;		/* PyCodeObject * */
	__u64 instr;		/* _Py_CODEUNIT *: the instruction being run */
};

struct zev_py_stall {
	struct zev_hdr hdr;	/* ts_ns: when the stall ended */
	__u32 state;		/* enum shm_stall_state */
	__u32 nframes;		/* frames[] in use; 0: no Python frame */
	__u64 ns;		/* how long it lasted */
	__s32 native_stack;	/* id of the user stack (a hash of its return addresses); < 0: none */
	__u32 truncated;	/* 1: the stack has more than ZP_MAX_FRAMES */
	/* Stalls of this process not sent since the last one (rate bound). */
	__u32 skipped;
	__u32 pad;
	__u64 skipped_ns;
	/*
	 * A synchronisation that spun: from its entry to its return, the
	 * stalls off the CPU inside it included (ns is its time on the CPU);
	 * 0 for every other stall, which spans ns.
	 */
	__u64 span_ns;
	struct zev_py_frame frames[ZP_MAX_FRAMES];
};

_Static_assert(sizeof(struct zev_py_stall) == 72 + 16 * ZP_MAX_FRAMES, "zev_py_stall size");

#endif /* ZERNEL_PYSTACK_RECORDS_H */

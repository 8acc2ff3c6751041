/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The states training threads are still in, read just before each publish
 * through the scheduler probe's task iterator (zs_open_states,
 * collector/probes/sched/sched.bpf.c).  A state is otherwise counted when it ends: a thread
 * blocked on its DataLoader for a minute would add nothing to any counter
 * for that minute, and a window's states would not add up to its wall
 * time.  The aggregation shows each process's states as what has ended
 * plus what is open, never less than it showed before (agg_open_state).
 * Root-only (BPF).
 */
#ifndef ZERNEL_OPEN_STATES_H
#define ZERNEL_OPEN_STATES_H

#include "collector/agg/agg.h"

struct bpf_object;
struct open_states;

/*
 * The iterator of the scheduler's object sched, or NULL with errno set
 * (ENOENT: the program is not loaded).
 */
struct open_states *open_states_new(struct bpf_object *sched);

/* Hands the open states of this moment to agg; 0 or -errno. */
int open_states_read(struct open_states *o, struct agg *agg);

void open_states_free(struct open_states *o);

#endif /* ZERNEL_OPEN_STATES_H */

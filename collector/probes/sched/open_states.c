/* SPDX-License-Identifier: BSD-2-Clause */
/* Open thread states, from a task iterator; see open_states.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/probe_abi.h"
#include "collector/probes/sched/open_states.h"

struct open_states {
	struct bpf_link *link;
};

struct open_states *open_states_new(struct bpf_object *sched)
{
	struct bpf_program *prog = bpf_object__find_program_by_name(sched, "zs_open_states");
	struct open_states *o;

	if (!prog || !bpf_program__autoload(prog)) {
		errno = ENOENT;
		return NULL;
	}
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->link = bpf_program__attach_iter(prog, NULL);
	if (!o->link) {
		int err = errno;

		free(o);
		errno = err;
		return NULL;
	}
	return o;
}

int open_states_read(struct open_states *o, struct agg *agg)
{
	/* The kernel's seq_file may end a read inside a record: keep the rest. */
	struct zs_open_state buf[64];
	size_t have = 0;
	int fd, err = 0;

	agg_open_states_clear(agg);
	if (!o)
		return 0;
	fd = bpf_iter_create(bpf_link__fd(o->link));
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n = read(fd, (char *)buf + have, sizeof(buf) - have);
		size_t whole;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : 0;
			break;
		}
		have += (size_t)n;
		whole = have / sizeof(buf[0]);
		for (size_t i = 0; i < whole; i++) {
			uint64_t ns[SHM_STATE_COUNT];

			for (unsigned int st = 0; st < SHM_STATE_COUNT; st++)
				ns[st] = buf[i].ns[st];
			agg_open_state(agg, buf[i].tgid, ns);
		}
		have -= whole * sizeof(buf[0]);
		memmove(buf, buf + whole, have);
	}
	close(fd);
	return err;
}

void open_states_free(struct open_states *o)
{
	if (!o)
		return;
	bpf_link__destroy(o->link);
	free(o);
}

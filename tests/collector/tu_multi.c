/* SPDX-License-Identifier: BSD-2-Clause */
/* uprobe_multi links in tests; see tu_multi.h.  Root. */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include <linux/bpf.h>

#include <bpf/bpf.h>

#include "collector/probes/uprobe_multi.h"
#include "tests/collector/tu_multi.h"

int tu_multi_prog(int attach_type)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = (enum bpf_attach_type)attach_type);

	return bpf_prog_load(BPF_PROG_TYPE_KPROBE, "zt_multi", "GPL", insns, 2, &o);
}

int tu_multi_try(void)
{
	static const uint64_t offset = 0x1000;
	int at = uprobe_multi_attach_type(), prog, fd;

	if (at < 0)
		return ENOTSUP;
	prog = tu_multi_prog(at);
	if (prog < 0)
		return errno;
	fd = uprobe_multi_link(prog, at, "/nonexistent/zernel-multi", &offset, 1, 0);
	close(prog);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return -fd;
}

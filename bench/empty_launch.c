// SPDX-License-Identifier: BSD-2-Clause
/*
 * The function `make bench-probes` calls: cuLaunchKernel by name, with an
 * empty body, so that a call costs what calling costs and every nanosecond
 * above that is the probe's.  Built as bench-cuda.so, a name the
 * collector's library discovery does not match: only the collector the
 * benchmark starts, told of it with --lib, probes it.
 *
 * On x86-64 it opens with `push %rbp`, as compiled code with frame
 * pointers (and most of libcuda) does: the kernel emulates a push at a
 * uprobe, where another first instruction would be stepped over out of
 * line, a second trap that costs ten times the probe itself on a virtual
 * machine and buries it in noise.  A compiler drops that push from an
 * empty function, hence the assembly.
 */
#if defined(__x86_64__)
__asm__(".text\n"
	".globl cuLaunchKernel\n"
	".type cuLaunchKernel, @function\n"
	"cuLaunchKernel:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	xor %eax, %eax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size cuLaunchKernel, . - cuLaunchKernel\n");
#else
int cuLaunchKernel(void *f, unsigned grid_x, unsigned grid_y, unsigned grid_z,
		   unsigned block_x, unsigned block_y, unsigned block_z,
		   unsigned shared_bytes, void *stream, void **params, void **extra);

int cuLaunchKernel(void *f, unsigned grid_x, unsigned grid_y, unsigned grid_z,
		   unsigned block_x, unsigned block_y, unsigned block_z,
		   unsigned shared_bytes, void *stream, void **params, void **extra)
{
	(void)f;
	(void)grid_x;
	(void)grid_y;
	(void)grid_z;
	(void)block_x;
	(void)block_y;
	(void)block_z;
	(void)shared_bytes;
	(void)stream;
	(void)params;
	(void)extra;
	return 0;
}
#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* uprobe_multi links in tests: a program to link, and whether the kernel can. */
#ifndef ZERNEL_TU_MULTI_H
#define ZERNEL_TU_MULTI_H

/* A KPROBE program that returns 0, loaded for uprobe_multi links; fd or -1 (errno). */
int tu_multi_prog(int attach_type);

/*
 * A uprobe_multi link of such a program on a file that does not exist:
 * ENOENT when the kernel lets this process make uprobe_multi links, the
 * errno of the refusal otherwise (of the program's load, or the link's).
 */
int tu_multi_try(void);

#endif /* ZERNEL_TU_MULTI_H */

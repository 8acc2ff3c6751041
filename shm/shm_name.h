/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Segment names (--shm NAME), private to shm/: the rule the writer and the
 * reader both apply before handing a name to shm_open(3).
 */
#ifndef ZERNEL_SHM_NAME_H
#define ZERNEL_SHM_NAME_H

#include <stddef.h>

/* Longest accepted name, leading '/' included (NAME_MAX for the file). */
#define SHM_NAME_MAX	255u

/*
 * A name is '/' followed by 1..254 characters, none of them '/' or NUL,
 * and not "." or "..".  shm_name_check returns 0 or -EINVAL;
 * shm_name_problem returns NULL or a sentence saying which rule is broken.
 */
int shm_name_check(const char *name);
const char *shm_name_problem(const char *name);

#endif /* ZERNEL_SHM_NAME_H */

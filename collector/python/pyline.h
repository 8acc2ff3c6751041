/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Source lines from a CPython code object's location table, as
 * PyCode_Addr2Line computes them.  The table comes from another process:
 * every read is bounded and a malformed table gives "no line", never a
 * read past its end.  Collector-internal, no privilege.
 */
#ifndef ZERNEL_PYLINE_H
#define ZERNEL_PYLINE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The line of the instruction at byte offset addr in a 3.11 location
 * table (co_linetable) of a code object starting at firstlineno; -1 when
 * the table gives it no line or is malformed.
 */
int pyline_311(const uint8_t *tab, size_t len, int firstlineno, uint64_t addr);

/* The same from a 3.10 line table (co_linetable of 3.10). */
int pyline_310(const uint8_t *tab, size_t len, int firstlineno, uint64_t addr);

#endif /* ZERNEL_PYLINE_H */

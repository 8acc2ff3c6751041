/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Looks like CPython 3.12 to the collector: built as "python3.12", it
 * exports _PyRuntime, PyCode_Type and Py_Version (3.12.1 final) as the
 * real interpreter does, and blocks in nanosleep like a script would.
 * Prints "ready pid=N", then sleeps until killed.
 */
#include <stdio.h>
#include <unistd.h>

/* The symbols the collector looks for; their contents are never walked. */
const unsigned long Py_Version = 0x030c01f0ul;
char _PyRuntime[4096] = { 1 };
char PyCode_Type[512] = { 1 };

int main(void)
{
	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		usleep(20000);
	return 0;
}

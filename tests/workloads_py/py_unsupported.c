/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Looks like CPython 3.9 to the collector: built as "python3.9", it
 * exports _PyRuntime and PyCode_Type as the real interpreter does, and no
 * Py_Version (3.11 added it), so its version comes from its name; it
 * blocks in nanosleep like a script would.
 * Prints "ready pid=N", then sleeps until killed.
 */
#include <stdio.h>
#include <unistd.h>

/* The symbols the collector looks for; their contents are never walked. */
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

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The parser child (collector/parser/parser.h): the same answers as the
 * parsers give in-process, from a child with no capability, NO_NEW_PRIVS
 * and its seccomp filter (read from the kernel, /proc/PID/status); the
 * filter kills a child that opens a file, maps executable memory or
 * starts a process; a malformed file is an error the child survives; a
 * child that dies in the middle of a file is restarted and counted; a
 * process's environment is parsed there too, malformed or not, with the
 * same answer as in-process and no secret in it; so is a Python code
 * object, hostile or not; and the real collector parses the libraries it
 * probes in such a child.
 * Root (to have capabilities to drop), except where said.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/identity/kube_names.h"
#include "collector/parser/elfsyms.h"
#include "collector/parser/parser.h"
#include "collector/parser/parser_proto.h"
#include "collector/parser/pyelf.h"
#include "collector/proc/proc_env.h"
#include "collector/python/pycode.h"
#include "tests/collector/tu_identity.h"
#include "tests/collector/tu_probes.h"
#include "tests/support/testutil.h"

#define LIBC		"/lib/x86_64-linux-gnu/libc.so.6"
#define PYTHON		"/usr/bin/python3.11"

static const char *const libc_names[] = { "malloc", "free", "pthread_mutex_lock", "read",
					  "no_such_function_here" };

/* The libc this test runs on, found through its own mappings. */
static void own_libc(char *path, size_t len)
{
	char *maps = tu_read_file("/proc/self/maps", NULL), *line, *save = NULL;

	ck_assert_ptr_nonnull(maps);
	path[0] = '\0';
	for (line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *file = strchr(line, '/');

		if (file && strstr(file, "/libc.so.6")) {
			snprintf(path, len, "%s", file);
			break;
		}
	}
	free(maps);
	if (!path[0])
		snprintf(path, len, "%s", LIBC);
}

/* A status field's value, as text after its tab; "" when absent. */
static void status_field(pid_t pid, const char *key, char *out, size_t len)
{
	char path[64], *s, *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	s = tu_read_file(path, NULL);
	out[0] = '\0';
	if (s && (p = strstr(s, key)) && (p == s || p[-1] == '\n')) {
		p += strlen(key);
		while (*p == '\t' || *p == ' ')
			p++;
		snprintf(out, len, "%.*s", (int)strcspn(p, "\n"), p);
	}
	free(s);
}

/* When pid started (clock ticks since boot, /proc/PID/stat): tells a reused pid apart. */
static unsigned long long start_time(pid_t pid)
{
	char path[64], *s, *p;
	unsigned long long t = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	s = tu_read_file(path, NULL);
	p = s ? strrchr(s, ')') : NULL;
	/* Past the name: state is field 3, starttime field 22. */
	for (int field = 2; p && *p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p)
		t = strtoull(p + 1, NULL, 10);
	free(s);
	return t;
}

/* The child now serving is not first, which started at first_start: a pid may come round again. */
static void assert_new_child(pid_t first, unsigned long long first_start)
{
	pid_t now = parser_pid();

	ck_assert_int_gt(now, 0);
	ck_assert_msg(now != first || start_time(now) != first_start,
		      "child %d still serves (started at %llu)", (int)first, first_start);
}

/* The child's credentials, as the kernel reports them. */
static void assert_sandboxed(pid_t pid)
{
	static const char *const zero_sets[] = { "CapInh:", "CapPrm:", "CapEff:", "CapAmb:" };
	char v[128];

	for (size_t i = 0; i < sizeof(zero_sets) / sizeof(zero_sets[0]); i++) {
		status_field(pid, zero_sets[i], v, sizeof(v));
		ck_assert_msg(strcmp(v, "0000000000000000") == 0, "child %d %s %s", (int)pid,
			      zero_sets[i], v);
	}
	status_field(pid, "NoNewPrivs:", v, sizeof(v));
	ck_assert_str_eq(v, "1");
	status_field(pid, "Seccomp:", v, sizeof(v));
	ck_assert_str_eq(v, "2");		/* a filter */
	status_field(pid, "Name:", v, sizeof(v));
	ck_assert_str_eq(v, "zernel-parser");
}

START_TEST(parser_child_answers_as_the_parsers_do_with_nothing_to_wield)
{
	uint64_t want[5], got[5];
	struct pyelf_syms py_want, py_got;
	char libc[512], v[128];
	int fd, n;
	pid_t pid;

	if (tu_skip_unless_root("parser_child_answers_as_the_parsers_do_with_nothing_to_wield"))
		return;
	own_libc(libc, sizeof(libc));
	ck_assert_int_eq(elfsyms_resolve(libc, libc_names, 5, want), 4);
	fd = open(libc, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	n = parser_elf_functions(fd, libc_names, 5, got);
	ck_assert_int_eq(n, 4);
	ck_assert_mem_eq(got, want, sizeof(want));
	ck_assert_uint_eq(got[4], 0);
	close(fd);

	fd = open(PYTHON, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pyelf_symbols(fd, &py_want), 0);
	ck_assert_int_eq(parser_elf_python(fd, &py_got), 0);
	close(fd);
	ck_assert_mem_eq(&py_got, &py_want, sizeof(py_want));
	ck_assert_uint_ne(py_got.runtime, 0);

	pid = parser_pid();
	ck_assert_int_gt(pid, 0);
	assert_sandboxed(pid);
	/* The bounding set goes too where the process could still drop it (root here). */
	status_field(pid, "CapBnd:", v, sizeof(v));
	ck_assert_str_eq(v, "0000000000000000");
	status_field(pid, "PPid:", v, sizeof(v));
	ck_assert_int_eq(atoi(v), (int)getpid());
	fprintf(stderr, "parser child %d: %d of 5 libc symbols and _PyRuntime at 0x%llx, as "
		"in-process; no capability, NO_NEW_PRIVS, seccomp filter\n", (int)pid, n,
		(unsigned long long)py_got.runtime);
	parser_stop();
	ck_assert_int_eq(parser_pid(), 0);
	ck_assert_uint_eq(parser_restarts(), 0);
}
END_TEST

/* What a sandboxed process does: by loop index. */
enum forbidden { OPEN_FILE, EXEC_MEMORY, NEW_PROCESS, OPEN_SOCKET, FORBIDDEN_COUNT };

static void do_forbidden(enum forbidden what)
{
	switch (what) {
	case OPEN_FILE:
		open("/etc/passwd", O_RDONLY);
		break;
	case EXEC_MEMORY:
		mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		break;
	case NEW_PROCESS:
		fork();
		break;
	default:
		socket(AF_INET, SOCK_STREAM, 0);
		break;
	}
}

START_TEST(the_filter_kills_a_child_that_opens_maps_code_or_forks)
{
	static const char *const names[FORBIDDEN_COUNT] = {
		"open a file", "map executable memory", "fork", "open a socket",
	};
	int status = 0;
	pid_t pid;

	if (tu_skip_unless_root("the_filter_kills_a_child_that_opens_maps_code_or_forks"))
		return;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		void *p;

		if (parser_child_sandbox() != 0)
			_exit(3);
		/* What it may do: memory, not executable. */
		p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED || !malloc(1 << 22))
			_exit(4);
		do_forbidden((enum forbidden)_i);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS,
		      "a sandboxed child that tried to %s: %s %d", names[_i],
		      WIFSIGNALED(status) ? "signal" : "exit",
		      WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}
END_TEST

START_TEST(a_malformed_elf_file_is_an_error_the_child_survives)
{
	static const unsigned char header[] = { 0x7f, 'E', 'L', 'F', 2, 1, 1, 0 };
	char path[] = "/tmp/zernel-parser-XXXXXX", libc[512], buf[8192];
	uint64_t off[5];
	struct pyelf_syms py;
	int fd, src;
	pid_t pid;
	ssize_t n;

	own_libc(libc, sizeof(libc));
	/* An ELF header, then libc's first 8 KiB cut short: tables that point past the end. */
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	src = open(libc, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(src, 0);
	n = read(src, buf, sizeof(buf));
	ck_assert_int_eq(n, (ssize_t)sizeof(buf));
	close(src);
	ck_assert_int_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	lseek(fd, 0, SEEK_SET);
	ck_assert_int_lt(parser_elf_functions(fd, libc_names, 5, off), 1);
	pid = parser_pid();
	ck_assert_int_gt(pid, 0);
	/* Just a header, and garbage. */
	ck_assert_int_eq(ftruncate(fd, 0), 0);
	ck_assert_int_eq(pwrite(fd, header, sizeof(header), 0), (ssize_t)sizeof(header));
	ck_assert_int_lt(parser_elf_python(fd, &py), 0);
	ck_assert_int_lt(parser_elf_functions(fd, libc_names, 5, off), 1);
	close(fd);
	unlink(path);
	ck_assert_int_eq(parser_pid(), pid);
	ck_assert_uint_eq(parser_restarts(), 0);
	parser_stop();
}
END_TEST

struct killer {
	pid_t pid;
	int ms;
};

/* After ms, a SIGSEGV for the stopped child, then SIGCONT, which delivers it. */
static void *crash_later(void *arg)
{
	const struct killer *k = arg;

	tu_sleep_ms(k->ms);
	kill(k->pid, SIGSEGV);
	kill(k->pid, SIGCONT);
	return NULL;
}

/* Whether pid is stopped (state T), within 2 s. */
static int stopped(pid_t pid)
{
	for (int i = 0; i < 200; i++) {
		char path[64], *st;
		int yes;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		st = tu_read_file(path, NULL);
		yes = st && strstr(st, ") T ");
		free(st);
		if (yes)
			return 1;
		tu_sleep_ms(10);
	}
	return 0;
}

/*
 * A file that crashes the child, stood in for by a SIGSEGV that reaches
 * it with the request waiting in its socket: the request fails, the child
 * is counted, and a new one answers the next file.
 */
START_TEST(a_child_that_dies_in_a_file_is_replaced_and_counted)
{
	struct killer k = { .ms = 200 };
	char libc[512];
	uint64_t off[5];
	pthread_t t;
	unsigned long long first_start;
	pid_t first;
	int fd;

	own_libc(libc, sizeof(libc));
	fd = open(libc, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(parser_elf_functions(fd, libc_names, 5, off), 4);
	first = parser_pid();
	ck_assert_int_gt(first, 0);
	first_start = start_time(first);
	ck_assert_int_eq(kill(first, SIGSTOP), 0);
	ck_assert(stopped(first));
	k.pid = first;
	ck_assert_int_eq(pthread_create(&t, NULL, crash_later, &k), 0);
	ck_assert_int_eq(parser_elf_functions(fd, libc_names, 5, off), -ECHILD);
	pthread_join(t, NULL);
	ck_assert_uint_eq(parser_restarts(), 1);
	ck_assert_int_eq(parser_pid(), 0);
	ck_assert_int_eq(parser_elf_functions(fd, libc_names, 5, off), 4);
	ck_assert_int_gt(parser_pid(), 0);
	assert_new_child(first, first_start);
	ck_assert_uint_eq(parser_restarts(), 1);
	close(fd);
	parser_stop();
}
END_TEST

#define SECRET	"zSECRETz-wJalrXUtnFEMI-K7MDENG-bPxRfiCY"

/* pid's environment parsed by the child, and in this process, alike. */
static void environ_both_ways(pid_t pid, struct proc_env *child, struct proc_env *here)
{
	ck_assert_int_eq(parser_environ(pid, child), 0);
	ck_assert_int_eq(proc_env_read(pid, here), 0);
	ck_assert_mem_eq(child, here, sizeof(*child));
	ck_assert_msg(!memmem(child, sizeof(*child), "zSECRETz", 8), "a secret left the child");
}

START_TEST(an_environment_is_parsed_in_the_child_as_in_process)
{
	char *const envp[] = {
		"PATH=/usr/bin:/bin", "AWS_SECRET_ACCESS_KEY=" SECRET, "RANK=3", "LOCAL_RANK=1",
		"WORLD_SIZE=4", "TORCHELASTIC_RUN_ID=job-42", "SLURM_JOB_ID=77",
		"CUDA_VISIBLE_DEVICES=2,3", "MASTER_ADDR=10.0.0.7", NULL,
	};
	struct proc_env child, here;
	pid_t pid, gone, parser;
	int status;

	if (tu_skip_unless_root("an_environment_is_parsed_in_the_child_as_in_process"))
		return;
	pid = ti_spawn_env(envp);
	ck_assert_int_gt(pid, 0);
	environ_both_ways(pid, &child, &here);
	ti_reap(pid);
	ck_assert_uint_eq(child.rank.value, 3);
	ck_assert_str_eq(child.run_id.value, "job-42");
	ck_assert_str_eq(child.cuda_visible_devices.value, "2,3");
	ck_assert_str_eq(child.master_addr.value, "10.0.0.7");
	ck_assert_uint_eq(child.entries, 9);
	parser = parser_pid();
	ck_assert_int_gt(parser, 0);
	assert_sandboxed(parser);

	/* Errors come from opening, here, as in-process: the child is not asked. */
	ck_assert_int_eq(parser_environ(2, &child), -ENODATA);	/* kthreadd */
	gone = fork();
	ck_assert_int_ge(gone, 0);
	if (gone == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(gone, &status, 0), gone);
	ck_assert_int_eq(parser_environ(gone, &child), -ENOENT);
	ck_assert_uint_eq(child.entries, 0);
	ck_assert_int_eq(parser_pid(), parser);
	ck_assert_uint_eq(parser_restarts(), 0);
	parser_stop();
}
END_TEST

/*
 * What a hostile process can put in its environment: entries without
 * '=', values that fail their checks, a name twice with two values, bytes
 * that are not UTF-8, and more than the reader takes.  Answers, never a
 * lost child.
 */
START_TEST(a_malformed_environment_is_an_answer_the_child_survives)
{
	static char big[PROC_ENV_READ_MAX + 4096];
	char *const envp[] = {
		"no equals sign here", "RANK=12abc", "WORLD_SIZE=4", "WORLD_SIZE=8",
		"TORCHELASTIC_RUN_ID=\xff\xfe\x01", "CUDA_DEVICE_ORDER=PCI BUS ID",
		"AWS_SECRET_ACCESS_KEY=" SECRET, "LOCAL_RANK=1", big, NULL,
	};
	struct proc_env child, here;
	pid_t pid, parser;

	if (tu_skip_unless_root("a_malformed_environment_is_an_answer_the_child_survives"))
		return;
	memcpy(big, "FILLER=", 7);
	memset(big + 7, 'x', sizeof(big) - 8);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(parser_environ(getpid(), &child), 0);	/* a child to watch */
	parser = parser_pid();
	pid = ti_spawn_env(envp);
	ck_assert_int_gt(pid, 0);
	environ_both_ways(pid, &child, &here);
	ti_reap(pid);
	ck_assert_uint_eq(child.rank.state, PROC_ENV_INVALID);
	ck_assert_uint_eq(child.world_size.state, PROC_ENV_INVALID);
	ck_assert_uint_eq(child.run_id.state, PROC_ENV_INVALID);
	ck_assert_uint_eq(child.cuda_device_order.state, PROC_ENV_INVALID);
	ck_assert_uint_eq(child.local_rank.value, 1);
	ck_assert_uint_eq(child.flags, PROC_ENV_F_TRUNCATED | PROC_ENV_F_CUT_ENTRY |
			  PROC_ENV_F_CONFLICT | PROC_ENV_F_MALFORMED);
	ck_assert_uint_eq(child.bytes, PROC_ENV_READ_MAX);
	ck_assert_int_eq(proc_env_check(&child), 0);
	ck_assert_int_eq(parser_pid(), parser);
	ck_assert_uint_eq(parser_restarts(), 0);
	parser_stop();
}
END_TEST

/* An environment that crashes the child, as a file does: restarted, counted, the next one answered. */
START_TEST(a_child_that_dies_on_an_environment_is_replaced_and_counted)
{
	struct killer k = { .ms = 200 };
	struct proc_env e;
	pthread_t t;
	unsigned long long first_start;
	pid_t first;

	if (tu_skip_unless_root("a_child_that_dies_on_an_environment_is_replaced_and_counted"))
		return;
	ck_assert_int_eq(parser_environ(getpid(), &e), 0);
	first = parser_pid();
	ck_assert_int_gt(first, 0);
	first_start = start_time(first);
	ck_assert_int_eq(kill(first, SIGSTOP), 0);
	ck_assert(stopped(first));
	k.pid = first;
	ck_assert_int_eq(pthread_create(&t, NULL, crash_later, &k), 0);
	ck_assert_int_eq(parser_environ(getpid(), &e), -ECHILD);
	pthread_join(t, NULL);
	ck_assert_uint_eq(e.entries, 0);
	ck_assert_uint_eq(parser_restarts(), 1);
	ck_assert_int_eq(parser_environ(getpid(), &e), 0);
	ck_assert_uint_gt(e.entries, 0);
	assert_new_child(first, first_start);
	ck_assert_uint_eq(parser_restarts(), 1);
	parser_stop();
}
END_TEST

/* The kubelet's log directory names, good and bad, as the names the collector meets. */
#define KUBE_UID	"0d7cf2b4-5a3b-4c6e-9f1e-8b2a6c1d4e5f"
#define KUBE_CID	"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"

START_TEST(log_directory_names_are_parsed_in_the_child_as_in_process)
{
	static const char *const dirs[] = {
		"ml_trainer-0_" KUBE_UID, "ml_trainer.a.b_" KUBE_UID, "ml_trainer_0_" KUBE_UID,
		"ML_trainer-0_" KUBE_UID, "ml_trainer-0_03c7c0ace395d80182db07ae2c30f034",
		"ml__" KUBE_UID, "\xff\xfe_x_" KUBE_UID, "ml_trainer-0_" KUBE_UID "x",
	};
	static const char *const links[][2] = {
		{ "trainer-0_ml_main-" KUBE_CID ".log", "/var/log/pods/ml_trainer-0_" KUBE_UID "/main/0.log" },
		{ "trainer-0_ml_main-" KUBE_CID ".log", "/var/log/pods/ml_other_" KUBE_UID "/main/0.log" },
		{ "trainer-0_ml_main-" KUBE_CID ".log", "../../etc/passwd" },
		{ "trainer-0_ml_Main-" KUBE_CID ".log", "/var/log/pods/ml_trainer-0_" KUBE_UID "/Main/0.log" },
		{ "trainer-0_ml-" KUBE_CID ".log", "/var/log/pods/ml_trainer-0_" KUBE_UID "/main/0.log" },
	};
	struct kube_container_entry c_child, c_here;
	struct kube_pod_entry p_child, p_here;
	unsigned int found = 0;
	pid_t parser = 0;

	if (tu_skip_unless_root("log_directory_names_are_parsed_in_the_child_as_in_process"))
		return;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		int want = kube_parsers_here.pod_dir(dirs[i], strlen(dirs[i]), &p_here);

		ck_assert_int_eq(parser_kube_parsers.pod_dir(dirs[i], strlen(dirs[i]), &p_child), want);
		ck_assert_mem_eq(&p_child, &p_here, sizeof(p_here));
		found += want == 0;
		if (!parser)
			parser = parser_pid();
	}
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		const char *n = links[i][0], *t = links[i][1];
		int want = kube_parsers_here.link(n, strlen(n), t, strlen(t), &c_here);

		ck_assert_int_eq(parser_kube_parsers.link(n, strlen(n), t, strlen(t), &c_child), want);
		ck_assert_mem_eq(&c_child, &c_here, sizeof(c_here));
		found += want == 0;
	}
	/* Three pod directories and one link are the kubelet's; the rest are not. */
	ck_assert_uint_eq(found, 4);
	ck_assert_int_gt(parser, 0);
	ck_assert_int_eq(parser_pid(), parser);
	assert_sandboxed(parser);
	ck_assert_uint_eq(parser_restarts(), 0);
	parser_stop();
}
END_TEST

/*
 * Python objects as CPython 3.11 lays them out, built in this process's
 * own memory, which the child reads through /proc/self/mem as it reads a
 * watched process's: a compact ASCII str and a code object pointing to two.
 */
struct fake_str {
	uint8_t bytes[PY_STR_HEADER + 64];
} __attribute__((aligned(16)));

static void fake_str(struct fake_str *o, const struct py_layout *l, const char *text,
		     uint64_t length)
{
	uint32_t state = (1u << 5) | (1u << 6) | (1u << 2);	/* compact, ASCII, 1 byte */

	memset(o, 0, sizeof(*o));
	memcpy(o->bytes + l->str_length, &length, sizeof(length));
	memcpy(o->bytes + l->str_state, &state, sizeof(state));
	memcpy(o->bytes + l->str_ascii_data, text, strlen(text));
}

/*
 * A 3.11 bytes object holding a location table of one entry: one code
 * unit, no columns (code 13), line delta +2 (signed varint 4).
 */
struct fake_bytes {
	uint8_t bytes[PY_BYTES_HEADER + 8];
} __attribute__((aligned(16)));

static void fake_table(struct fake_bytes *o, const struct py_layout *l)
{
	const uint8_t entry[] = { 0x80 | (13 << 3), 4 };
	uint64_t size = sizeof(entry);

	memset(o, 0, sizeof(*o));
	memcpy(o->bytes + l->var_size, &size, sizeof(size));
	memcpy(o->bytes + l->bytes_data, entry, sizeof(entry));
}

/* A code object (its first line 7) of file, func and table; its first instruction asked. */
static void fake_code(struct py_code_query *q, const struct py_layout *l, const void *file,
		      const void *func, const void *table)
{
	uint64_t f = (uint64_t)(uintptr_t)file, n = (uint64_t)(uintptr_t)func;
	uint64_t t = (uint64_t)(uintptr_t)table;
	int32_t first = 7;

	memset(q, 0, sizeof(*q));
	q->layout = *l;
	memcpy(q->head + l->code_filename, &f, sizeof(f));
	memcpy(q->head + l->code_qualname, &n, sizeof(n));
	memcpy(q->head + l->code_firstlineno, &first, sizeof(first));
	memcpy(q->head + l->code_linetable, &t, sizeof(t));
	q->code = (uint64_t)(uintptr_t)q->head;
	q->instr = q->code + l->code_units;
}

/*
 * A code object's names are parsed in the child from the process's memory,
 * as in-process; a hostile one (a str a terabyte long, a name at an address
 * nothing is mapped at, a request whose layout does not fit) is an error
 * the child survives, and a character outside printable ASCII is a '?'.
 */
START_TEST(python_code_objects_are_named_in_the_child_as_in_process)
{
	const struct py_layout *l = py_layout_find(3, 11);
	static struct fake_str file, func, huge;
	static struct fake_bytes table;
	struct py_code_names want, got;
	struct py_code_query q;
	uint64_t before;
	pid_t pid;
	int mem;

	if (tu_skip_unless_root("python_code_objects_are_named_in_the_child_as_in_process"))
		return;
	ck_assert_ptr_nonnull(l);
	mem = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(mem, 0);
	fake_str(&file, l, "/srv/train\x01.py", strlen("/srv/train\x01.py"));
	fake_str(&func, l, "Trainer.step", strlen("Trainer.step"));
	fake_table(&table, l);
	fake_code(&q, l, &file, &func, &table);
	ck_assert_int_eq(py_code_names(mem, &q, &want), 0);
	ck_assert_int_eq(parser_py_code(mem, &q, &got), 0);
	ck_assert_mem_eq(&got, &want, sizeof(want));
	ck_assert_str_eq(got.file, "/srv/train?.py");
	ck_assert_str_eq(got.func, "Trainer.step");
	ck_assert_uint_eq(got.line, 9);		/* the first line, 7, and the entry's +2 */
	/* An instruction past the table's one unit: no line, the names all the same. */
	q.instr += 2;
	ck_assert_int_eq(parser_py_code(mem, &q, &got), 0);
	ck_assert_uint_eq(got.line, 0);
	ck_assert_str_eq(got.func, "Trainer.step");
	pid = parser_pid();
	ck_assert_int_gt(pid, 0);
	assert_sandboxed(pid);
	before = parser_restarts();

	fake_str(&huge, l, "x", 1ull << 40);
	fake_code(&q, l, &huge, &func, &table);
	ck_assert_int_eq(parser_py_code(mem, &q, &got), -EPROTO);
	ck_assert_str_eq(got.file, "");
	fake_code(&q, l, (void *)(uintptr_t)0x10, &func, &table);
	ck_assert_int_eq(parser_py_code(mem, &q, &got), -EPROTO);
	fake_code(&q, l, &file, (void *)(uintptr_t)0x10, &table);
	ck_assert_int_eq(parser_py_code(mem, &q, &got), 0);
	ck_assert_str_eq(got.func, "?");
	fake_code(&q, l, &file, &func, &table);
	q.layout.str_compact_data = 4096;
	ck_assert_int_eq(parser_py_code(mem, &q, &got), -EINVAL);
	ck_assert_int_eq(parser_pid(), pid);
	ck_assert_uint_eq(parser_restarts(), before);
	close(mem);
	parser_stop();
}
END_TEST

/* The collector's child named zernel-parser; 0 when none. */
static pid_t collector_parser(pid_t collector)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;

	ck_assert_ptr_nonnull(d);
	while (!found && (e = readdir(d))) {
		char v[64];
		pid_t pid = atoi(e->d_name);

		if (pid <= 0)
			continue;
		status_field(pid, "PPid:", v, sizeof(v));
		if (atoi(v) != (int)collector)
			continue;
		status_field(pid, "Name:", v, sizeof(v));
		if (strcmp(v, "zernel-parser") == 0)
			found = pid;
	}
	closedir(d);
	return found;
}

START_TEST(the_collector_parses_what_it_probes_in_its_child)
{
	struct tp_collector c;
	pid_t child;

	if (tu_skip_unless_root("the_collector_parses_what_it_probes_in_its_child"))
		return;
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	ck_assert_uint_ge(c.snap.hdr->stats.libraries_attached, 1);
	child = collector_parser(c.pid);
	ck_assert_msg(child > 0, "collector %d has no zernel-parser child", (int)c.pid);
	assert_sandboxed(child);
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	ck_assert_uint_eq(c.snap.hdr->stats.parser_restarts, 0);
	fprintf(stderr, "collector %d: %llu libraries parsed by its child %d\n", (int)c.pid,
		(unsigned long long)c.snap.hdr->stats.libraries_attached, (int)child);
	tp_collector_stop(&c);
}
END_TEST

Suite *parser_suite(void);
Suite *parser_suite(void)
{
	Suite *s = suite_create("parser");
	TCase *t = tcase_create("child");

	tcase_set_timeout(t, 60);
	tcase_add_test(t, parser_child_answers_as_the_parsers_do_with_nothing_to_wield);
	tcase_add_loop_test(t, the_filter_kills_a_child_that_opens_maps_code_or_forks, 0,
			    FORBIDDEN_COUNT);
	tcase_add_test(t, a_malformed_elf_file_is_an_error_the_child_survives);
	tcase_add_test(t, a_child_that_dies_in_a_file_is_replaced_and_counted);
	tcase_add_test(t, an_environment_is_parsed_in_the_child_as_in_process);
	tcase_add_test(t, a_malformed_environment_is_an_answer_the_child_survives);
	tcase_add_test(t, a_child_that_dies_on_an_environment_is_replaced_and_counted);
	tcase_add_test(t, log_directory_names_are_parsed_in_the_child_as_in_process);
	tcase_add_test(t, python_code_objects_are_named_in_the_child_as_in_process);
	tcase_add_test(t, the_collector_parses_what_it_probes_in_its_child);
	suite_add_tcase(s, t);
	return s;
}

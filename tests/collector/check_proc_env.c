/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The environ reader against ground truth: images built here byte by
 * byte (hostile ones included) and real processes started with a known
 * environment, which always holds a planted secret that must never reach
 * the output.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/proc/proc_env.h"
#include "tests/collector/tu_identity.h"
#include "tests/support/testutil.h"

#define SECRET	"zSECRETz-wJalrXUtnFEMI-K7MDENG-bPxRfiCY"

/* Builds an environ image from NUL-terminated entries; returns its length. */
static size_t image(char *buf, size_t cap, const char *const *entries)
{
	size_t n = 0;

	for (; *entries; entries++) {
		size_t l = strlen(*entries) + 1;

		ck_assert_uint_le(n + l, cap);
		memcpy(buf + n, *entries, l);
		n += l;
	}
	return n;
}

static void assert_no_secret(const struct proc_env *e)
{
	ck_assert_msg(!memmem(e, sizeof(*e), SECRET, strlen(SECRET)),
		      "the secret reached the output struct");
	ck_assert_msg(!memmem(e, sizeof(*e), "zSECRETz", 8), "part of the secret reached the output");
}

static void parse_entries(const char *const *entries, struct proc_env *e)
{
	static char buf[8192];

	proc_env_parse(buf, image(buf, sizeof(buf), entries), e);
}

START_TEST(allowlisted_variables_are_kept_in_their_fields)
{
	const char *const env[] = {
		"PATH=/usr/bin", "AWS_SECRET_ACCESS_KEY=" SECRET, "RANK=5", "LOCAL_RANK=1",
		"WORLD_SIZE=16", "LOCAL_WORLD_SIZE=8", "GROUP_RANK=0",
		"TORCHELASTIC_RESTART_COUNT=2", "TORCHELASTIC_RUN_ID=llama-7b-é-run",
		"MASTER_ADDR=trainer-0.trainer.ml.svc", "MASTER_PORT=29500",
		"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_LOCAL_RANK=3", "OMPI_COMM_WORLD_SIZE=4",
		"SLURM_JOB_ID=123456", "SLURM_STEP_ID=2", "SLURM_PROCID=7", "SLURM_LOCALID=3",
		"SLURM_NTASKS=8", "SLURM_ARRAY_JOB_ID=123000", "SLURM_ARRAY_TASK_ID=56",
		"SLURM_STEP_GPUS=3,5", "SLURM_JOB_GPUS=2,3,5", "CUDA_VISIBLE_DEVICES=GPU-8932f937,1", "NVIDIA_VISIBLE_DEVICES=all",
		"CUDA_DEVICE_ORDER=PCI_BUS_ID", "HF_TOKEN=" SECRET, NULL,
	};
	struct proc_env e;

	parse_entries(env, &e);
	assert_no_secret(&e);
	ck_assert_uint_eq(e.rank.state, PROC_ENV_SET);
	ck_assert_uint_eq(e.rank.value, 5);
	ck_assert_uint_eq(e.local_rank.value, 1);
	ck_assert_uint_eq(e.world_size.value, 16);
	ck_assert_uint_eq(e.local_world_size.value, 8);
	ck_assert_uint_eq(e.group_rank.state, PROC_ENV_SET);
	ck_assert_uint_eq(e.group_rank.value, 0);
	ck_assert_uint_eq(e.restart_count.value, 2);
	ck_assert_str_eq(e.run_id.value, "llama-7b-é-run");
	ck_assert_str_eq(e.master_addr.value, "trainer-0.trainer.ml.svc");
	ck_assert_uint_eq(e.master_port.value, 29500);
	ck_assert_uint_eq(e.ompi_rank.value, 3);
	ck_assert_uint_eq(e.ompi_local_rank.value, 3);
	ck_assert_uint_eq(e.ompi_size.value, 4);
	ck_assert_uint_eq(e.slurm_job_id.value, 123456);
	ck_assert_uint_eq(e.slurm_step_id.value, 2);
	ck_assert_uint_eq(e.slurm_procid.value, 7);
	ck_assert_uint_eq(e.slurm_localid.value, 3);
	ck_assert_uint_eq(e.slurm_ntasks.value, 8);
	ck_assert_uint_eq(e.slurm_array_job_id.value, 123000);
	ck_assert_uint_eq(e.slurm_array_task_id.value, 56);
	ck_assert_str_eq(e.slurm_step_gpus.value, "3,5");
	ck_assert_str_eq(e.slurm_job_gpus.value, "2,3,5");
	ck_assert_str_eq(e.cuda_visible_devices.value, "GPU-8932f937,1");
	ck_assert_str_eq(e.nvidia_visible_devices.value, "all");
	ck_assert_str_eq(e.cuda_device_order.value, "PCI_BUS_ID");
	ck_assert_uint_eq(e.entries, 27);
	ck_assert_uint_eq(e.refused, 0);
	ck_assert_uint_eq(e.flags, 0);
}
END_TEST

START_TEST(unset_variables_are_absent_and_empty_devices_are_kept)
{
	const char *const env[] = { "HOME=/root", "CUDA_VISIBLE_DEVICES=", NULL };
	struct proc_env e;

	parse_entries(env, &e);
	ck_assert_uint_eq(e.rank.state, PROC_ENV_ABSENT);
	ck_assert_uint_eq(e.run_id.state, PROC_ENV_ABSENT);
	ck_assert_uint_eq(e.nvidia_visible_devices.state, PROC_ENV_ABSENT);
	/* An empty CUDA_VISIBLE_DEVICES hides every GPU: it is a value. */
	ck_assert_uint_eq(e.cuda_visible_devices.state, PROC_ENV_SET);
	ck_assert_str_eq(e.cuda_visible_devices.value, "");
}
END_TEST

/* One allowlisted entry per row; each must come out INVALID with nothing stored. */
#define F(f)	offsetof(struct proc_env, f), sizeof(((struct proc_env *)0)->f)
static const struct bad_value {
	const char *entry;
	size_t off, size;	/* the field it names */
} bad_values[] = {
	{ "RANK=-1", F(rank) },
	{ "RANK=+1", F(rank) },
	{ "RANK= 1", F(rank) },
	{ "RANK=1a", F(rank) },
	{ "RANK=0x10", F(rank) },
	{ "RANK=", F(rank) },
	{ "RANK=16777216", F(rank) },
	{ "RANK=99999999999999999999999", F(rank) },
	{ "RANK=" SECRET, F(rank) },
	{ "WORLD_SIZE=0", F(world_size) },
	{ "MASTER_PORT=0", F(master_port) },
	{ "MASTER_PORT=65536", F(master_port) },
	{ "SLURM_JOB_ID=4294967296", F(slurm_job_id) },
	{ "TORCHELASTIC_RUN_ID=", F(run_id) },
	{ "TORCHELASTIC_RUN_ID=run\x01id", F(run_id) },
	{ "TORCHELASTIC_RUN_ID=run\nid", F(run_id) },
	{ "TORCHELASTIC_RUN_ID=run\x7fid", F(run_id) },
	{ "TORCHELASTIC_RUN_ID=\xc3\x28", F(run_id) },		/* bad continuation */
	{ "TORCHELASTIC_RUN_ID=\xc0\xaf", F(run_id) },		/* overlong '/' */
	{ "TORCHELASTIC_RUN_ID=\xed\xa0\x80", F(run_id) },		/* surrogate */
	{ "TORCHELASTIC_RUN_ID=\xf4\x90\x80\x80", F(run_id) },	/* past U+10FFFF */
	{ "TORCHELASTIC_RUN_ID=\xc2\x85", F(run_id) },		/* C1 control */
	{ "TORCHELASTIC_RUN_ID=ab\xe2\x82", F(run_id) },		/* cut sequence */
	{ "MASTER_ADDR=host name", F(master_addr) },
	{ "MASTER_ADDR=host;rm", F(master_addr) },
	{ "MASTER_ADDR=", F(master_addr) },
	{ "CUDA_VISIBLE_DEVICES=0\t1", F(cuda_visible_devices) },
	{ "CUDA_VISIBLE_DEVICES=0,\xc3\xa9", F(cuda_visible_devices) },
	{ "NVIDIA_VISIBLE_DEVICES=\x1b[31m", F(nvidia_visible_devices) },
	{ "CUDA_DEVICE_ORDER=PCI BUS", F(cuda_device_order) },
	{ "CUDA_DEVICE_ORDER=$(id)", F(cuda_device_order) },
};

START_TEST(refused_values_leave_the_field_invalid_and_empty)
{
	static const char zero[sizeof(struct proc_env)];
	const struct bad_value *b = &bad_values[_i];
	const char *const env[] = { "AWS_SECRET_ACCESS_KEY=" SECRET, b->entry, "LOCAL_RANK=4", NULL };
	struct proc_env e;
	const char *f;

	parse_entries(env, &e);
	assert_no_secret(&e);
	f = (const char *)&e + b->off;
	ck_assert_msg(*(const uint32_t *)f == PROC_ENV_INVALID, "%s: state %u", b->entry,
		      *(const uint32_t *)f);
	/* Everything after the state is zero: no value was stored. */
	ck_assert_msg(memcmp(f + sizeof(uint32_t), zero, b->size - sizeof(uint32_t)) == 0,
		      "%s: a refused value was stored", b->entry);
	ck_assert_uint_eq(e.refused, 1);
	/* Its neighbours are unaffected. */
	ck_assert_uint_eq(e.local_rank.state, PROC_ENV_SET);
	ck_assert_uint_eq(e.local_rank.value, 4);
}
END_TEST

START_TEST(over_long_values_are_refused_not_cut)
{
	static char big[PROC_ENV_DEVICES_MAX + 64], id[PROC_ENV_ID_MAX + 32];
	const char *const env[] = { big, id, "RANK=2", NULL };
	struct proc_env e;

	/* One byte past what fits: a cut list would name different GPUs. */
	strcpy(big, "CUDA_VISIBLE_DEVICES=");
	memset(big + strlen(big), '1', PROC_ENV_DEVICES_MAX);
	big[strlen("CUDA_VISIBLE_DEVICES=") + PROC_ENV_DEVICES_MAX] = '\0';
	strcpy(id, "TORCHELASTIC_RUN_ID=");
	memset(id + strlen(id), 'r', PROC_ENV_ID_MAX);
	id[strlen("TORCHELASTIC_RUN_ID=") + PROC_ENV_ID_MAX] = '\0';
	parse_entries(env, &e);
	ck_assert_uint_eq(e.cuda_visible_devices.state, PROC_ENV_INVALID);
	ck_assert_str_eq(e.cuda_visible_devices.value, "");
	ck_assert_uint_eq(e.run_id.state, PROC_ENV_INVALID);
	ck_assert_uint_eq(e.rank.value, 2);
	ck_assert_uint_eq(e.refused, 2);

	/* The longest that fits is kept whole. */
	big[strlen("CUDA_VISIBLE_DEVICES=") + PROC_ENV_DEVICES_MAX - 1] = '\0';
	parse_entries(env, &e);
	ck_assert_uint_eq(e.cuda_visible_devices.state, PROC_ENV_SET);
	ck_assert_uint_eq(strlen(e.cuda_visible_devices.value), PROC_ENV_DEVICES_MAX - 1);
}
END_TEST

START_TEST(names_match_exactly)
{
	const char *const env[] = {
		"RANKX=1", "XRANK=2", "rank=3", " RANK=4", "RANK =5", "LOCAL_RANK", "=6",
		"A_VERY_LONG_NAME_THAT_IS_NOT_ON_THE_LIST_AT_ALL_RANK=7", NULL,
	};
	struct proc_env e;

	parse_entries(env, &e);
	ck_assert_uint_eq(e.rank.state, PROC_ENV_ABSENT);
	ck_assert_uint_eq(e.local_rank.state, PROC_ENV_ABSENT);
	ck_assert(e.flags & PROC_ENV_F_MALFORMED);	/* "LOCAL_RANK" has no '=' */
	ck_assert_uint_eq(e.entries, 8);
}
END_TEST

START_TEST(a_name_given_twice_counts_only_when_both_agree)
{
	const char *const same[] = { "RANK=3", "PATH=/bin", "RANK=3", NULL };
	const char *const differ[] = { "RANK=3", "RANK=4", "WORLD_SIZE=8", "WORLD_SIZE=x", NULL };
	struct proc_env e;

	parse_entries(same, &e);
	ck_assert_uint_eq(e.rank.state, PROC_ENV_SET);
	ck_assert_uint_eq(e.rank.value, 3);
	ck_assert_uint_eq(e.flags, 0);

	/* getenv() would say 3 and Python's os.environ 4: neither is the rank. */
	parse_entries(differ, &e);
	ck_assert_uint_eq(e.rank.state, PROC_ENV_INVALID);
	ck_assert_uint_eq(e.rank.value, 0);
	ck_assert_uint_eq(e.world_size.state, PROC_ENV_INVALID);
	ck_assert(e.flags & PROC_ENV_F_CONFLICT);
}
END_TEST

START_TEST(embedded_nuls_and_a_cut_last_entry)
{
	/* "RANK=1<NUL>garbage<NUL><NUL>LOCAL_RANK=2<NUL>WORLD_SIZE=12" (no final NUL). */
	static const char img[] = "RANK=1\0garbage\0\0LOCAL_RANK=2\0WORLD_SIZE=12";
	struct proc_env e;

	proc_env_parse(img, sizeof(img) - 1, &e);
	ck_assert_uint_eq(e.rank.value, 1);
	ck_assert_uint_eq(e.local_rank.value, 2);
	/* "WORLD_SIZE=12" may have been "WORLD_SIZE=128": dropped. */
	ck_assert_uint_eq(e.world_size.state, PROC_ENV_ABSENT);
	ck_assert(e.flags & PROC_ENV_F_CUT_ENTRY);
	ck_assert(e.flags & PROC_ENV_F_MALFORMED);
	ck_assert_uint_eq(e.entries, 4);

	proc_env_parse("", 0, &e);
	ck_assert_uint_eq(e.entries, 0);
	ck_assert_uint_eq(e.flags, 0);
}
END_TEST

/*
 * Writes `before` bytes of filler entries, "RANK=9", then `after` bytes of
 * filler; each filler entry is 100 bytes.
 */
static void write_big_env(const char *path, size_t before, size_t after)
{
	FILE *f = fopen(path, "we");
	size_t done;

	ck_assert_ptr_nonnull(f);
	for (done = 0; done < before; done += 100)
		fprintf(f, "FILLER_%06zu=%0*d%c", done, 85, 0, '\0');
	fprintf(f, "RANK=9%c", '\0');
	for (done = 0; done < after; done += 100)
		fprintf(f, "AFTER_%06zu=%0*d%c", done, 86, 0, '\0');
	fclose(f);
}

/* "RANK=9" and one entry padding the file to exactly PROC_ENV_READ_MAX bytes. */
static void write_env_at_limit(const char *path)
{
	FILE *f = fopen(path, "we");
	size_t pad = PROC_ENV_READ_MAX - strlen("RANK=9") - 1 - strlen("PAD=") - 1;

	ck_assert_ptr_nonnull(f);
	fprintf(f, "RANK=9%cPAD=", '\0');
	for (size_t i = 0; i < pad; i++)
		fputc('x', f);
	fputc('\0', f);
	fclose(f);
}

START_TEST(reads_stop_at_the_limit_and_say_so)
{
	char path[256];
	struct proc_env e;

	snprintf(path, sizeof(path), "/tmp/zernel-test-%d-environ", (int)getpid());
	/* RANK well inside the limit, more than the limit in all. */
	write_big_env(path, 1000, 100 * 1000);
	ck_assert_int_eq(proc_env_read_file(path, &e), 0);
	ck_assert_uint_eq(e.rank.value, 9);
	ck_assert_uint_eq(e.bytes, PROC_ENV_READ_MAX);
	ck_assert(e.flags & PROC_ENV_F_TRUNCATED);

	/* RANK past the limit: not seen. */
	write_big_env(path, 70 * 1000, 0);
	ck_assert_int_eq(proc_env_read_file(path, &e), 0);
	ck_assert_uint_eq(e.rank.state, PROC_ENV_ABSENT);
	ck_assert(e.flags & PROC_ENV_F_TRUNCATED);

	/* Exactly at the limit is not truncation. */
	write_env_at_limit(path);
	ck_assert_int_eq(proc_env_read_file(path, &e), 0);
	ck_assert_uint_eq(e.bytes, PROC_ENV_READ_MAX);
	ck_assert_uint_eq(e.rank.value, 9);
	ck_assert_uint_eq(e.entries, 2);
	ck_assert_uint_eq(e.flags, 0);
	unlink(path);

	ck_assert_int_eq(proc_env_read_file("/nonexistent/environ", &e), -ENOENT);
}
END_TEST

START_TEST(a_real_process_environment)
{
	char *const envp[] = {
		"PATH=/usr/bin:/bin", "AWS_SECRET_ACCESS_KEY=" SECRET, "RANK=3", "LOCAL_RANK=1",
		"WORLD_SIZE=4", "TORCHELASTIC_RUN_ID=job-42", "SLURM_JOB_ID=77",
		"CUDA_VISIBLE_DEVICES=2,3", "RANK=3", "DB_PASSWORD=" SECRET, NULL,
	};
	struct proc_env e;
	pid_t pid;

	if (tu_skip_unless_root("a_real_process_environment"))
		return;
	pid = ti_spawn_env(envp);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(proc_env_read(pid, &e), 0);
	ti_reap(pid);
	assert_no_secret(&e);
	ck_assert_uint_eq(e.rank.value, 3);
	ck_assert_uint_eq(e.local_rank.value, 1);
	ck_assert_uint_eq(e.world_size.value, 4);
	ck_assert_str_eq(e.run_id.value, "job-42");
	ck_assert_uint_eq(e.slurm_job_id.value, 77);
	ck_assert_str_eq(e.cuda_visible_devices.value, "2,3");
	ck_assert_uint_eq(e.entries, 10);
	ck_assert_uint_eq(e.flags, 0);
}
END_TEST

START_TEST(unreadable_gone_and_kernel_thread_environments)
{
	struct proc_env e;
	pid_t pid;
	int status;

	if (tu_skip_unless_root("unreadable_gone_and_kernel_thread_environments"))
		return;
	/* kthreadd has no user memory, hence no environment. */
	ck_assert_int_eq(proc_env_read(2, &e), -ENODATA);
	ck_assert_uint_eq(e.entries, 0);

	/* A reaped process. */
	pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	ck_assert_int_eq(proc_env_read(pid, &e), -ENOENT);

	/* Someone without ptrace rights over us: refused at open. */
	pid = fork();
	if (pid == 0) {
		struct proc_env ce;
		int rc;

		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(2);
		rc = proc_env_read(getppid(), &ce);
		_exit(rc == -EACCES || rc == -EPERM ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "an unprivileged reader was not refused (status %d)", status);
}
END_TEST

START_TEST(processes_that_exit_while_being_read)
{
	static char fill[40][1100];
	char *envp[48];
	int n = 0, full = 0, gone = 0;

	if (tu_skip_unless_root("processes_that_exit_while_being_read"))
		return;
	/* A large environment keeps the read going while the process dies. */
	for (int i = 0; i < 40; i++) {
		snprintf(fill[i], sizeof(fill[i]), "FILL%02d=%01080d", i, 0);
		envp[n++] = fill[i];
	}
	envp[n++] = "RANK=6";
	envp[n++] = "AWS_SECRET_ACCESS_KEY=" SECRET;
	envp[n] = NULL;
	for (int round = 0; round < 150; round++) {
		struct proc_env e;
		pid_t pid = ti_spawn_env(envp);
		int rc;

		ck_assert_int_gt(pid, 0);
		kill(pid, SIGKILL);
		rc = proc_env_read(pid, &e);
		ti_reap(pid);
		assert_no_secret(&e);
		ck_assert_msg(rc == 0 || rc == -ENODATA || rc == -ENOENT,
			      "round %d: %d", round, rc);
		/* Whatever was kept is true; never a wrong rank. */
		ck_assert(e.rank.state == PROC_ENV_ABSENT || e.rank.value == 6);
		if (rc == 0 && e.rank.state == PROC_ENV_SET)
			full++;
		else
			gone++;
	}
	fprintf(stderr, "exit races: %d reads complete, %d cut or empty\n", full, gone);
}
END_TEST

START_TEST(a_fifo_that_ends_mid_entry)
{
	char path[256];
	struct proc_env e;
	pid_t writer;
	int rc;

	snprintf(path, sizeof(path), "/tmp/zernel-test-%d-fifo", (int)getpid());
	unlink(path);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	writer = fork();
	if (writer == 0) {
		int fd = open(path, O_WRONLY);

		/* The writer dies after part of an entry, as an exiting process would. */
		if (fd < 0 || write(fd, "RANK=3\0LOCAL_RA", 15) != 15)
			_exit(1);
		_exit(0);
	}
	rc = proc_env_read_file(path, &e);
	waitpid(writer, NULL, 0);
	unlink(path);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(e.rank.value, 3);
	ck_assert_uint_eq(e.local_rank.state, PROC_ENV_ABSENT);
	ck_assert(e.flags & PROC_ENV_F_CUT_ENTRY);
}
END_TEST

/*
 * proc_env_check: what the parser child answers is believed only when a
 * reader could have written it.  Each way a hostile child could bend a
 * real answer is refused; the answer itself, and one with every field
 * absent or refused, pass.
 */
enum bend {
	BEND_STATE, BEND_NUMBER_RANGE, BEND_NUMBER_PAD, BEND_TEXT_UNTERMINATED, BEND_TEXT_CONTROL,
	BEND_TEXT_AFTER_NUL, BEND_HOST_CHARS, BEND_ABSENT_WITH_VALUE, BEND_INVALID_WITH_VALUE,
	BEND_DEVICES_CONTROL, BEND_BYTES, BEND_ENTRIES, BEND_REFUSED, BEND_FLAGS, BEND_COUNT
};

START_TEST(an_answer_no_reader_writes_is_refused)
{
	const char *const env[] = {
		"RANK=5", "WORLD_SIZE=16", "TORCHELASTIC_RUN_ID=llama-7b-é-run",
		"MASTER_ADDR=trainer-0.ml.svc", "CUDA_VISIBLE_DEVICES=2,3", "SLURM_JOB_ID=bad",
		NULL,
	};
	struct proc_env e;

	parse_entries(env, &e);
	ck_assert_int_eq(proc_env_check(&e), 0);
	ck_assert_uint_eq(e.slurm_job_id.state, PROC_ENV_INVALID);
	switch ((enum bend)_i) {
	case BEND_STATE:
		e.local_rank.state = 3;
		break;
	case BEND_NUMBER_RANGE:
		e.rank.value = PROC_ENV_RANK_MAX + 1ull;
		break;
	case BEND_NUMBER_PAD:
		e.rank.pad = 1;
		break;
	case BEND_TEXT_UNTERMINATED:
		memset(e.run_id.value, 'a', sizeof(e.run_id.value));
		break;
	case BEND_TEXT_CONTROL:
		e.run_id.value[2] = '\n';
		break;
	case BEND_TEXT_AFTER_NUL:
		e.run_id.value[sizeof(e.run_id.value) - 1] = 'x';
		break;
	case BEND_HOST_CHARS:
		e.master_addr.value[0] = '/';
		break;
	case BEND_ABSENT_WITH_VALUE:
		e.group_rank.value = 2;
		break;
	case BEND_INVALID_WITH_VALUE:
		e.slurm_job_id.value = 7;
		break;
	case BEND_DEVICES_CONTROL:
		e.cuda_visible_devices.value[1] = '\x1b';
		break;
	case BEND_BYTES:
		e.bytes = PROC_ENV_READ_MAX + 1;
		break;
	case BEND_ENTRIES:
		e.entries = e.bytes + 1;
		break;
	case BEND_REFUSED:
		e.refused = e.entries + 1;
		break;
	default:
		e.flags |= 0x100;
		break;
	}
	ck_assert_msg(proc_env_check(&e) == -EPROTO, "bend %d believed", _i);
}
END_TEST

START_TEST(answers_with_every_field_absent_or_refused_pass)
{
	const char *const refused[] = {
		"RANK=x", "LOCAL_RANK=-1", "WORLD_SIZE=0", "TORCHELASTIC_RUN_ID=", "MASTER_ADDR=a b",
		"MASTER_PORT=70000", "CUDA_DEVICE_ORDER=a/b", "NVIDIA_VISIBLE_DEVICES=\t", NULL,
	};
	struct proc_env e;

	memset(&e, 0, sizeof(e));
	ck_assert_int_eq(proc_env_check(&e), 0);
	parse_entries(refused, &e);
	ck_assert_uint_eq(e.refused, 8);
	ck_assert_int_eq(proc_env_check(&e), 0);
}
END_TEST

Suite *proc_env_suite(void);
Suite *proc_env_suite(void)
{
	Suite *s = suite_create("proc_env");
	TCase *tc = tcase_create("parse");
	TCase *tr = tcase_create("root");

	tcase_add_test(tc, allowlisted_variables_are_kept_in_their_fields);
	tcase_add_test(tc, unset_variables_are_absent_and_empty_devices_are_kept);
	tcase_add_loop_test(tc, refused_values_leave_the_field_invalid_and_empty, 0,
			    (int)(sizeof(bad_values) / sizeof(bad_values[0])));
	tcase_add_test(tc, over_long_values_are_refused_not_cut);
	tcase_add_test(tc, names_match_exactly);
	tcase_add_test(tc, a_name_given_twice_counts_only_when_both_agree);
	tcase_add_test(tc, embedded_nuls_and_a_cut_last_entry);
	tcase_add_test(tc, reads_stop_at_the_limit_and_say_so);
	tcase_add_test(tc, a_fifo_that_ends_mid_entry);
	tcase_add_loop_test(tc, an_answer_no_reader_writes_is_refused, 0, BEND_COUNT);
	tcase_add_test(tc, answers_with_every_field_absent_or_refused_pass);
	suite_add_tcase(s, tc);

	tcase_set_timeout(tr, 60);
	tcase_add_test(tr, a_real_process_environment);
	tcase_add_test(tr, unreadable_gone_and_kernel_thread_environments);
	tcase_add_test(tr, processes_that_exit_while_being_read);
	suite_add_tcase(s, tr);
	return s;
}

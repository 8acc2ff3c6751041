/* SPDX-License-Identifier: BSD-2-Clause */
/* Device selection variables; see gpu_visible.h for the rules followed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collector/gpu/gpu_visible.h"

/* "<hex and dashes>", the body of a (possibly partial) UUID. */
static int uuid_chars(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || s[i] == '-'))
			return 0;
	return 1;
}

static int digits(const char *s, size_t n)
{
	if (n == 0 || n > 9)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static uint32_t number(const char *s, size_t n)
{
	uint32_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = v * 10 + (uint32_t)(s[i] - '0');
	return v;
}

/* "GPU-<uuid chars>" */
static int is_gpu_uuid(const char *s, size_t n)
{
	return n >= 4 && memcmp(s, "GPU-", 4) == 0 && uuid_chars(s + 4, n - 4);
}

/* "MIG-<uuid chars>" or "MIG-GPU-<uuid chars>/<gi>/<ci>" */
static int is_mig(const char *s, size_t n)
{
	const char *a, *b;

	if (n < 5 || memcmp(s, "MIG-", 4) != 0)
		return 0;
	s += 4;
	n -= 4;
	if (!(n >= 4 && memcmp(s, "GPU-", 4) == 0))
		return uuid_chars(s, n);
	a = memchr(s, '/', n);
	b = a ? memchr(a + 1, '/', n - (size_t)(a + 1 - s)) : NULL;
	return a && b && is_gpu_uuid(s, (size_t)(a - s)) &&
	       digits(a + 1, (size_t)(b - a - 1)) && digits(b + 1, n - (size_t)(b + 1 - s));
}

static int same_ref(const struct gpu_ref *a, const struct gpu_ref *b)
{
	return a->kind == b->kind && a->index == b->index && a->mig == b->mig &&
	       strcmp(a->id, b->id) == 0;
}

/* Appends r; returns 1 when it was already listed. */
static int push(struct gpu_visible *v, const struct gpu_ref *r)
{
	for (uint32_t i = 0; i < v->n; i++)
		if (same_ref(&v->ref[i], r))
			return 1;
	if (v->n == GPU_VISIBLE_MAX) {
		v->flags |= GPU_VISIBLE_F_CUT;
		return 0;
	}
	v->ref[v->n++] = *r;
	return 0;
}

static void set_id(struct gpu_ref *r, uint32_t kind, const char *s, size_t n)
{
	r->kind = kind;
	memcpy(r->id, s, n);
	r->id[n] = '\0';
}

/*
 * One CUDA entry of the list's form; returns 1 when taken, 0 when it
 * ends the list.
 */
static int cuda_entry(const char *s, size_t n, uint32_t form, struct gpu_ref *r,
		      uint32_t *flags)
{
	size_t d = 0;

	memset(r, 0, sizeof(*r));
	if (form == GPU_REF_INDEX) {
		/* strtoul: blanks, an optional '+', digits, anything after ignored. */
		while (n > 0 && (*s == ' ' || *s == '\t')) {
			s++;
			n--;
		}
		if (n > 0 && *s == '+') {
			s++;
			n--;
		}
		while (d < n && s[d] >= '0' && s[d] <= '9')
			d++;
		if (!digits(s, d)) {
			if (is_gpu_uuid(s, n) || is_mig(s, n))
				*flags |= GPU_VISIBLE_F_MIXED;
			return 0;	/* "-1", "", "x", or too large to be a device */
		}
		if (d < n)
			*flags |= GPU_VISIBLE_F_LAX;
		r->kind = GPU_REF_INDEX;
		r->index = number(s, d);
		return 1;
	}
	if (n >= GPU_REF_MAX)
		return 0;
	if (form == GPU_REF_UUID && is_gpu_uuid(s, n)) {
		set_id(r, GPU_REF_UUID, s, n);
		return 1;
	}
	if (form == GPU_REF_MIG && is_mig(s, n)) {
		set_id(r, GPU_REF_MIG, s, n);
		return 1;
	}
	if (is_gpu_uuid(s, n) || is_mig(s, n) || (n > 0 && s[0] >= '0' && s[0] <= '9'))
		*flags |= GPU_VISIBLE_F_MIXED;
	return 0;
}

int gpu_visible_parse_cuda(const char *value, struct gpu_visible *out)
{
	uint32_t form = GPU_REF_INDEX;
	const char *s = value;

	memset(out, 0, sizeof(*out));
	if (!value)
		return 0;
	out->mode = GPU_LIST_DEVICES;
	if (strncmp(s, "GPU-", 4) == 0)
		form = GPU_REF_UUID;
	else if (strncmp(s, "MIG-", 4) == 0)
		form = GPU_REF_MIG;
	for (;;) {
		const char *comma = strchr(s, ',');
		size_t n = comma ? (size_t)(comma - s) : strlen(s);
		struct gpu_ref r;

		if (!cuda_entry(s, n, form, &r, &out->flags)) {
			if (n > 0 || comma || out->n > 0)
				out->flags |= GPU_VISIBLE_F_STOPPED;
			break;
		}
		if (push(out, &r)) {
			out->flags |= GPU_VISIBLE_F_REPEATED;
			out->n = 0;
			break;
		}
		if (!comma)
			break;
		s = comma + 1;
	}
	if (out->n == 0) {
		out->mode = GPU_LIST_NONE;
		memset(out->ref, 0, sizeof(out->ref));
	}
	return 0;
}

/* One NVIDIA_VISIBLE_DEVICES entry; returns 0 or -EINVAL. */
static int nvidia_entry(const char *s, size_t n, struct gpu_ref *r)
{
	const char *colon = memchr(s, ':', n);

	memset(r, 0, sizeof(*r));
	if (digits(s, n)) {
		r->kind = GPU_REF_INDEX;
		r->index = number(s, n);
		return 0;
	}
	if (colon && digits(s, (size_t)(colon - s)) &&
	    digits(colon + 1, n - (size_t)(colon + 1 - s))) {
		r->kind = GPU_REF_MIG_INDEX;
		r->index = number(s, (size_t)(colon - s));
		r->mig = number(colon + 1, n - (size_t)(colon + 1 - s));
		return 0;
	}
	if (n < GPU_REF_MAX && n > 4 && is_gpu_uuid(s, n)) {
		set_id(r, GPU_REF_UUID, s, n);
		return 0;
	}
	if (n < GPU_REF_MAX && is_mig(s, n)) {
		set_id(r, GPU_REF_MIG, s, n);
		return 0;
	}
	return -EINVAL;
}

int gpu_visible_parse_nvidia(const char *value, struct gpu_visible *out)
{
	const char *s = value;

	memset(out, 0, sizeof(*out));
	if (!value)
		return 0;
	if (strcmp(value, "") == 0 || strcmp(value, "void") == 0) {
		out->mode = GPU_LIST_VOID;
		return 0;
	}
	if (strcmp(value, "all") == 0 || strcmp(value, "none") == 0) {
		out->mode = value[0] == 'a' ? GPU_LIST_ALL : GPU_LIST_NONE;
		return 0;
	}
	out->mode = GPU_LIST_DEVICES;
	for (;;) {
		const char *comma = strchr(s, ',');
		size_t n = comma ? (size_t)(comma - s) : strlen(s);
		struct gpu_ref r;

		/* A bad entry, a repeat or an overlong list: the runtime's answer is not known. */
		if (nvidia_entry(s, n, &r) != 0 || push(out, &r) ||
		    (out->flags & GPU_VISIBLE_F_CUT)) {
			memset(out, 0, sizeof(*out));
			out->mode = GPU_LIST_INVALID;
			return -EINVAL;
		}
		if (!comma)
			break;
		s = comma + 1;
	}
	return 0;
}

int gpu_ref_mig_parent(const struct gpu_ref *r, char *uuid, size_t len)
{
	const char *slash;
	size_t n;

	if (r->kind != GPU_REF_MIG || strncmp(r->id, "MIG-GPU-", 8) != 0)
		return -ENOENT;
	slash = strchr(r->id + 4, '/');
	n = slash ? (size_t)(slash - (r->id + 4)) : strlen(r->id + 4);
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(uuid, r->id + 4, n);
	uuid[n] = '\0';
	return 0;
}

// SPDX-License-Identifier: BSD-2-Clause
/*
 * Copies, sets and page-locked host memory in the fake driver.  Device
 * memory is host memory here (memory.c), so copies really copy and a
 * workload can check its data round trip; a device range must lie inside
 * one live allocation, as on a GPU.  Test code.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/fakes/fake_driver/fake_driver.h"

static int dev_range(CUdeviceptr p, size_t n)
{
	return n == 0 || fd_mem_range(p, n);
}

/* dst and src: 1 when device memory, 0 when host memory. */
static CUresult copy(const char *sym, void *dst, int dst_dev, const void *src, int src_dev,
		     size_t n, void *stream)
{
	CUresult rc = CUDA_SUCCESS;

	if (stream)
		fd_stream_check(stream, &rc);
	if (rc == CUDA_SUCCESS && n && (!dst || !src))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS && ((dst_dev && !dev_range((uintptr_t)dst, n)) ||
				   (src_dev && !dev_range((uintptr_t)src, n))))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS && n)
		memmove(dst, src, n);
	return fd_ret(sym, rc, "dst=%p src=%p bytes=%zu stream=%p", dst, src, n, stream);
}

#define P(x) ((void *)(uintptr_t)(x))

#define COPY_HTOD(sym)								\
	FD_EXPORT CUresult sym(CUdeviceptr dst, const void *src, size_t n)	\
	{ return copy(#sym, P(dst), 1, src, 0, n, NULL); }
#define COPY_DTOH(sym)								\
	FD_EXPORT CUresult sym(void *dst, CUdeviceptr src, size_t n)		\
	{ return copy(#sym, dst, 0, P(src), 1, n, NULL); }
#define COPY_DTOD(sym)								\
	FD_EXPORT CUresult sym(CUdeviceptr dst, CUdeviceptr src, size_t n)	\
	{ return copy(#sym, P(dst), 1, P(src), 1, n, NULL); }
#define COPY_HTOD_ASYNC(sym)							\
	FD_EXPORT CUresult sym(CUdeviceptr dst, const void *src, size_t n, void *s) \
	{ return copy(#sym, P(dst), 1, src, 0, n, s); }
#define COPY_DTOH_ASYNC(sym)							\
	FD_EXPORT CUresult sym(void *dst, CUdeviceptr src, size_t n, void *s)	\
	{ return copy(#sym, dst, 0, P(src), 1, n, s); }
#define COPY_DTOD_ASYNC(sym)							\
	FD_EXPORT CUresult sym(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s) \
	{ return copy(#sym, P(dst), 1, P(src), 1, n, s); }

COPY_HTOD(cuMemcpyHtoD_v2)
COPY_HTOD(cuMemcpyHtoD_v2_ptds)
COPY_DTOH(cuMemcpyDtoH_v2)
COPY_DTOH(cuMemcpyDtoH_v2_ptds)
COPY_DTOD(cuMemcpyDtoD_v2)
COPY_DTOD(cuMemcpyDtoD_v2_ptds)
COPY_HTOD_ASYNC(cuMemcpyHtoDAsync_v2)
COPY_HTOD_ASYNC(cuMemcpyHtoDAsync_v2_ptsz)
COPY_DTOH_ASYNC(cuMemcpyDtoHAsync_v2)
COPY_DTOH_ASYNC(cuMemcpyDtoHAsync_v2_ptsz)
COPY_DTOD_ASYNC(cuMemcpyDtoDAsync_v2)
COPY_DTOD_ASYNC(cuMemcpyDtoDAsync_v2_ptsz)

/* Unified addressing: either side may be the host's or the device's. */
static CUresult copy_any(const char *sym, CUdeviceptr dst, CUdeviceptr src, size_t n, void *s)
{
	return copy(sym, P(dst), fd_mem_range(dst, 1), P(src), fd_mem_range(src, 1), n, s);
}

FD_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return copy_any("cuMemcpy", dst, src, n, NULL);
}

FD_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return copy_any("cuMemcpy_ptds", dst, src, n, NULL);
}

FD_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s)
{
	return copy_any("cuMemcpyAsync", dst, src, n, s);
}

FD_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s)
{
	return copy_any("cuMemcpyAsync_ptsz", dst, src, n, s);
}

static CUresult set8(const char *sym, CUdeviceptr p, unsigned char v, size_t n, void *stream)
{
	CUresult rc = CUDA_SUCCESS;

	if (stream)
		fd_stream_check(stream, &rc);
	if (rc == CUDA_SUCCESS && !dev_range(p, n))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		memset(P(p), v, n);
	return fd_ret(sym, rc, "ptr=%#llx value=%u bytes=%zu stream=%p", (unsigned long long)p, v,
		      n, stream);
}

FD_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n)
{
	return set8("cuMemsetD8_v2", p, v, n, NULL);
}

FD_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr p, unsigned char v, size_t n)
{
	return set8("cuMemsetD8_v2_ptds", p, v, n, NULL);
}

FD_EXPORT CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, void *s)
{
	return set8("cuMemsetD8Async", p, v, n, s);
}

FD_EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr p, unsigned char v, size_t n, void *s)
{
	return set8("cuMemsetD8Async_ptsz", p, v, n, s);
}

/* -------------------------------------------------------------------------
 * Page-locked host memory: ordinary host memory the fake remembers, made
 * by cuMemHostAlloc or registered.  With unified addressing its device
 * address is its host address.
 */

struct pinned {
	void *p;
	size_t size;
	unsigned int flags;
	int owned;		/* made by cuMemHostAlloc, freed by cuMemFreeHost */
	struct pinned *next;
};

static pthread_mutex_t pinned_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pinned *pinned;

static CUresult pin(void *p, size_t size, unsigned int flags, int owned)
{
	struct pinned *h = calloc(1, sizeof(*h));

	if (!h)
		return CUDA_ERROR_OUT_OF_MEMORY;
	h->p = p;
	h->size = size;
	h->flags = flags;
	h->owned = owned;
	pthread_mutex_lock(&pinned_lock);
	h->next = pinned;
	pinned = h;
	pthread_mutex_unlock(&pinned_lock);
	return CUDA_SUCCESS;
}

/* Forgets the range starting at p, made (owned) or registered; 0 when unknown. */
static int unpin(void *p, int owned)
{
	struct pinned **ph, *h = NULL;

	pthread_mutex_lock(&pinned_lock);
	for (ph = &pinned; *ph; ph = &(*ph)->next) {
		if ((*ph)->p == p && (*ph)->owned == owned) {
			h = *ph;
			*ph = h->next;
			break;
		}
	}
	pthread_mutex_unlock(&pinned_lock);
	free(h);
	return h != NULL;
}

/* The flags of the range holding p; 0 when p is not page-locked. */
static int pinned_flags(const void *p, unsigned int *flags)
{
	int found = 0;

	pthread_mutex_lock(&pinned_lock);
	for (struct pinned *h = pinned; h && !found; h = h->next) {
		if ((const char *)p >= (char *)h->p && (const char *)p < (char *)h->p + h->size) {
			*flags = h->flags;
			found = 1;
		}
	}
	pthread_mutex_unlock(&pinned_lock);
	return found;
}

FD_EXPORT CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
	void *p = NULL;
	CUresult rc;

	if (!pp || size == 0)
		return fd_ret("cuMemHostAlloc", CUDA_ERROR_INVALID_VALUE, NULL);
	if (!fd_current_ctx())
		return fd_ret("cuMemHostAlloc", CUDA_ERROR_INVALID_CONTEXT, NULL);
	if (posix_memalign(&p, 4096, size) != 0)
		return fd_ret("cuMemHostAlloc", CUDA_ERROR_OUT_OF_MEMORY, "size=%zu", size);
	rc = pin(p, size, flags, 1);
	if (rc != CUDA_SUCCESS) {
		free(p);
		return fd_ret("cuMemHostAlloc", rc, "size=%zu", size);
	}
	*pp = p;
	return fd_ret("cuMemHostAlloc", CUDA_SUCCESS, "size=%zu flags=%u ptr=%p", size, flags, p);
}

FD_EXPORT CUresult cuMemFreeHost(void *p)
{
	CUresult rc = unpin(p, 1) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;

	fd_ret("cuMemFreeHost", rc, "ptr=%p", p);
	if (rc == CUDA_SUCCESS)
		free(p);
	return rc;
}

FD_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned int flags)
{
	unsigned int old;

	if (!p || size == 0)
		return fd_ret("cuMemHostRegister_v2", CUDA_ERROR_INVALID_VALUE, NULL);
	if (pinned_flags(p, &old))	/* CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED */
		return fd_ret("cuMemHostRegister_v2", 712, "ptr=%p", p);
	return fd_ret("cuMemHostRegister_v2", pin(p, size, flags, 0), "ptr=%p size=%zu flags=%u",
		      p, size, flags);
}

FD_EXPORT CUresult cuMemHostUnregister(void *p)
{
	/* CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED */
	return fd_ret("cuMemHostUnregister", unpin(p, 0) ? CUDA_SUCCESS : 713, "ptr=%p", p);
}

FD_EXPORT CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
	if (!flags || !pinned_flags(p, flags))
		return fd_ret("cuMemHostGetFlags", CUDA_ERROR_INVALID_VALUE, "ptr=%p", p);
	return fd_ret("cuMemHostGetFlags", CUDA_SUCCESS, "ptr=%p flags=%u", p, *flags);
}

FD_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *dptr, void *p, unsigned int flags)
{
	unsigned int f;

	if (!dptr || flags != 0 || !pinned_flags(p, &f))
		return fd_ret("cuMemHostGetDevicePointer_v2", CUDA_ERROR_INVALID_VALUE, "ptr=%p",
			      p);
	*dptr = (CUdeviceptr)(uintptr_t)p;
	return fd_ret("cuMemHostGetDevicePointer_v2", CUDA_SUCCESS, "ptr=%p", p);
}

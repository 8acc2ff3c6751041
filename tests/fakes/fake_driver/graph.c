// SPDX-License-Identifier: BSD-2-Clause
/*
 * Graphs in the fake driver: built node by node or captured from a stream,
 * instantiated, launched.  Only kernel and empty nodes are kept; a graph
 * launch runs nothing, like a kernel launch.  Test code.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "tests/fakes/fake_driver/fd_module.h"

#define GRAPH_NODES	1024

/* CUgraphNodeType */
enum { NODE_KERNEL = 0, NODE_EMPTY = 5 };
/* CUstreamCaptureStatus */
enum { CAPTURE_NONE = 0, CAPTURE_ACTIVE = 1 };

struct fd_node {
	uint32_t magic;
	int type;
	struct fd_graph *graph;
	struct fd_func *func;
	unsigned int grid[3], block[3], shared;
};

struct fd_graph {
	uint32_t magic;
	size_t n;
	struct fd_node *nodes[GRAPH_NODES];
};

struct fd_exec {
	uint32_t magic;
	size_t nodes;
	size_t kernels;
};

/* CUDA_KERNEL_NODE_PARAMS (v2) */
struct kernel_node_params {
	void *func;
	unsigned int grid[3];
	unsigned int block[3];
	unsigned int shared;
	void **params;
	void **extra;
	void *kern;
	void *ctx;
};

/* CUDA_GRAPH_INSTANTIATE_PARAMS */
struct instantiate_params {
	uint64_t flags;
	void *upload_stream;
	void *err_node;
	int result;
};

static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t next_capture = 1;
static __thread int capture_mode;	/* cuThreadExchangeStreamCaptureMode */

static struct fd_graph *graph_check(void *g)
{
	struct fd_graph *gr = g;

	return gr && gr->magic == FD_MAGIC_GRAPH ? gr : NULL;
}

static struct fd_exec *exec_check(void *e)
{
	struct fd_exec *ex = e;

	return ex && ex->magic == FD_MAGIC_EXEC ? ex : NULL;
}

static struct fd_graph *graph_new(void)
{
	struct fd_graph *g = calloc(1, sizeof(*g));

	if (g)
		g->magic = FD_MAGIC_GRAPH;
	return g;
}

static struct fd_node *node_add(struct fd_graph *g, int type)
{
	struct fd_node *n = NULL;

	pthread_mutex_lock(&graph_lock);
	if (g->n < GRAPH_NODES && (n = calloc(1, sizeof(*n))) != NULL) {
		n->magic = FD_MAGIC_NODE;
		n->type = type;
		n->graph = g;
		g->nodes[g->n++] = n;
	}
	pthread_mutex_unlock(&graph_lock);
	return n;
}

CUresult fd_capture_kernel(struct fd_stream *s, struct fd_func *f, const unsigned int grid[3],
			   const unsigned int block[3], unsigned int shared)
{
	struct fd_node *n = node_add(s->capture, NODE_KERNEL);

	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	n->func = f;
	for (int i = 0; i < 3; i++) {
		n->grid[i] = grid[i];
		n->block[i] = block[i];
	}
	n->shared = shared;
	return CUDA_SUCCESS;
}

FD_EXPORT CUresult cuGraphCreate(void **pg, unsigned int flags)
{
	if (!pg || flags != 0)
		return fd_ret("cuGraphCreate", CUDA_ERROR_INVALID_VALUE, NULL);
	*pg = graph_new();
	if (!*pg)
		return fd_ret("cuGraphCreate", CUDA_ERROR_OUT_OF_MEMORY, NULL);
	return fd_ret("cuGraphCreate", CUDA_SUCCESS, "graph=%p", *pg);
}

FD_EXPORT CUresult cuGraphDestroy(void *graph)
{
	struct fd_graph *g = graph_check(graph);

	if (!g)
		return fd_ret("cuGraphDestroy", CUDA_ERROR_INVALID_VALUE, "graph=%p", graph);
	g->magic = 0;
	return fd_ret("cuGraphDestroy", CUDA_SUCCESS, "graph=%p", graph);
}

FD_EXPORT CUresult cuGraphAddKernelNode_v2(void **pnode, void *graph, void *const *deps,
					   size_t n_deps, const struct kernel_node_params *p)
{
	struct fd_graph *g = graph_check(graph);
	struct fd_func *f;
	struct fd_node *n;

	(void)deps;
	if (!pnode || !g || !p)
		return fd_ret("cuGraphAddKernelNode_v2", CUDA_ERROR_INVALID_VALUE, NULL);
	f = fd_func_check(p->func ? p->func : p->kern);
	if (!f)
		return fd_ret("cuGraphAddKernelNode_v2", CUDA_ERROR_INVALID_HANDLE, NULL);
	n = node_add(g, NODE_KERNEL);
	if (!n)
		return fd_ret("cuGraphAddKernelNode_v2", CUDA_ERROR_OUT_OF_MEMORY, NULL);
	n->func = f;
	for (int i = 0; i < 3; i++) {
		n->grid[i] = p->grid[i];
		n->block[i] = p->block[i];
	}
	n->shared = p->shared;
	*pnode = n;
	return fd_ret("cuGraphAddKernelNode_v2", CUDA_SUCCESS, "graph=%p kernel=%s deps=%zu", graph,
		      f->name, n_deps);
}

FD_EXPORT CUresult cuGraphAddEmptyNode(void **pnode, void *graph, void *const *deps, size_t n_deps)
{
	struct fd_graph *g = graph_check(graph);
	struct fd_node *n;

	(void)deps;
	if (!pnode || !g)
		return fd_ret("cuGraphAddEmptyNode", CUDA_ERROR_INVALID_VALUE, NULL);
	n = node_add(g, NODE_EMPTY);
	if (!n)
		return fd_ret("cuGraphAddEmptyNode", CUDA_ERROR_OUT_OF_MEMORY, NULL);
	*pnode = n;
	return fd_ret("cuGraphAddEmptyNode", CUDA_SUCCESS, "graph=%p deps=%zu", graph, n_deps);
}

FD_EXPORT CUresult cuGraphGetNodes(void *graph, void **nodes, size_t *count)
{
	struct fd_graph *g = graph_check(graph);

	if (!g || !count)
		return fd_ret("cuGraphGetNodes", CUDA_ERROR_INVALID_VALUE, NULL);
	pthread_mutex_lock(&graph_lock);
	if (nodes)
		for (size_t i = 0; i < *count && i < g->n; i++)
			nodes[i] = g->nodes[i];
	*count = g->n;
	pthread_mutex_unlock(&graph_lock);
	return fd_ret("cuGraphGetNodes", CUDA_SUCCESS, "graph=%p count=%zu", graph, *count);
}

FD_EXPORT CUresult cuGraphNodeGetType(void *node, int *type)
{
	struct fd_node *n = node;

	if (!n || n->magic != FD_MAGIC_NODE || !type)
		return fd_ret("cuGraphNodeGetType", CUDA_ERROR_INVALID_VALUE, NULL);
	*type = n->type;
	return fd_ret("cuGraphNodeGetType", CUDA_SUCCESS, "node=%p type=%d", node, *type);
}

static CUresult instantiate(const char *sym, void **pexec, void *graph, uint64_t flags)
{
	struct fd_graph *g = graph_check(graph);
	struct fd_exec *e;

	if (!pexec || !g)
		return fd_ret(sym, CUDA_ERROR_INVALID_VALUE, "graph=%p", graph);
	e = calloc(1, sizeof(*e));
	if (!e)
		return fd_ret(sym, CUDA_ERROR_OUT_OF_MEMORY, NULL);
	e->magic = FD_MAGIC_EXEC;
	pthread_mutex_lock(&graph_lock);
	e->nodes = g->n;
	for (size_t i = 0; i < g->n; i++)
		e->kernels += g->nodes[i]->type == NODE_KERNEL;
	pthread_mutex_unlock(&graph_lock);
	*pexec = e;
	return fd_ret(sym, CUDA_SUCCESS, "graph=%p flags=%llu exec=%p nodes=%zu", graph,
		      (unsigned long long)flags, *pexec, e->nodes);
}

FD_EXPORT CUresult cuGraphInstantiateWithFlags(void **pexec, void *graph, unsigned long long flags)
{
	return instantiate("cuGraphInstantiateWithFlags", pexec, graph, flags);
}

static CUresult instantiate_params(const char *sym, void **pexec, void *graph,
				   struct instantiate_params *p)
{
	CUresult rc;

	if (!p)
		return fd_ret(sym, CUDA_ERROR_INVALID_VALUE, NULL);
	rc = instantiate(sym, pexec, graph, p->flags);
	p->err_node = NULL;
	p->result = rc == CUDA_SUCCESS ? 0 : 1;	/* CUDA_GRAPH_INSTANTIATE_SUCCESS / _ERROR */
	return rc;
}

FD_EXPORT CUresult cuGraphInstantiateWithParams(void **pexec, void *graph,
						struct instantiate_params *p)
{
	return instantiate_params("cuGraphInstantiateWithParams", pexec, graph, p);
}

FD_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(void **pexec, void *graph,
						     struct instantiate_params *p)
{
	return instantiate_params("cuGraphInstantiateWithParams_ptsz", pexec, graph, p);
}

FD_EXPORT CUresult cuGraphExecDestroy(void *exec)
{
	struct fd_exec *e = exec_check(exec);

	if (!e)
		return fd_ret("cuGraphExecDestroy", CUDA_ERROR_INVALID_VALUE, "exec=%p", exec);
	e->magic = 0;
	return fd_ret("cuGraphExecDestroy", CUDA_SUCCESS, "exec=%p", exec);
}

static CUresult graph_run(const char *sym, void *exec, void *stream)
{
	struct fd_exec *e = exec_check(exec);
	struct fd_stream *s;
	CUresult rc;

	s = fd_stream_check(stream, &rc);
	if (rc == CUDA_SUCCESS && !e)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS && !s && !fd_current_ctx())
		rc = CUDA_ERROR_INVALID_CONTEXT;
	if (rc == CUDA_SUCCESS && s && s->capture)
		rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	return fd_ret(sym, rc, "exec=%p stream=%p nodes=%zu kernels=%zu", exec, stream,
		      e ? e->nodes : 0, e ? e->kernels : 0);
}

FD_EXPORT CUresult cuGraphLaunch(void *exec, void *stream)
{
	return graph_run("cuGraphLaunch", exec, stream);
}

FD_EXPORT CUresult cuGraphLaunch_ptsz(void *exec, void *stream)
{
	return graph_run("cuGraphLaunch_ptsz", exec, stream);
}

FD_EXPORT CUresult cuGraphUpload(void *exec, void *stream)
{
	return graph_run("cuGraphUpload", exec, stream);
}

FD_EXPORT CUresult cuGraphUpload_ptsz(void *exec, void *stream)
{
	return graph_run("cuGraphUpload_ptsz", exec, stream);
}

/* -------------------------------------------------------------------------
 * Stream capture.  Only real streams can be captured, not the legacy one.
 */

static CUresult begin_capture(const char *sym, void *stream, int mode)
{
	CUresult rc;
	struct fd_stream *s = fd_stream_check(stream, &rc);

	if (rc == CUDA_SUCCESS && !s)
		rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (rc == CUDA_SUCCESS && s->capture)
		rc = CUDA_ERROR_ILLEGAL_STATE;
	if (rc == CUDA_SUCCESS) {
		s->capture = graph_new();
		if (!s->capture)
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		s->capture_mode = mode;
		s->capture_id = atomic_fetch_add(&next_capture, 1);
	}
	return fd_ret(sym, rc, "stream=%p mode=%d", stream, mode);
}

FD_EXPORT CUresult cuStreamBeginCapture_v2(void *stream, int mode)
{
	return begin_capture("cuStreamBeginCapture_v2", stream, mode);
}

FD_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(void *stream, int mode)
{
	return begin_capture("cuStreamBeginCapture_v2_ptsz", stream, mode);
}

static CUresult end_capture(const char *sym, void *stream, void **pgraph)
{
	CUresult rc;
	struct fd_stream *s = fd_stream_check(stream, &rc);

	if (rc == CUDA_SUCCESS && !pgraph)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS && (!s || !s->capture))
		rc = CUDA_ERROR_ILLEGAL_STATE;
	if (rc == CUDA_SUCCESS) {
		*pgraph = s->capture;
		s->capture = NULL;
	}
	return fd_ret(sym, rc, "stream=%p graph=%p nodes=%zu", stream,
		      rc == CUDA_SUCCESS ? *pgraph : NULL,
		      rc == CUDA_SUCCESS ? ((struct fd_graph *)*pgraph)->n : 0);
}

FD_EXPORT CUresult cuStreamEndCapture(void *stream, void **pgraph)
{
	return end_capture("cuStreamEndCapture", stream, pgraph);
}

FD_EXPORT CUresult cuStreamEndCapture_ptsz(void *stream, void **pgraph)
{
	return end_capture("cuStreamEndCapture_ptsz", stream, pgraph);
}

static CUresult capture_info(const char *sym, void *stream, int *status, uint64_t *id,
			     void **graph, const void **deps, const void **edges, size_t *n_deps)
{
	CUresult rc;
	struct fd_stream *s = fd_stream_check(stream, &rc);

	if (rc == CUDA_SUCCESS && !status)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc != CUDA_SUCCESS)
		return fd_ret(sym, rc, "stream=%p", stream);
	*status = s && s->capture ? CAPTURE_ACTIVE : CAPTURE_NONE;
	if (id)
		*id = s && s->capture ? s->capture_id : 0;
	if (graph)
		*graph = s ? s->capture : NULL;
	/* Captured nodes are kept in order, not as a dependency graph. */
	if (deps)
		*deps = NULL;
	if (edges)
		*edges = NULL;
	if (n_deps)
		*n_deps = 0;
	return fd_ret(sym, CUDA_SUCCESS, "stream=%p status=%d", stream, *status);
}

FD_EXPORT CUresult cuStreamIsCapturing(void *stream, int *status)
{
	return capture_info("cuStreamIsCapturing", stream, status, NULL, NULL, NULL, NULL, NULL);
}

FD_EXPORT CUresult cuStreamIsCapturing_ptsz(void *stream, int *status)
{
	return capture_info("cuStreamIsCapturing_ptsz", stream, status, NULL, NULL, NULL, NULL,
			    NULL);
}

#define CAPTURE_INFO_V3(sym)							\
	FD_EXPORT CUresult sym(void *stream, int *status, uint64_t *id, void **graph,	\
			       const void **deps, const void **edges, size_t *n)	\
	{									\
		return capture_info(#sym, stream, status, id, graph, deps, edges, n); \
	}
CAPTURE_INFO_V3(cuStreamGetCaptureInfo_v3)
CAPTURE_INFO_V3(cuStreamGetCaptureInfo_v3_ptsz)

#define CAPTURE_INFO_V2(sym)							\
	FD_EXPORT CUresult sym(void *stream, int *status, uint64_t *id, void **graph,	\
			       const void **deps, size_t *n)				\
	{									\
		return capture_info(#sym, stream, status, id, graph, deps, NULL, n); \
	}
CAPTURE_INFO_V2(cuStreamGetCaptureInfo_v2)
CAPTURE_INFO_V2(cuStreamGetCaptureInfo_v2_ptsz)

FD_EXPORT CUresult cuThreadExchangeStreamCaptureMode(int *mode)
{
	int old;

	if (!mode)
		return fd_ret("cuThreadExchangeStreamCaptureMode", CUDA_ERROR_INVALID_VALUE, NULL);
	old = capture_mode;
	capture_mode = *mode;
	*mode = old;
	return fd_ret("cuThreadExchangeStreamCaptureMode", CUDA_SUCCESS, "mode=%d old=%d",
		      capture_mode, old);
}

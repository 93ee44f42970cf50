/*
 * tandem.h: the public C API of libtandem, Tandem's in-process collective
 * engine. This is the only header a user or a framework binding needs.
 *
 * Conventions
 *  - Every call returns a tandem_result_t. On anything but TANDEM_SUCCESS,
 *    tandem_last_error() returns a readable, thread-local message that says
 *    what was expected, what was found and what to do.
 *  - No C++ exception ever crosses this boundary.
 *  - Counts are element counts, not bytes, unless a name says "bytes".
 *  - Collectives are called by every rank of the world in the same order
 *    (as with MPI). The named, negotiated runtime (tandem_enqueue and
 *    friends, below) lifts that restriction for frameworks.
 *  - Every blocking call ends: a lost peer or a timeout is an error, never
 *    a hang (see TANDEM_TIMEOUT in docs/settings.md).
 */
#ifndef TANDEM_TANDEM_H
#define TANDEM_TANDEM_H

#include <stddef.h>
#include <stdint.h>

#if defined(TANDEM_BUILDING_LIBRARY)
#define TANDEM_API __attribute__((visibility("default")))
#else
#define TANDEM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The enums a caller passes in are int-sized in C and C++ alike, and in C++
 * they take `int` as their fixed underlying type: a C caller may pass any int
 * in an enum parameter, and the engine (C++) must be able to hold and refuse
 * an unknown value, which an enum without a fixed type cannot hold. */
#ifdef __cplusplus
#define TANDEM_ENUM_INT_ : int
#else
#define TANDEM_ENUM_INT_
#endif

/* ------------------------------------------------------------------ results */

/* Keep values stable: the Python package reads names and values through
 * tandem_result_name(), never from a copy. */
typedef enum TANDEM_ENUM_INT_ {
  TANDEM_SUCCESS = 0,
  TANDEM_ERR_INVALID_ARGUMENT = 1, /* bad pointer, type, op, root, count */
  TANDEM_ERR_NOT_INITIALIZED = 2,  /* tandem_init() not called (or failed) */
  TANDEM_ERR_BOOTSTRAP = 3,        /* PMIx / rendezvous could not be reached */
  TANDEM_ERR_PEER_LOST = 4,        /* a peer died or closed its connection */
  TANDEM_ERR_TIMEOUT = 5,          /* a peer did not answer in time */
  TANDEM_ERR_MISMATCH = 6,         /* ranks disagree on a collective's shape */
  TANDEM_ERR_DUPLICATE_NAME = 7,   /* a tensor name already in flight */
  TANDEM_ERR_UNSUPPORTED = 8,      /* valid request this build cannot do */
  TANDEM_ERR_IN_PROGRESS = 9,      /* poll: not finished yet (not an error) */
  TANDEM_ERR_ABORTED = 10,         /* engine shut down or aborted */
  TANDEM_ERR_SYSTEM = 11,          /* an OS call failed (errno in message) */
  TANDEM_ERR_INTERNAL = 12,        /* a bug: please report with the message */
  TANDEM_RESULT_COUNT_ = 13
} tandem_result_t;

/* Short stable identifier ("TANDEM_ERR_TIMEOUT") for a result, or NULL when
 * the value is not a result. Lets bindings enumerate codes without copies. */
TANDEM_API const char *tandem_result_name(int result);
/* Human description of a result code ("a peer did not answer in time"). */
TANDEM_API const char *tandem_result_string(tandem_result_t result);
/* The exception class a binding raises for a result ("TimeoutError"), from
 * the engine's one error table; NULL for TANDEM_SUCCESS and non-results. */
TANDEM_API const char *tandem_result_class(int result);
/* 1 when a result blames the call's own arguments (TANDEM_ERR_INVALID_ARGUMENT,
 * TANDEM_ERR_DUPLICATE_NAME): bindings that follow Horovod also raise
 * ValueError for these. 0 otherwise. */
TANDEM_API int tandem_result_is_argument_error(int result);
/* The message of the last failed call on this thread ("" if none). */
TANDEM_API const char *tandem_last_error(void);
/* Library version, "MAJOR.MINOR.PATCH". */
TANDEM_API const char *tandem_version(void);

/* -------------------------------------------------------------- data types */

typedef enum TANDEM_ENUM_INT_ {
  TANDEM_UINT8 = 0,
  TANDEM_INT8 = 1,
  TANDEM_INT32 = 2,
  TANDEM_INT64 = 3,
  TANDEM_FLOAT16 = 4,  /* IEEE half; accumulated in float32 */
  TANDEM_BFLOAT16 = 5, /* accumulated in float32 */
  TANDEM_FLOAT32 = 6,
  TANDEM_FLOAT64 = 7,
  TANDEM_BOOL = 8, /* one byte, 0 or 1; SUM/MAX = or, MIN/PRODUCT = and */
  TANDEM_DTYPE_COUNT_ = 9
} tandem_dtype_t;

typedef enum TANDEM_ENUM_INT_ {
  TANDEM_SUM = 0,
  TANDEM_AVERAGE = 1, /* sum divided by the number of contributing ranks */
  TANDEM_MIN = 2,
  TANDEM_MAX = 3,
  TANDEM_PRODUCT = 4,
  TANDEM_ADASUM = 5, /* allreduce only: Horovod's adaptive summation, floating
                        types, a power-of-two number of ranks (docs/runtime.md) */
  TANDEM_OP_COUNT_ = 6
} tandem_op_t;
#undef TANDEM_ENUM_INT_

/* Size in bytes of one element, 0 for an unknown type. */
TANDEM_API size_t tandem_dtype_size(int dtype);

/* ---------------------------------------------------------- init, identity */

/* Joins the job. Bootstrap is chosen from the environment:
 *  - PMIx when the process was started by srun with PMIx (PMIX_RANK set);
 *  - the TCP rendezvous store when TANDEM_RENDEZVOUS_ADDR, TANDEM_RANK and
 *    TANDEM_SIZE are set (tandem-run and other launchers);
 *  - otherwise a world of one rank.
 * Calling it again after success is a no-op. */
TANDEM_API tandem_result_t tandem_init(void);
/* Leaves the job and releases every resource. Safe to call twice. */
TANDEM_API tandem_result_t tandem_finalize(void);
TANDEM_API int tandem_is_initialized(void);

TANDEM_API tandem_result_t tandem_rank(int *rank);
TANDEM_API tandem_result_t tandem_size(int *size);
TANDEM_API tandem_result_t tandem_local_rank(int *local_rank);
TANDEM_API tandem_result_t tandem_local_size(int *local_size);
/* Index of this rank's node among the nodes of the job, and their count. */
TANDEM_API tandem_result_t tandem_cross_rank(int *cross_rank);
TANDEM_API tandem_result_t tandem_cross_size(int *cross_size);

/* ----------------------------------------------------------------- elastic */

/* An elastic launch (srun --horovod=elastic, tandem-run --elastic) runs a
 * membership service that outlives every rank; tandem_init then joins the
 * job's next generation through it (rank and size may differ from the last
 * one), and tandem_finalize followed by tandem_init is how a rank moves to the
 * next generation after a failure or when new processes join. tandem_init
 * fails with TANDEM_ERR_ABORTED and the service's message when this process
 * was removed from the job or the job cannot go on (docs/elastic.md). */

/* 1 when this process was started by an elastic launch (TANDEM_ELASTIC_ADDR
 * is set), else 0. */
TANDEM_API int tandem_elastic_enabled(void);
/* Waits up to timeout_ms for the service to announce that processes asked to
 * join (Horovod's hosts-updated notification): TANDEM_SUCCESS with a
 * strictly increasing timestamp (seconds) and the kind (2: added, Horovod's
 * HostUpdateResult), or TANDEM_ERR_IN_PROGRESS when none came. Announcements
 * queue until taken. Thread-safe; needs no tandem_init. */
TANDEM_API tandem_result_t tandem_elastic_wait_update(int timeout_ms, int64_t *timestamp,
                                                      int *kind);
/* Tells the service this process finished its work, so that its exit does
 * not count as a failure (a process that exits without it, or dies, has its
 * node excluded from later generations, as Horovod blacklists the host of a
 * failed worker). A no-op outside an elastic launch. */
TANDEM_API tandem_result_t tandem_elastic_done(void);

/* ----------------------------------------------- blocking collectives (host) */

/* In-place operation: pass the same pointer as send and recv; any other
 * overlap of send and recv is not allowed. A count of 0 is valid and
 * synchronises nothing but argument checks. Argument errors are found
 * before anything is sent, but only on the rank that made them: a rank whose
 * peers called with valid arguments leaves them waiting until TANDEM_TIMEOUT.
 * Integer AVERAGE truncates toward zero; AVERAGE is not defined for bool.
 * Results are bitwise identical on every rank and reproducible for a given
 * layout: contributions are combined in a fixed rank order (float16 and
 * bfloat16 in float32). After a lost peer or a timeout every later
 * collective fails with the same error: the job must restart. */

/* recv = postscale * op_{ranks}(prescale * send). Scales apply to floating
 * types only and must be 1.0 for integer types. */
TANDEM_API tandem_result_t tandem_allreduce(const void *send, void *recv, size_t count,
                                            tandem_dtype_t dtype, tandem_op_t op, double prescale,
                                            double postscale);
TANDEM_API tandem_result_t tandem_broadcast(void *buf, size_t count, tandem_dtype_t dtype,
                                            int root);
/* recv holds size * count elements, rank r's block at offset r * count. */
TANDEM_API tandem_result_t tandem_allgather(const void *send, size_t count, void *recv,
                                            tandem_dtype_t dtype);
/* recv_counts[r] elements from rank r, packed in rank order. send_count must
 * equal recv_counts[my rank]. */
TANDEM_API tandem_result_t tandem_allgatherv(const void *send, size_t send_count, void *recv,
                                             const size_t *recv_counts, tandem_dtype_t dtype);
/* count elements to every rank; send and recv hold size * count. */
TANDEM_API tandem_result_t tandem_alltoall(const void *send, void *recv, size_t count,
                                           tandem_dtype_t dtype);
/* send_counts[r] elements go to rank r, recv_counts[r] come from it, packed
 * in rank order on both sides. */
TANDEM_API tandem_result_t tandem_alltoallv(const void *send, const size_t *send_counts, void *recv,
                                            const size_t *recv_counts, tandem_dtype_t dtype);
/* Reduces sum(recv_counts) elements of send; rank r receives the block of
 * recv_counts[r] elements at offset sum(recv_counts[0..r)). */
TANDEM_API tandem_result_t tandem_reducescatter(const void *send, void *recv,
                                                const size_t *recv_counts, tandem_dtype_t dtype,
                                                tandem_op_t op);
TANDEM_API tandem_result_t tandem_barrier(void);

/* --------------------------------------------- nonblocking collectives (host) */

/* Each i-call starts the same collective as its blocking form and returns a
 * request at once; buffers must stay valid until the request completes.
 * Requests complete in the order they were started. */
typedef struct tandem_request_s *tandem_request_t;

TANDEM_API tandem_result_t tandem_iallreduce(const void *send, void *recv, size_t count,
                                             tandem_dtype_t dtype, tandem_op_t op, double prescale,
                                             double postscale, tandem_request_t *request);
TANDEM_API tandem_result_t tandem_ibroadcast(void *buf, size_t count, tandem_dtype_t dtype,
                                             int root, tandem_request_t *request);
TANDEM_API tandem_result_t tandem_iallgather(const void *send, size_t count, void *recv,
                                             tandem_dtype_t dtype, tandem_request_t *request);
/* TANDEM_SUCCESS when done (then the request's own result is returned),
 * TANDEM_ERR_IN_PROGRESS while running. */
TANDEM_API tandem_result_t tandem_test(tandem_request_t request);
/* Blocks until done; returns the operation's result. */
TANDEM_API tandem_result_t tandem_wait(tandem_request_t request);
/* Releases a completed request. Freeing a running request waits for it. */
TANDEM_API void tandem_request_free(tandem_request_t request);

/* ------------------------------------------- shared-memory buffers (host) */

/* Allocates `bytes` (page aligned) in this node's shared-memory segment.
 * A collective whose send buffer lies in such a buffer is read by the other
 * ranks of the node where it lies, skipping one copy; in-place allreduce on
 * it is the fastest host path. Each rank may hold up to
 * TANDEM_SHM_ARENA_BYTES (default 64 MiB) of them; larger requests fail with
 * TANDEM_ERR_INVALID_ARGUMENT, a full /dev/shm with TANDEM_ERR_SYSTEM.
 * Valid until tandem_free_shared() or tandem_finalize(). */
TANDEM_API tandem_result_t tandem_alloc_shared(size_t bytes, void **ptr);
/* Releases a buffer from tandem_alloc_shared(); NULL is a no-op. */
TANDEM_API tandem_result_t tandem_free_shared(void *ptr);

/* ------------------------------------------------------------- GPU (NCCL) */

/* 1 when GPU tensors can be used in this process (CUDA runtime and NCCL
 * load, a driver and a GPU are present), else 0. When reason is not NULL it
 * receives a thread-local string saying why not ("no NVIDIA driver on this
 * node ...") or which GPU path is in use. Loads the libraries on first call;
 * never fails because of a missing GPU. Returns -1 only for a bad setting
 * such as TANDEM_GPU_DEVICE=x; reason then holds that message. */
TANDEM_API int tandem_gpu_available(const char **reason);

/* ------------------------------------------------ runtime (named tensors) */

/* The negotiated runtime: one named background thread per process takes
 * named operations, agrees with the other ranks on which are ready
 * everywhere (ranks may enqueue in different orders and at different times),
 * checks that they match, fuses small ones, runs them and completes their
 * handles. This is the API the framework bindings (tandem.torch) use. It
 * starts with tandem_init() and stops with tandem_finalize().
 *
 * Designed for ctypes: plain ints, doubles, pointers and one flat struct.
 *
 * Lifetime of buffers: input and output pointers given to an enqueue call
 * must stay valid and untouched until the handle completes (poll returns
 * anything but TANDEM_ERR_IN_PROGRESS, or wait returns).
 *
 * Outputs whose size is only known after negotiation (allgather, alltoall,
 * reducescatter) are allocated by the engine: once the handle is done, read
 * the shape with tandem_handle_output_shape() and copy the bytes out with
 * tandem_handle_copy_output() (or read them in place through
 * tandem_handle_output_data()); the memory lives until tandem_handle_release().
 * Allreduce and broadcast write into the caller's output (which may be the
 * input pointer: in place).
 *
 * Names: a name identifies the same tensor on every rank. Enqueuing a name
 * that is still in flight in the same process set fails at once with
 * TANDEM_ERR_DUPLICATE_NAME.
 *
 * Errors of the operation itself (a mismatch between ranks, a lost peer) are
 * reported by poll/wait as the result code, with the message available from
 * tandem_handle_error() (and tandem_last_error() on the calling thread).
 * A mismatch fails that tensor on every rank; the job goes on. A lost peer
 * fails every pending handle with the data path's error. */

/* An operation in flight. Positive; 0 is never a valid handle. */
typedef int64_t tandem_handle_t;

/* The global process set (every rank) has id 0. */
#define TANDEM_GLOBAL_PROCESS_SET 0
/* Device field of tandem_tensor_t: host memory. A CUDA device index (>= 0)
 * marks a GPU tensor: input and output are device pointers on that GPU
 * (which must be the GPU this rank uses: local rank, or TANDEM_GPU_DEVICE).
 * GPU tensors are negotiated like host ones (the device must agree across
 * ranks) and moved by NCCL; where the GPU path is not usable on some rank
 * (no driver, no GPU, no NCCL, a build without CUDA headers) they fail on
 * every rank with TANDEM_ERR_UNSUPPORTED naming the ranks and the reason
 * (see tandem_gpu_available()), and the job goes on. Engine-allocated
 * results of GPU tensors live in device memory: tandem_handle_output_data()
 * gives a device pointer and tandem_handle_copy_output() copies with
 * cudaMemcpy (dst may be device or host memory). */
#define TANDEM_DEVICE_CPU (-1)

/* The CUDA stream (a cudaStream_t; NULL = the legacy default stream) on
 * which the GPU tensors this thread enqueues from now on are ordered: the
 * operation starts after the work already queued on that stream, and work
 * queued on it after the handle completes sees the result. Per calling
 * thread; host tensors ignore it. Bindings call it before enqueuing CUDA
 * tensors, e.g. with torch.cuda.current_stream().cuda_stream. */
TANDEM_API tandem_result_t tandem_set_device_stream(void *stream);

/* One tensor as the enqueue calls see it. Shapes are row-major, ndim may be
 * 0 (a scalar: one element). */
typedef struct {
  const char *name;     /* NUL-terminated, non-empty */
  const void *input;    /* may be NULL when the tensor has 0 elements */
  void *output;         /* allreduce, broadcast: where the result goes
                           (may equal input). NULL for allgather, alltoall,
                           reducescatter: the engine allocates. */
  int32_t dtype;        /* tandem_dtype_t */
  int32_t device;       /* TANDEM_DEVICE_CPU or a CUDA device index */
  int32_t ndim;         /* number of entries in shape, 0..32 */
  const int64_t *shape; /* ndim sizes, each >= 0 */
} tandem_tensor_t;

/* output = postscale * op_{ranks}(prescale * input), over the ranks of the
 * process set that have not joined (joined ranks contribute nothing; AVERAGE
 * divides by the number of ranks of the set). Scales must be 1.0 for
 * integer and bool types. */
TANDEM_API tandem_result_t tandem_enqueue_allreduce(const tandem_tensor_t *tensor, tandem_op_t op,
                                                    double prescale, double postscale,
                                                    int process_set, tandem_handle_t *handle);
/* Several allreduces completed together under one handle: they are
 * negotiated as a group (none runs before all are ready everywhere) and
 * fused where they share a dtype. Names must be distinct. */
TANDEM_API tandem_result_t tandem_enqueue_grouped_allreduce(const tandem_tensor_t *tensors,
                                                            int count, tandem_op_t op,
                                                            double prescale, double postscale,
                                                            int process_set,
                                                            tandem_handle_t *handle);
/* root's input is copied into every rank's output; root is a rank of the
 * global world and must belong to the process set. */
TANDEM_API tandem_result_t tandem_enqueue_broadcast(const tandem_tensor_t *tensor, int root,
                                                    int process_set, tandem_handle_t *handle);
/* Concatenates every rank's tensor along the first dimension, in rank order
 * of the process set. First dimensions may differ; the other dimensions
 * must agree. Output: engine allocated, shape [sum of first dims, ...]. */
TANDEM_API tandem_result_t tandem_enqueue_allgather(const tandem_tensor_t *tensor, int process_set,
                                                    tandem_handle_t *handle);
/* Rows [sum(splits[0..r)), +splits[r]) of the first dimension go to the
 * r-th rank of the process set. splits has nsplits == set size entries
 * summing to shape[0]; splits == NULL with nsplits == 0 means equal parts
 * (shape[0] must then divide evenly). Output: engine allocated, the blocks
 * received from each rank in rank order; the received row counts are read
 * with tandem_handle_received_splits(). */
TANDEM_API tandem_result_t tandem_enqueue_alltoall(const tandem_tensor_t *tensor,
                                                   const int64_t *splits, int nsplits,
                                                   int process_set, tandem_handle_t *handle);
/* Reduces the tensor over the ranks and scatters the first dimension: the
 * r-th rank of the set gets shape[0] / n rows, plus one if r < shape[0] % n.
 * Output: engine allocated. op and scales as for allreduce. */
TANDEM_API tandem_result_t tandem_enqueue_reducescatter(const tandem_tensor_t *tensor,
                                                        tandem_op_t op, double prescale,
                                                        double postscale, int process_set,
                                                        tandem_handle_t *handle);
/* Completes when every rank of the set has reached its barrier. */
TANDEM_API tandem_result_t tandem_enqueue_barrier(int process_set, tandem_handle_t *handle);
/* This rank has no more data for this epoch: from now on it contributes
 * nothing and blocks nobody (it takes part in other ranks' allreduces with
 * nothing; allgather/broadcast/alltoall/reducescatter enqueued by the other
 * ranks while someone has joined fail with TANDEM_ERR_UNSUPPORTED, as in
 * Horovod). Completes when every rank has joined; then
 * tandem_handle_join_result() gives the last rank to join. Global set only. */
TANDEM_API tandem_result_t tandem_enqueue_join(int device, tandem_handle_t *handle);

/* TANDEM_ERR_IN_PROGRESS while running; otherwise the operation's result. */
TANDEM_API tandem_result_t tandem_handle_poll(tandem_handle_t handle);
/* Blocks until the operation is done or timeout_seconds pass (< 0: no
 * limit of its own; it still ends, as the engine fails every operation when
 * a peer is lost or times out). Returns the operation's result, or
 * TANDEM_ERR_IN_PROGRESS when this wait's own timeout passed first. */
TANDEM_API tandem_result_t tandem_handle_wait(tandem_handle_t handle, double timeout_seconds);
/* Called once when the operation is done, with its result, on the engine's
 * background thread (or at once on the calling thread when it is already
 * done). It must not block on other handles. One callback per handle. */
typedef void (*tandem_callback_t)(tandem_handle_t handle, int result, void *user_data);
TANDEM_API tandem_result_t tandem_handle_set_callback(tandem_handle_t handle,
                                                      tandem_callback_t callback, void *user_data);
/* The message of a failed operation ("" when it succeeded or is running).
 * Valid until the handle is released. */
TANDEM_API const char *tandem_handle_error(tandem_handle_t handle);
/* Engine-allocated output of tensor `index` of a done handle (0 except for
 * grouped calls): its ndim and shape (shape has room for max_ndim entries),
 * a pointer to its bytes and its byte count, or a copy into dst (bytes must
 * equal the output's byte count). */
TANDEM_API tandem_result_t tandem_handle_output_shape(tandem_handle_t handle, int index,
                                                      int64_t *shape, int max_ndim, int *ndim);
TANDEM_API tandem_result_t tandem_handle_output_data(tandem_handle_t handle, int index,
                                                     const void **data, size_t *bytes);
TANDEM_API tandem_result_t tandem_handle_copy_output(tandem_handle_t handle, int index, void *dst,
                                                     size_t bytes);
/* Alltoall: the row counts received from each rank of the set (nsplits must
 * be the set size). */
TANDEM_API tandem_result_t tandem_handle_received_splits(tandem_handle_t handle, int64_t *splits,
                                                         int nsplits);
/* Join: the global rank of the last rank to join. */
TANDEM_API tandem_result_t tandem_handle_join_result(tandem_handle_t handle, int *last_rank);
/* Forgets a handle and frees its engine-allocated outputs. Releasing a
 * running handle is allowed (its result is dropped when it completes) but
 * its buffers must still stay valid until then. */
TANDEM_API void tandem_handle_release(tandem_handle_t handle);

/* Process sets: subsets of the world, each with its own negotiation and
 * response cache, running concurrently with the global set. Adding and
 * removing are collective over every rank of the world, called in the same
 * order everywhere (as in Horovod). ranks: distinct global ranks, sorted or
 * not (the set orders them). An identical set already registered returns its
 * id. Removing fails operations still pending in that set. */
TANDEM_API tandem_result_t tandem_add_process_set(const int *ranks, int nranks, int *id);
TANDEM_API tandem_result_t tandem_remove_process_set(int id);
/* This rank's index in the set (-1 when not a member), its size, and its
 * global ranks (ranks has room for max entries; *n gets the size). */
TANDEM_API tandem_result_t tandem_process_set_rank(int id, int *rank);
TANDEM_API tandem_result_t tandem_process_set_size(int id, int *size);
TANDEM_API tandem_result_t tandem_process_set_ranks(int id, int *ranks, int max, int *n);

/* Timeline (Chrome trace JSON, written by rank 0; open in chrome://tracing or
 * Perfetto). Called on every rank. Also started at init by TANDEM_TIMELINE
 * or HOROVOD_TIMELINE. mark_cycles adds an instant event per cycle. */
TANDEM_API tandem_result_t tandem_start_timeline(const char *path, int mark_cycles);
TANDEM_API tandem_result_t tandem_stop_timeline(void);

/* Runtime counters, for tests and diagnostics: counter `index` (0, 1, ...)
 * gives its stable name ("cycles", "cache_hits", "fused_batches", ...; see
 * docs/runtime.md) and value; TANDEM_ERR_INVALID_ARGUMENT past the last. */
TANDEM_API tandem_result_t tandem_runtime_counter(int index, const char **name, uint64_t *value);

/* The straggler report (TANDEM_STRAGGLER_REPORT; docs/runtime.md,
 * "Stragglers") as one JSON object: {"reports": n, "period": the last
 * period's report, "total": the job's so far}, each with its verdict, who it
 * names and one row per rank; the same on every rank. Copies at most size
 * bytes, NUL included, into buf (truncating); *needed gets the size the
 * whole text takes. size 0 only asks for *needed. */
TANDEM_API tandem_result_t tandem_straggler_report(char *buf, size_t size, size_t *needed);

/* Autotune (TANDEM_AUTOTUNE; docs/runtime.md, "Autotune") as one JSON
 * object: {"on": bool, "settled": bool, "applied": [{"cycle": n,
 * "fusion_threshold": bytes, "cycle_time_ms": x, "cache_enabled": bool},
 * ...]}, every change of the tuned values this rank applied and the cycle
 * after which it did; the same on every rank. buf, size and needed as in
 * tandem_straggler_report. */
TANDEM_API tandem_result_t tandem_autotune_state(char *buf, size_t size, size_t *needed);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_TANDEM_H */

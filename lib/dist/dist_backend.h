/* Inside lib/dist: what a backend provides. dist.c checks the arguments (devices,
 * sizes, ranks) once for all backends, then calls these on raw buffers. */
#ifndef DIST_DIST_BACKEND_H
#define DIST_DIST_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "dist/dist.h"
#include "dist/launcher.h"

/* Tensors' dtypes (F32, BF16, F16: on the backend's device) and host scalars (F64,
 * I64: host memory on every backend). */
typedef enum { DIST_F32, DIST_F64, DIST_I64, DIST_BF16, DIST_F16 } DistType;

/* Bytes of one element. */
static inline size_t dist_type_size(DistType t) {
    return t == DIST_F32 ? 4 : t == DIST_BF16 || t == DIST_F16 ? 2 : 8;
}

/* True for the host scalars' types, whose buffers are host memory on every backend. */
static inline bool dist_type_on_host(DistType t) { return t == DIST_F64 || t == DIST_I64; }

/* The type of a tensor's elements. */
static inline DistType dist_type_of(DType dtype) {
    return dtype == DTYPE_BF16 ? DIST_BF16 : dtype == DTYPE_F16 ? DIST_F16 : DIST_F32;
}

struct DistBackend {
    /* Starts; buffers on the backend's device for the tensors' types, on the host for
     * F64 and I64 (scalars). DIST_AVG is the sum divided by the world size (16-bit
     * values: the rounded sum, divided and rounded again). blocking: the caller waits
     * for it at once (wait, never test), so a backend may run it to the end right here
     * (MPI's blocking collectives are faster than its non-blocking ones). */
    DistRequest *(*broadcast)(Dist *d, void *buf, int64_t n, DistType t, int root, bool blocking);
    DistRequest *(*all_reduce)(Dist *d, void *buf, int64_t n, DistType t, DistOp op, bool blocking);
    DistRequest *(*all_gather)(Dist *d, void *out, const void *in, int64_t n, DistType t,
                               bool blocking);
    DistRequest *(*reduce_scatter)(Dist *d, void *out, const void *in, int64_t n, DistType t,
                                   DistOp op, bool blocking);
    DistRequest *(*barrier)(Dist *d, bool blocking);
    /* Tensors' types only, both sides of type t; either side may be absent (NULL
     * buffer, no count) */
    DistRequest *(*sendrecv)(Dist *d, const void *out, int64_t out_n, int to, void *in,
                             int64_t in_n, int from, DistType t, bool blocking);
    /* Finished yet? Never blocks. wait: until finished, or the job ends after timeout_s. */
    bool (*test)(Dist *d, DistRequest *r);
    void (*wait)(Dist *d, DistRequest *r);
    Dist *(*split)(Dist *d, int color, int key);
    void (*finalize)(Dist *d);
    /* Ends every rank of the job now (MPI_Abort, ncclCommAbort then exit). */
    __attribute__((noreturn)) void (*abort_job)(Dist *d, int status);
};

/* The backend dist_init takes for this launch and these tensors ("single", "mpi" or
 * "nccl"); a wrong launch stops here (exit status 1), saying how to launch instead. */
const char *dist_choose_backend(const char *asked, const Launch *l, Device device);

/* The backends' starts; each fills d (ranks, sizes, ops, impl) or says why not. */
void dist_single_init(Dist *d, const Launch *l, Device device);
#ifdef HAVE_MPI
void dist_mpi_init(Dist *d, const Launch *l);
/* The NCCL backend's use of MPI in an MPI-launched job: the id from rank 0, and the end. */
void dist_mpi_broadcast_bytes(void *buf, size_t len);
void dist_mpi_end(void);
#endif
#ifdef HAVE_NCCL
void dist_nccl_init(Dist *d, const Launch *l);
#endif

/* A wait that ran past timeout_s: says which operation of which size waited how long
 * and, when the backend could tell, which ranks did not answer; then ends the job. */
__attribute__((noreturn)) void dist_timed_out(Dist *d, const char *what, size_t bytes,
                                              const char *not_answering);

#endif

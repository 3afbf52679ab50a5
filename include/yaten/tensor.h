/* Tensors: creation from memory, accessors, reference counting, scopes, memory counters, RNG.
 * The operators themselves (yt_add, yt_mm, yt_zeros, ...) are generated: see <yaten/ops.h>.
 *
 * Ownership: every function returning yt_tensor * returns a new reference; arguments are
 * borrowed. yt_release() drops one reference; yt_release(NULL) does nothing. */
#ifndef YATEN_TENSOR_H
#define YATEN_TENSOR_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- dtypes and devices ---- */

/* "f32", "i64", "bool", ...; "none" for YT_DTYPE_NONE; "?" for values out of range. */
YT_API const char *yt_dtype_name(yt_dtype dtype);
/* Bytes per element (f16/bf16: 2, bool: 1); 0 for invalid values. */
YT_API size_t yt_dtype_size(yt_dtype dtype);
YT_API bool yt_dtype_is_floating(yt_dtype dtype);
/* PyTorch's promotion of two dtypes (e.g. i64 + f32 -> f32, u8 + i8 -> i16). */
YT_API yt_dtype yt_promote_types(yt_dtype a, yt_dtype b);
/* "cpu", "cuda". */
YT_API const char *yt_device_name(yt_device device);

/* ---- creation from memory ---- */

/* New contiguous CPU tensor of `dtype` with sizes[0..ndim), copying numel * dtype_size bytes
 * from `data`. ndim may be 0 (a scalar tensor). Errors: YT_ERR_VALUE (negative size, ndim out of
 * 0..YT_MAX_DIM, NULL data with numel > 0), YT_ERR_DTYPE, YT_ERR_NOMEM (size overflow). */
YT_API yt_tensor *yt_tensor_from_data(const void *data, const int64_t *sizes, int ndim,
                                      yt_dtype dtype);
/* 0-d tensor holding `value` converted to `dtype`. */
YT_API yt_tensor *yt_scalar_tensor(yt_scalar value, yt_dtype dtype);

/* ---- reference counting ---- */

/* Adds a reference and returns `t` (NULL gives NULL). */
YT_API yt_tensor *yt_retain(yt_tensor *t);
/* Drops a reference; the tensor is freed at zero. NULL is a no-op. */
YT_API void yt_release(yt_tensor *t);

/* ---- accessors (all accept NULL and then return 0 / NULL / false) ---- */

YT_API int yt_tensor_dim(const yt_tensor *t);
/* Size of dimension `dim` (negative counts from the end); -1 with YT_ERR_VALUE when out of range. */
YT_API int64_t yt_tensor_size(const yt_tensor *t, int dim);
YT_API int64_t yt_tensor_stride(const yt_tensor *t, int dim);
/* Pointer to the sizes / strides arrays (yt_tensor_dim() entries), valid while `t` lives. */
YT_API const int64_t *yt_tensor_sizes(const yt_tensor *t);
YT_API const int64_t *yt_tensor_strides(const yt_tensor *t);
YT_API int64_t yt_tensor_numel(const yt_tensor *t);
YT_API int64_t yt_tensor_offset(const yt_tensor *t);
YT_API yt_dtype yt_tensor_dtype(const yt_tensor *t);
YT_API yt_device yt_tensor_device(const yt_tensor *t);
YT_API bool yt_tensor_is_contiguous(const yt_tensor *t);
/* Pointer to the first element (storage data + offset). CPU tensors only; NULL otherwise. */
YT_API void *yt_tensor_data(yt_tensor *t);
/* Version counter shared by all views of the storage; bumped by every in-place write. */
YT_API uint64_t yt_tensor_version(const yt_tensor *t);

/* Copies the elements, in row-major order and converted to `dtype`, into `dst` (capacity
 * `dst_bytes`). Errors: YT_ERR_VALUE (too small), YT_ERR_DTYPE, YT_ERR_DEVICE. */
YT_API yt_status yt_tensor_copy_to(yt_tensor *t, void *dst, size_t dst_bytes, yt_dtype dtype);
/* The single element of a 1-element tensor as a double. Sets YT_ERR_SHAPE and returns NAN when
 * `t` has more or fewer than one element; `t` may be NULL (NAN, error untouched). */
YT_API double yt_item(yt_tensor *t);
/* Writes a readable rendering ("tensor([[1., 2.], ...], dtype=f32)") to `out` (stdout if NULL). */
YT_API yt_status yt_tensor_print(yt_tensor *t, void *file /* FILE * */);

/* ---- scopes ---- */

/* A scope owns every tensor returned to the caller while it is open: yt_scope_end() drops those
 * references, so a training loop body needs no yt_release() calls. Scopes nest. Inside a scope,
 * do not release tensors the scope owns (unless you yt_retain'ed them first). */
YT_API yt_status yt_scope_begin(void);
/* Closes the innermost scope. Errors: YT_ERR_STATE when no scope is open. */
YT_API yt_status yt_scope_end(void);
/* Lets `t` outlive the innermost scope: it moves to the enclosing scope, or to the caller when
 * there is none (who then releases it). Returns `t`. NULL in, NULL out. */
YT_API yt_tensor *yt_scope_keep(yt_tensor *t);

/* ---- memory accounting ---- */

/* Tensors currently alive (handles, including views). */
YT_API int64_t yt_live_tensors(void);
/* Bytes of storage currently owned by live tensors (cached free blocks are not counted). */
YT_API int64_t yt_live_bytes(void);
/* Bytes the CPU allocator holds in its shared cache of free blocks, as taken from the system: a
 * block of 2 MiB or more counts whole 2 MiB (huge) pages. A thread also keeps up to 8 free
 * blocks of each size up to 64 KiB for itself, not counted here. 0 in sanitizer builds, which
 * cache nothing. */
YT_API int64_t yt_allocator_cached_bytes(void);
/* Returns cached free blocks of the CPU allocator to the system. */
YT_API void yt_allocator_trim(void);

/* ---- BLAS ---- */

/* Name of the BLIS kernel set that runs GEMM-shaped ops ("skx", "zen3", "haswell", "generic").
 * yaten picks the fastest set the CPU supports at start-up unless BLIS_ARCH_TYPE is set.
 * Static string; never NULL. */
YT_API const char *yt_blas_info(void);

/* ---- threads ---- */

/* Sets how many threads yaten's kernels may use, for the whole process (every calling thread;
 * like torch.set_num_threads). Kernels stay single-threaded on small work whatever this says.
 * Errors: YT_ERR_VALUE when threads < 1. */
YT_API yt_status yt_set_num_threads(int threads);

/* The thread count kernels may use: the last yt_set_num_threads, else OMP_NUM_THREADS when it
 * holds a count from 1 to 1024 (read once), else the number of CPUs this process may run on. */
YT_API int yt_get_num_threads(void);

/* ---- random numbers ---- */

/* Seeds the default generator (Philox4x32-10; same stream on every platform). */
YT_API void yt_manual_seed(uint64_t seed);

#ifdef __cplusplus
}
#endif

#endif

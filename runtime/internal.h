/* Internal contract between the runtime, the generated code and the kernels. Not installed.
 *
 * Naming: yt__ for internal non-static symbols. Everything here may change between versions. */
#ifndef YT_INTERNAL_H
#define YT_INTERNAL_H

#include <yaten.h>

#include <stdarg.h>
#include <stdatomic.h>

/* Generated files check this so a stale generated/ fails to compile. */
#define YT_CODEGEN_ABI 1

#define YT_INTERNAL __attribute__((visibility("hidden")))

/* A function its callers must inline: a loop body that is vectorised, or kept in registers,
 * only inside the caller's loop. */
#define YT_ALWAYS_INLINE static inline __attribute__((always_inline))

/* ---------------------------------------------------------------- shapes and overflow */

typedef struct yt_shape {
    int dim;
    int64_t sizes[YT_MAX_DIM];
} yt_shape;

/* An `int[]` argument saved in a backward node (dims, sizes; at most YT_MAX_DIM entries). */
typedef struct yt_int_list {
    int len;
    int64_t v[YT_MAX_DIM];
} yt_int_list;

/* Overflow-checked arithmetic: false (and *out untouched) on overflow. */
static inline bool
yt__mul_ok(int64_t *out, int64_t a, int64_t b)
{
    return !__builtin_mul_overflow(a, b, out);
}

static inline bool
yt__add_ok(int64_t *out, int64_t a, int64_t b)
{
    return !__builtin_add_overflow(a, b, out);
}

/* ceil(a / b) for a >= 0, b >= 1, from the remainder: a + b - 1 would overflow for b near
 * INT64_MAX (a stride or dilation from the caller). */
static inline int64_t
yt__ceil_div(int64_t a, int64_t b)
{
    return a / b + (a % b != 0);
}

/* ---------------------------------------------------------------- errors */

/* Records (code, printf-style message) as this thread's error and returns NULL. Messages start
 * with the op name: "mm: self.size(1)=3 does not match mat2.size(0)=4". */
YT_INTERNAL yt_tensor *yt__fail(yt_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same, returning the code (for functions that return yt_status). */
YT_INTERNAL yt_status yt__fail_status(yt_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Called by an op whose composite or kernel just failed inside another public op: the message
 * then named that op ("sub: self.size(0)=6 cannot broadcast with other.size(0)=3" from
 * huber_loss), so it is prefixed with the op the caller called, `base` and its variant's `suffix`
 * ("add" and "_", "conv1d" and "_out", "huber_loss" and ""), unless it already starts with that
 * name or with `base` and a colon. The code stays. */
YT_INTERNAL void yt__error_context(const char *base, const char *suffix);
/* For a composite that hands its arguments, names unchanged, to another op: a message that starts
 * with "from: " is made to start with "to: " instead. */
YT_INTERNAL void yt__error_rename(const char *from, const char *to);

/* ---------------------------------------------------------------- storage and tensors */

typedef struct yt_storage {
    atomic_int_fast64_t refcount;
    void *data;
    size_t nbytes;
    yt_device device;
    atomic_uint_fast64_t version; /* shared by every view; bumped by in-place writes */
} yt_storage;

typedef struct yt_node yt_node;

struct yt_tensor {
    atomic_int_fast64_t refcount;
    yt_storage *storage;
    int64_t offset; /* elements */
    int64_t numel;
    int dim;
    yt_dtype dtype;
    yt_device device;
    bool is_contiguous; /* cached by yt__tensor_set_geometry */
    bool requires_grad; /* leaves: set by the user; results: set when recorded */
    int64_t sizes[YT_MAX_DIM];
    int64_t strides[YT_MAX_DIM]; /* elements */
    /* autograd */
    yt_node *grad_fn; /* strong reference; NULL for leaves */
    int output_nr;    /* which output of grad_fn this is */
    yt_tensor *grad;  /* leaves: accumulated gradient (strong) */
    /* views (made by a view op): the tensor they view, at the root of a chain of views (strong),
     * and the storage version when grad_fn last described them; an in-place write through another
     * handle since makes grad_fn stale (runtime/autograd/view_inplace.c) */
    yt_tensor *view_base;
    uint64_t view_version;
    bool no_grad_view; /* made with grad mode off: no base kept, and no in-place write recorded */
};

/* Storage of `nbytes` on `device`, refcount 1, version 0. NULL with YT_ERR_NOMEM. */
YT_INTERNAL yt_storage *yt__storage_new(size_t nbytes, yt_device device);
YT_INTERNAL void yt__storage_retain(yt_storage *s);
YT_INTERNAL void yt__storage_release(yt_storage *s);

/* New contiguous tensor (uninitialised data). Checks numel * dtype size for overflow.
 * NULL with YT_ERR_NOMEM / YT_ERR_VALUE. */
YT_INTERNAL yt_tensor *yt__empty(const yt_shape *shape, yt_dtype dtype, yt_device device);
/* The same, with errors in the name of `op` (the op whose result it is: "adaptive_avg_pool2d: a f32
 * tensor of shape [...] needs more than 2^63 bytes"). */
YT_INTERNAL yt_tensor *yt__empty_named(const char *op, const yt_shape *shape, yt_dtype dtype,
                                       yt_device device);
/* New contiguous tensor with `like`'s sizes, and the given dtype. */
YT_INTERNAL yt_tensor *yt__empty_like(const yt_tensor *like, yt_dtype dtype);
/* New tensor handle over `base`'s storage with the given geometry (no autograd info). The caller
 * has checked that the geometry stays inside the storage. */
YT_INTERNAL yt_tensor *yt__view_of(yt_tensor *base, int dim, const int64_t *sizes,
                                   const int64_t *strides, int64_t offset);
/* A handle with `t`'s geometry and storage, without autograd info (detach). */
YT_INTERNAL yt_tensor *yt__alias(yt_tensor *t);
/* The storage offsets (in elements) of t's first and last elements in memory; numel > 0. */
YT_INTERNAL void yt__element_span(const yt_tensor *t, int64_t *first, int64_t *last);
/* Recomputes numel and is_contiguous after sizes/strides were written. */
YT_INTERNAL void yt__tensor_set_geometry(yt_tensor *t);
YT_INTERNAL void yt__shape_of(yt_shape *out, const yt_tensor *t);
/* t's size along d, a 0-d t taken as 1-D of one element (PyTorch's rule for index tensors); a
 * 0-d tensor's sizes[] holds nothing to read. */
static inline int64_t
yt__size_as_1d(const yt_tensor *t, int d)
{
    return t->dim == 0 ? 1 : t->sizes[d];
}
YT_INTERNAL void yt__contiguous_strides(int64_t *strides, const int64_t *sizes, int dim);
/* yt_dtype_size of a dtype known valid (a tensor's), as an inline load for the hot paths. */
YT_INTERNAL extern const unsigned char yt__dtype_bytes[YT_DTYPE_COUNT];
static inline int64_t
yt__elem_bytes(yt_dtype dtype)
{
    return yt__dtype_bytes[dtype];
}
/* Pointer to element 0 (CPU). */
static inline char *
yt__data_ptr(const yt_tensor *t)
{
    return (char *)t->storage->data + t->offset * yt__elem_bytes(t->dtype);
}
/* Marks an in-place write: bumps the version counter shared by all views. */
static inline void
yt__bump_version(yt_tensor *t)
{
    atomic_fetch_add_explicit(&t->storage->version, 1, memory_order_relaxed);
}

/* ---------------------------------------------------------------- live counters (runtime/counters.c) */

/* One thread's share of the live-tensor and live-byte counts. Only its own thread writes it
 * (relaxed load + store, no locked instruction); yt_live_tensors() sums all threads. */
typedef struct yt__live_counters {
    atomic_int_fast64_t tensors;
    atomic_int_fast64_t bytes;
    struct yt__live_counters *next;
} yt__live_counters;

extern _Thread_local yt__live_counters *yt__tls_counters;
YT_INTERNAL yt__live_counters *yt__live_counters_register(void);

static inline void
yt__count_live(int64_t tensors, int64_t bytes)
{
    yt__live_counters *c = yt__tls_counters;
    if (c == NULL)
        c = yt__live_counters_register();
    atomic_store_explicit(&c->tensors,
                          atomic_load_explicit(&c->tensors, memory_order_relaxed) + tensors,
                          memory_order_relaxed);
    atomic_store_explicit(&c->bytes, atomic_load_explicit(&c->bytes, memory_order_relaxed) + bytes,
                          memory_order_relaxed);
}

/* ---------------------------------------------------------------- CPU allocator */

/* Caching allocator: blocks are kept in size classes and reused, so steady-state training does
 * not page-fault. 64-byte aligned. NULL on failure (no error recorded). */
YT_INTERNAL void *yt__cpu_alloc(size_t nbytes);
YT_INTERNAL void yt__cpu_free(void *ptr, size_t nbytes);

/* ---------------------------------------------------------------- dtypes and scalars */

/* Bit of a dtype in a dtype set (generated checks test membership with a mask). */
#define YT_DTYPE_BIT(d) (1u << (unsigned)(d))

/* PyTorch's result_type over tensors and scalars: dimensioned tensors first, then 0-d tensors,
 * then scalars, each only raising the category (bool < integral < floating). */
YT_INTERNAL yt_dtype yt__result_type(int n_tensors, yt_tensor *const *tensors, int n_scalars,
                                     const yt_scalar *scalars);
/* Whether a value of dtype `from` may be written to `to` under PyTorch's in-place rule (no
 * category demotion: float -> int and int -> bool are refused). */
YT_INTERNAL bool yt__can_cast(yt_dtype from, yt_dtype to);
/* Integral dtypes (incl. bool) become f32, the default float; floating stay. */
YT_INTERNAL yt_dtype yt__to_floating(yt_dtype d);
YT_INTERNAL double yt__scalar_to_double(yt_scalar s);
YT_INTERNAL int64_t yt__scalar_to_i64(yt_scalar s);
/* The dtype a scalar has as a tensor (bool, i64 or f64). */
YT_INTERNAL yt_dtype yt__scalar_dtype(yt_scalar s);

/* f16 / bf16 conversions (round to nearest even). */
YT_INTERNAL float yt__f16_to_f32(uint16_t h);
YT_INTERNAL uint16_t yt__f32_to_f16(float f);
YT_INTERNAL float yt__bf16_to_f32(uint16_t h);
YT_INTERNAL uint16_t yt__f32_to_bf16(float f);

/* ---------------------------------------------------------------- argument helpers for generated code */

/* Broadcast shapes of `n` tensors (PyTorch rules). On failure records
 * "mul: self.size(1)=4 cannot broadcast with other.size(1)=3" and returns YT_ERR_SHAPE. */
YT_INTERNAL yt_status yt__broadcast_shapes(yt_shape *out, const char *op, int n,
                                           yt_tensor *const *tensors, const char *const *names);
/* Wraps a possibly negative dim into 0..ndim-1 (0-d tensors accept -1 and 0). On failure records
 * "sum: dim=3 is out of range for a 2-D self (expected -2..1)" and returns YT_ERR_VALUE. */
YT_INTERNAL yt_status yt__wrap_dim(int64_t *dim, int ndim, const char *op, const char *arg);
/* Wraps each entry of a dim list in place and rejects duplicates and more than YT_MAX_DIM. */
YT_INTERNAL yt_status yt__wrap_dims(int64_t *dims, int n, int ndim, const char *op,
                                    const char *arg);
/* Returns `t` converted to `dtype` (a new reference; `t` itself, retained, when it already has
 * it). Differentiable when t requires grad. */
YT_INTERNAL yt_tensor *yt__to_dtype(yt_tensor *t, yt_dtype dtype);
/* Copies `src` into `dst` elementwise, broadcasting src to dst's shape and converting dtype.
 * Not recorded by autograd; does not bump versions. */
YT_INTERNAL yt_status yt__copy_into(yt_tensor *dst, yt_tensor *src);

/* ---------------------------------------------------------------- shape and dtype rules
 * (runtime/shape_rules.c), called by generated code */

/* Result shape of a reduction over `dim` (already wrapped; dim_len 0 means all dims). */
YT_INTERNAL yt_status yt__shape_reduce(yt_shape *out, const char *op, yt_tensor *self,
                                       const int64_t *dim, int dim_len, bool keepdim);
/* Result dtype of all/any: u8 for u8 inputs (as PyTorch), bool otherwise. */
YT_INTERNAL yt_dtype yt__dtype_logical(yt_tensor *self);
/* Result shape of a reduction over one `dim` (not yet wrapped; YT_NONE: every dim, keepdim
 * giving all sizes 1). Errors: dim out of range. */
YT_INTERNAL yt_status yt__shape_reduce_dim(yt_shape *out, const char *op, yt_tensor *self,
                                           int64_t dim, bool keepdim);
/* Length of arange(start, end, step); an integral `dtype` counts with the bounds truncated to
 * integers, as PyTorch does. Errors: step 0, step of the wrong sign, non-finite bounds,
 * a length that overflows. */
YT_INTERNAL yt_status yt__shape_arange(yt_shape *out, const char *op, yt_scalar start,
                                       yt_scalar end, yt_scalar step, yt_dtype dtype);
/* A shape from an `int[] size` argument. Errors: negative sizes, more than YT_MAX_DIM dims, an
 * element count that overflows. */
YT_INTERNAL yt_status yt__shape_from_sizes(yt_shape *out, const char *op, const char *arg,
                                           const int64_t *size, int size_len);
/* Result dtype of sum: `dtype` when given, else integral and bool become i64, floating stay. */
YT_INTERNAL yt_dtype yt__dtype_sum(yt_tensor *self, yt_dtype dtype);
/* Result dtype of factories: `dtype` when given, else f32. */
YT_INTERNAL yt_dtype yt__dtype_factory(yt_dtype dtype);
/* Result dtype of arange: `dtype` when given, else i64 when all three are integers, else f32. */
YT_INTERNAL yt_dtype yt__dtype_arange(yt_scalar start, yt_scalar end, yt_scalar step,
                                      yt_dtype dtype);
/* Result dtypes of pointwise ops (kernels/cpu/pointwise_math.c), which compute in them: square
 * (bool gives i64, as pow(self, 2)), and div with a rounding mode (floating only when None). */
YT_INTERNAL yt_dtype yt__dtype_square(yt_tensor *self);
YT_INTERNAL yt_dtype yt__dtype_div_mode(yt_tensor *self, yt_tensor *other,
                                        const char *rounding_mode);
YT_INTERNAL yt_dtype yt__dtype_div_scalar_mode(yt_tensor *self, yt_scalar other,
                                               const char *rounding_mode);

/* Creation rules (kernels/cpu/factory_rules.c). */
/* Result dtype of full: `dtype` when given, else bool, i64 or f32 after fill_value's kind. */
YT_INTERNAL yt_dtype yt__dtype_full(yt_scalar fill_value, yt_dtype dtype);
/* Result dtype of index factories (randint, randperm): `dtype` when given, else i64. */
YT_INTERNAL yt_dtype yt__dtype_index(yt_dtype dtype);
/* A 1-D shape of `n` elements (linspace steps, randperm n). Errors: n < 0. */
YT_INTERNAL yt_status yt__shape_vector(yt_shape *out, const char *op, int64_t n);
/* The n x m shape of eye. Errors: n < 0 or m < 0. */
YT_INTERNAL yt_status yt__shape_eye(yt_shape *out, const char *op, int64_t n, int64_t m);
/* Result shape of a class-index loss (kernels/composite/loss_targets.c): target's shape for
 * reduction "none", else 0-D; validates the self/target/weight (NULL: none) shapes. */
YT_INTERNAL yt_status yt__shape_class_loss(yt_shape *out, const char *op, yt_tensor *self,
                                           yt_tensor *target, yt_tensor *weight,
                                           const char *reduction);
/* Result shapes of the indexing ops (kernels/cpu/index_shapes.c); they also check the index
 * tensor's rank and the sizes it must agree with. */
YT_INTERNAL yt_status yt__shape_index_select(yt_shape *out, const char *op, yt_tensor *self,
                                             int64_t dim, yt_tensor *index);
YT_INTERNAL yt_status yt__shape_gather(yt_shape *out, const char *op, yt_tensor *self, int64_t dim,
                                       yt_tensor *index);
YT_INTERNAL yt_status yt__shape_cat(yt_shape *out, const char *op, yt_tensor *const *tensors,
                                    int tensors_len, int64_t dim);
YT_INTERNAL yt_status yt__shape_topk(yt_shape *out, const char *op, yt_tensor *self, int64_t k,
                                     int64_t dim);
YT_INTERNAL yt_status yt__shape_embedding(yt_shape *out, const char *op, yt_tensor *weight,
                                          yt_tensor *indices);
YT_INTERNAL yt_status yt__shape_embedding_dense_backward(yt_shape *out, const char *op,
                                                         yt_tensor *grad_output, yt_tensor *indices,
                                                         int64_t num_weights);
/* scaled_dot_product_attention_math (kernels/cpu/attention.c): output [..., L, Ev] and attention
 * weights [..., L, S] of query [..., L, E], key [..., S, E], value [..., S, Ev]; the leading
 * dims must be equal. */
YT_INTERNAL yt_status yt__shape_attention_output(yt_shape *out, const char *op, yt_tensor *query,
                                                 yt_tensor *key, yt_tensor *value);
YT_INTERNAL yt_status yt__shape_attention_weights(yt_shape *out, const char *op, yt_tensor *query,
                                                  yt_tensor *key, yt_tensor *value);
/* Convolution and pooling shapes (kernels/cpu/conv_shape.c): every geometry argument is
 * validated (ranks, stride/padding/dilation/groups, kernel larger than the padded input). */
YT_INTERNAL yt_status yt__shape_conv2d(yt_shape *out, const char *op, yt_tensor *input,
                                       yt_tensor *weight, const int64_t *stride, int stride_len,
                                       const int64_t *padding, int padding_len,
                                       const int64_t *dilation, int dilation_len, int64_t groups);
YT_INTERNAL yt_status yt__shape_pool2d(yt_shape *out, const char *op, yt_tensor *self,
                                       const int64_t *kernel_size, int kernel_size_len,
                                       const int64_t *stride, int stride_len,
                                       const int64_t *padding, int padding_len,
                                       const int64_t *dilation, int dilation_len, bool ceil_mode);
YT_INTERNAL yt_status yt__shape_avg_pool2d(yt_shape *out, const char *op, yt_tensor *self,
                                           const int64_t *kernel_size, int kernel_size_len,
                                           const int64_t *stride, int stride_len,
                                           const int64_t *padding, int padding_len, bool ceil_mode,
                                           int64_t divisor_override);
YT_INTERNAL yt_status yt__shape_adaptive_pool2d(yt_shape *out, const char *op, yt_tensor *self,
                                                const int64_t *output_size, int output_size_len);
/* The shape of `t` (for ops whose result is shaped like a tensor argument other than the first). */
YT_INTERNAL yt_status yt__shape_like(yt_shape *out, const char *op, yt_tensor *t);

/* ---------------------------------------------------------------- size helpers
 * (runtime/shape_rules.c) */

/* Room for "[s0, s1, ...]" with YT_MAX_DIM int64 entries and the terminating NUL. */
#define YT__SIZES_BUF 192

/* Writes "[2, 3, 4]" into buf (truncated to cap). Returns buf, for use inside yt__fail calls. */
YT_INTERNAL const char *yt__format_sizes(char *buf, size_t cap, const int64_t *sizes, int dim);

/* YT_OK when `t` has `ref`'s shape exactly (a backward kernel takes its gradient unbroadcast),
 * else a shape error: "OP: NAME has shape [..] but REF_NAME has shape [..]". */
YT_INTERNAL yt_status yt__check_same_shape(const char *op, const char *name, const yt_tensor *t,
                                           const char *ref_name, const yt_tensor *ref);

/* Element count of `sizes`: false (and *out untouched) when it overflows int64. A zero anywhere
 * makes the count 0, however large the other sizes are. */
YT_INTERNAL bool yt__checked_numel(int64_t *out, const int64_t *sizes, int dim);

/* PyTorch's infer_size: `size` with at most one -1 replaced so that it holds `numel` elements.
 * Errors name `op`: "view: shape [2, 5] is invalid for input of size 12". */
YT_INTERNAL yt_status yt__infer_view_shape(yt_shape *out, const char *op, const int64_t *size,
                                           int size_len, int64_t numel);

/* PyTorch's computeStride: strides that let `self`'s elements be seen with `shape` (same numel)
 * without a copy. False when some new dimension would span two non-contiguous chunks. */
YT_INTERNAL bool yt__view_strides(int64_t *strides, const yt_tensor *self, const yt_shape *shape);

/* ---------------------------------------------------------------- pointwise iteration */

/* Loop over `rows` rows of `n` elements: data[0] is the output, data[1..] the inputs, each at
 * the start of its first row; strides[k] steps operand k along a row and row_strides[k] from one
 * row to the next, in bytes (0 for a broadcast input). Rows come in blocks so that a strided
 * traversal pays one call per block, not per row (PyTorch's loop2d). */
typedef void (*yt__loop_fn)(char **data, const int64_t *strides, int64_t n,
                            const int64_t *row_strides, int64_t rows, const void *ctx);

/* A loop's stepped form (runtime/stepped_lanes.h): a yt__loop_fn that, with `stream`, stores a
 * contiguous output's whole vectors around the caches (non-temporal stores, which the caller
 * orders with yt__streaming_fence) instead of into them, and with `fetch`, fetches its stepped
 * operands' lines ahead of its reads (for operands that come from memory). */
typedef void (*yt__stepped_fn)(char **data, const int64_t *strides, int64_t n,
                               const int64_t *row_strides, int64_t rows, bool stream, bool fetch,
                               const void *ctx);

/* Operands of a pointwise loop: the output and at most 7 inputs. */
#define YT__MAX_OPERANDS 8

/* Side of the square blocks in which the blocked traversal reads transposed inputs. */
#define YT__BLOCK 8

/* A strip of the blocked traversal (runtime/pointwise.c): `rows` x `cols` elements (rows a
 * multiple of YT__BLOCK, cols of yt__block_side()) of operands data[k], whose elements step
 * col_strides[k] bytes along a row and row_strides[k] from one row to the next. Inputs in `copied`
 * (bit k) go through a block buffer; every other operand, the output always among them, is
 * contiguous along the row. With each block column, for the inputs with next[k] set, the part of
 * the next strip's columns under it is fetched into L2: two lines per column, at
 * next[k] + j * col_strides[k] and next_last[k] bytes further. */
typedef struct yt__block_strip {
    yt__loop_fn loop; /* the loop in its row form, for the strip's edges */
    char *data[YT__MAX_OPERANDS];
    int64_t col_strides[YT__MAX_OPERANDS], row_strides[YT__MAX_OPERANDS];
    unsigned copied;
    int64_t ahead;   /* bytes ahead along the rows to prefetch the operands read in place, or 0 */
    bool stream_out; /* the output's rows, a cache line a block, stored around the caches */
    bool fetch_out;  /* each block fetches the next one's output lines (yt__prefetch_for_write) */
    int64_t rows, cols;
    const char *next[YT__MAX_OPERANDS];
    int64_t next_last[YT__MAX_OPERANDS];
} yt__block_strip;

/* Runs a loop over every element of strip `s` (runtime/pointwise_blocks.h's yt__run_blocks with
 * the loop's body inlined). */
typedef void (*yt__block_fn)(const yt__block_strip *s, const void *ctx);

/* Where a pointwise loop's time goes: into moving its operands (an add: a few instructions an
 * element) or into its arithmetic (a libm call or an integer division an element). A large output
 * of a memory-bound loop is stored around the caches; a compute-bound loop's plain stores overlap
 * its arithmetic, which a buffer stored afterwards would not. */
typedef enum yt__pw_bound { YT__PW_MEMORY_BOUND, YT__PW_COMPUTE_BOUND } yt__pw_bound;

/* Runs `loop` over every element of `out`, with each input broadcast to out's shape (the caller
 * checked broadcastability). Coalesces dimensions, calls `loop` once for contiguous operands, and
 * splits the outer loop across threads above YT_PARALLEL_GRAIN elements. When an input is
 * transposed against the output, runs `blocks` (the same loop in block form) over strips instead;
 * with `blocks` NULL, `loop` reads such an input element by element. Rows in which an operand
 * steps over elements run through `stepped` (the same loop in stepped form, built for the CPU's
 * AVX-512 or AVX2: runtime/stepped_lanes.h) where given and every operand steps 0 to 3 elements
 * apart (0 for inputs only), and otherwise through buffers, so `loop` must store every element
 * of the output (a loop that stores none takes yt__pointwise_scan). At most 7 inputs. */
YT_INTERNAL yt_status yt__pointwise(yt_tensor *out, int n_in, yt_tensor *const *in,
                                    yt__loop_fn loop, yt__block_fn blocks, yt__stepped_fn stepped,
                                    yt__pw_bound bound, const void *ctx);

/* yt__pointwise over t alone for a loop that reads t (data[1]) and writes nothing: data[0] is t
 * too, and is never stored to (a stepped output is otherwise computed into a buffer and stored
 * back from it, which would store to t). */
YT_INTERNAL yt_status yt__pointwise_scan(yt_tensor *t, yt__loop_fn loop, const void *ctx);

/* Below this many elements kernels stay single-threaded. */
#define YT_PARALLEL_GRAIN 32768

/* Bytes of the last-level cache the first CPU shares (runtime/cache_size.c). A kernel whose
 * operands together exceed it cannot keep what it writes in cache for the next op, so it may write
 * with non-temporal stores and save the read-for-ownership of every output line; the blocked
 * pointwise traversal decides on its prefetches from it. */
YT_INTERNAL int64_t yt__cache_bytes(void);
/* Bytes of L2 cache per core (1 MiB when the machine does not say). */
YT_INTERNAL int64_t yt__l2_bytes(void);
/* For tests: makes yt__cache_bytes() return `bytes` (0 or less: the machine's size again), so
 * small tensors take the paths meant for large ones. */
YT_INTERNAL void yt__set_cache_bytes(int64_t bytes);

/* ---------------------------------------------------------------- scopes and thread state */

typedef struct yt__scope yt__scope;

typedef struct yt__thread_state {
    bool grad_disabled;   /* yt_set_grad_enabled(false) */
    bool anomaly_enabled; /* yt_set_anomaly_enabled(true) */
    int scope_suspended;  /* > 0 while internal code calls public ops */
    yt__scope *scope;     /* innermost open scope, or NULL */
} yt__thread_state;

extern _Thread_local yt__thread_state yt__tls;

/* Registers a tensor returned to the user with the innermost open scope (no-op when none is open
 * or tracking is suspended). Returns `t`. On allocation failure releases `t` and returns NULL. */
YT_INTERNAL yt_tensor *yt__scope_track(yt_tensor *t);
static inline void
yt__scope_suspend(void)
{
    yt__tls.scope_suspended++;
}
static inline void
yt__scope_resume(void)
{
    yt__tls.scope_suspended--;
}

/* A scope of internal code that calls public ops with tracking suspended (a module's forward): it
 * is opened apart from the user's scopes and tracks whatever the suspension, so every result of
 * an op lands in it; yt_scope_keep then hands a result to this code as its own reference, and
 * yt__scope_leave releases the rest and restores the user's scopes and suspension. */
typedef struct yt__scope_outer {
    yt__scope *scope;
    int suspended;
} yt__scope_outer;
YT_INTERNAL yt_status yt__scope_enter(yt__scope_outer *outer);
YT_INTERNAL void yt__scope_leave(const yt__scope_outer *outer);

/* ---------------------------------------------------------------- autograd */

/* Where the gradient of one forward input goes: to output `input_nr` of `node`, or straight into
 * `leaf`->grad. Both NULL: the input does not need a gradient. Both references are strong. */
typedef struct yt_edge {
    yt_node *node;
    yt_tensor *leaf;
    int input_nr;
} yt_edge;

typedef struct yt_node_kind {
    const char *name;    /* "MulBackward" */
    const char *op_name; /* "mul", the forward op (for error messages and anomaly mode) */
    size_t size;         /* sizeof the op's node struct (yt_node first) */
    /* Computes out[i] (new references) for every i with needs_grad[i]; grads has one tensor per
     * forward output (zeros filled in by the engine where no gradient arrived). */
    yt_status (*backward)(yt_node *node, yt_tensor *const *grads, yt_tensor **out);
    /* Releases saved values (after a backward without retain_graph, and at destruction). */
    void (*release_saved)(yt_node *node);
    /* Releases what else the node holds, at destruction; NULL when nothing (generated nodes). */
    void (*release_rest)(yt_node *node);
} yt_node_kind;

struct yt_node {
    const yt_node_kind *kind;
    atomic_int_fast64_t refcount;
    uint64_t seq;         /* creation order; the engine runs later nodes first */
    int n_inputs;         /* forward tensor inputs = gradients this node produces */
    int n_outputs;        /* forward outputs = gradients this node receives */
    bool saved_released;  /* saved values freed by a backward without retain_graph */
    bool *needs_grad;     /* [n_inputs] */
    yt_edge *next;        /* [n_inputs] */
    yt_shape *out_shapes; /* [n_outputs]: for zero-filling missing gradients */
    yt_dtype *out_dtypes; /* [n_outputs] */
    /* engine scratch, valid during one yt_backward */
    int pending;            /* dependencies not yet satisfied */
    yt_tensor **grad_accum; /* [n_outputs] gradients summed so far */
};

/* True when grad mode is on and any of the tensors requires grad. NULL entries are skipped. */
YT_INTERNAL bool yt__any_requires_grad(int n, yt_tensor *const *tensors);
/* Allocates a zeroed node of kind->size bytes plus its arrays; refcount 1. NULL on OOM (error set). */
YT_INTERNAL yt_node *yt__node_new(const yt_node_kind *kind, int n_inputs, int n_outputs);
YT_INTERNAL void yt__node_retain(yt_node *node);
YT_INTERNAL void yt__node_release(yt_node *node);
/* Connects forward input `i` (may be NULL, or not require grad: then no gradient flows). */
YT_INTERNAL void yt__node_set_edge(yt_node *node, int i, yt_tensor *input);
/* Makes `node` the grad_fn of `result` as output `output_nr` (takes a node reference, sets
 * requires_grad, records shape and dtype for zero-filling); a result that is not floating is left
 * alone. */
YT_INTERNAL void yt__node_set_output(yt_node *node, yt_tensor *result, int output_nr);
/* After in-place op `op` recorded its node as the grad_fn of `self`: when self is a view, its base's
 * history is rebased through the write (a CopySlices node) and self becomes a view of the new
 * history, so gradients reaching the base, or other views of it, see the write (PyTorch's
 * rebase_history). YT_OK at once for tensors that are not views. */
YT_INTERNAL yt_status yt__rebase_view(yt_tensor *self, const char *op);
/* `view` views a tensor that only it holds (a copy its op made, as reshape does when the layout
 * leaves no choice): it then stands alone, as the copy would have (PyTorch's _unsafe_view). */
YT_INTERNAL void yt__forget_private_base(yt_tensor *view);
/* When `t` is a view whose grad_fn an in-place write through another handle made stale, replaces
 * its grad_fn with one that takes the view of its base's current history. Best effort: on failure
 * the error is recorded and false returned. */
YT_INTERNAL bool yt__refresh_view(yt_tensor *t);
/* In-place ops on leaves that require grad, or on views of them, are refused (as in PyTorch) while
 * grad mode is on. */
YT_INTERNAL yt_status yt__check_inplace(yt_tensor *self, const char *op);
/* After in-place op `op` wrote values into `self` that do not depend on its old ones (checked with
 * yt__check_inplace first): records a node that gives self's old history a zero gradient, and
 * rebases the base's history when self is a view (runtime/autograd/overwrite.c). */
YT_INTERNAL yt_status yt__record_overwrite(yt_tensor *self, const char *op);

/* A tensor saved for backward. Inputs are kept as they are (strong reference); outputs are kept
 * as a detached alias so the node does not own itself, and re-attached on unpack. */
typedef struct yt_saved {
    yt_tensor *tensor;
    uint64_t version; /* storage version when saved */
    bool is_output;
    bool defined; /* false: an optional tensor that was not given (None) */
    int output_nr;
} yt_saved;

YT_INTERNAL yt_status yt__saved_init(yt_saved *saved, yt_tensor *t, bool is_output, int output_nr);
/* A new reference to the saved tensor, or NULL with YT_ERR_STATE when it was modified in place
 * since ("mul: saved tensor 'other' was modified by an in-place operation: version 2, expected
 * 1") or already freed by an earlier backward. `owner` re-attaches saved outputs. */
YT_INTERNAL yt_tensor *yt__saved_unpack(yt_saved *saved, yt_node *owner, const char *name);
YT_INTERNAL void yt__saved_release(yt_saved *saved);
/* yt__saved_unpack for a Tensor? argument: NULL without an error when it was saved as None. */
YT_INTERNAL yt_tensor *yt__saved_unpack_optional(yt_saved *saved, yt_node *owner, const char *name);
/* A Tensor[] argument saved element by element (NULL elements stay None): *saved becomes an array
 * of n, freed by yt__saved_list_release. */
YT_INTERNAL yt_status yt__saved_list_init(yt_saved **saved, yt_tensor *const *ts, int n);
/* A malloc'd array of n new references (NULL for None elements), or NULL with the error set;
 * release it with yt__release_list. */
YT_INTERNAL yt_tensor **yt__saved_list_unpack(yt_saved *saved, int n, yt_node *owner,
                                              const char *name);
YT_INTERNAL void yt__saved_list_release(yt_saved **saved, int n);
/* Releases n tensors and frees the array holding them (NULL: nothing). */
YT_INTERNAL void yt__release_list(yt_tensor **ts, int n);
/* True when the node needs the gradient of any of its inputs start .. start + n - 1 (the elements
 * of a Tensor[] argument). */
static inline bool
yt__needs_any_grad(const yt_node *node, int start, int n)
{
    for (int i = start; i < start + n; i++)
        if (node->needs_grad[i])
            return true;
    return false;
}

/* ---------------------------------------------------------------- random numbers */

/* Philox4x32-10 counter-based generator: (seed, offset) fully defines the stream, so CPU and CUDA
 * kernels can draw the same numbers and a checkpoint needs only two integers. */
typedef struct yt_generator {
    uint64_t seed;
    uint64_t offset; /* 128-bit blocks consumed so far */
} yt_generator;

YT_INTERNAL yt_generator *yt__default_generator(void);
/* Reserves `n_blocks` blocks of 4 uint32 and returns the first block's counter. */
YT_INTERNAL uint64_t yt__generator_reserve(yt_generator *gen, uint64_t n_blocks);
/* Block `counter` of the stream for `seed`. */
YT_INTERNAL void yt__philox(uint64_t seed, uint64_t counter, uint32_t out[4]);
/* What a random kernel draws from: its seed and the first of the blocks it reserved. */
typedef struct yt__philox_stream {
    uint64_t seed;
    uint64_t counter;
} yt__philox_stream;
/* Reserves `n_blocks` blocks of `gen` (NULL: the default generator) for one op. */
YT_INTERNAL yt__philox_stream yt__generator_stream(yt_generator *gen, uint64_t n_blocks);

/* ---------------------------------------------------------------- support for generated op functions
 * (runtime/op_support.c) */

/* A NULL tensor argument: returns NULL, recording "OP: ARG is NULL" only when no error is already
 * recorded, so the first error of a chain survives. */
YT_INTERNAL yt_tensor *yt__null_arg(const char *op, const char *arg);
/* The same for functions returning yt_status: the recorded (or new) error code. */
YT_INTERNAL yt_status yt__null_status(const char *op, const char *arg);
/* A copy of the one-element tensor `t` (a `converts:` argument of ops.yaml) in `dtype`, when its
 * value converts without overflow as a Scalar would (PyTorch reads such a tensor as one:
 * masked_fill's value); else NULL with YT_ERR_VALUE naming op and argument `name`. Defined with
 * the Scalar rules, in kernels/cpu/pointwise_math.c. */
YT_INTERNAL yt_tensor *yt__convert_0d(yt_tensor *t, yt_dtype dtype, const char *op,
                                      const char *name);
/* The same for a NULL element `index` of a Tensor[] argument: "OP: ARG[INDEX] is NULL". */
YT_INTERNAL yt_tensor *yt__null_elem(const char *op, const char *arg, int index);
YT_INTERNAL yt_status yt__null_elem_status(const char *op, const char *arg, int index);
/* -1, the error return of functions returning a count (-> Tensor[] ops):
 * `return yt__count_error(yt__fail_status(...));` */
static inline int64_t
yt__count_error(yt_status status)
{
    (void)status;
    return -1;
}
/* For -> Tensor[] composites: YT_OK when `count` pieces fit in out_capacity (or out is NULL: only
 * counting); otherwise records "OP: out_capacity=1 is too small for the 3 results" (YT_ERR_VALUE). */
static inline yt_status
yt__check_capacity(const char *op, int64_t count, yt_tensor **out, int64_t out_capacity)
{
    if (out == NULL || count <= out_capacity)
        return YT_OK;
    return yt__fail_status(YT_ERR_VALUE, "%s: out_capacity=%lld is too small for the %lld results",
                           op, (long long)out_capacity, (long long)count);
}
/* The recorded error code, or YT_ERR_INTERNAL when a NULL arrived without one. */
YT_INTERNAL yt_status yt__last_status(void);
/* A contiguous copy of `t` converted to `dtype`, outside autograd (inputs of kernels). */
YT_INTERNAL yt_tensor *yt__cast_copy(yt_tensor *t, yt_dtype dtype);
/* Releases `cast` when it is a copy made by yt__cast_copy (not `orig` itself). */
YT_INTERNAL void yt__release_cast(yt_tensor *cast, yt_tensor *orig);
/* Checks that `dst` (an out= tensor, or self of an in-place op) can receive a result of `shape`
 * and `dtype` on `device`: same shape, a dtype the result may be cast to, and no two elements
 * sharing memory. Records "OP: ARG has shape [2, 3] but the result has shape [4, 3]" etc. */
YT_INTERNAL yt_status yt__check_out(yt_tensor *dst, const yt_shape *shape, yt_dtype dtype,
                                    yt_device device, const char *op, const char *arg);
/* Whether writing `dst` could change an element of inputs[0 .. n) before the kernel has read it:
 * dst's memory meets an input's (NULLs skipped). With `elementwise` (pointwise kernels, which read
 * each input element at the index they write), an input whose elements, broadcast to dst's shape,
 * are dst's own at the same index does not count. The generated out= and in-place functions then
 * compute into a temporary and copy it into dst, so `m.add_(m.t())` gets the value it would out of
 * place. */
YT_INTERNAL bool yt__writes_over_inputs(const yt_tensor *dst, int64_t n, yt_tensor *const *inputs,
                                        bool elementwise);
/* A copy of `t` (own storage) that keeps t's autograd identity (grad_fn, output_nr,
 * requires_grad): in-place ops save it when their backward needs self's old value. */
YT_INTERNAL yt_tensor *yt__snapshot(yt_tensor *t);

#endif

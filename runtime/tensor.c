/* Tensors: handles (sizes, strides, offset, dtype) over refcounted storage. Creation, views,
 * reference counting, the live-tensor counter, the public accessors, copying out, printing.
 *
 * yt__empty and yt_release run on every op: handles come from the caching allocator's
 * per-thread lists (no malloc, no lock) and the live counter is per thread (no atomic). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static yt_tensor *
new_handle(void)
{
    yt_tensor *t = yt__cpu_alloc(sizeof *t);
    if (t == NULL)
        return NULL;
    atomic_init(&t->refcount, 1);
    t->storage = NULL;
    t->offset = 0;
    t->numel = 1;
    t->dim = 0;
    t->dtype = YT_DTYPE_F32;
    t->device = YT_DEVICE_CPU;
    t->is_contiguous = true;
    t->requires_grad = false;
    t->grad_fn = NULL;
    t->output_nr = 0;
    t->grad = NULL;
    t->view_base = NULL;
    t->view_version = 0;
    t->no_grad_view = false;
    yt__count_live(1, 0);
    return t;
}

/* yt__empty with the name of the public function for messages. */
yt_tensor *
yt__empty_named(const char *op, const yt_shape *shape, yt_dtype dtype, yt_device device)
{
    if ((unsigned)dtype >= YT_DTYPE_COUNT)
        return yt__fail(YT_ERR_DTYPE, "%s: invalid dtype %d", op, (int)dtype);
    if ((unsigned)device >= YT_DEVICE_COUNT)
        return yt__fail(YT_ERR_DEVICE, "%s: invalid device %d", op, (int)device);
    if (shape->dim < 0 || shape->dim > YT_MAX_DIM)
        return yt__fail(YT_ERR_VALUE, "%s: %d dims is out of range 0..%d", op, shape->dim,
                        YT_MAX_DIM);

    int64_t numel = 1;
    bool overflow = false;
    for (int i = 0; i < shape->dim; i++) {
        if (shape->sizes[i] < 0)
            return yt__fail(YT_ERR_VALUE, "%s: size(%d)=%lld is negative", op, i,
                            (long long)shape->sizes[i]);
        overflow = overflow || !yt__mul_ok(&numel, numel, shape->sizes[i]);
    }
    int64_t nbytes = 0;
    if (overflow || !yt__mul_ok(&nbytes, numel, (int64_t)yt_dtype_size(dtype))) {
        char buf[200];
        yt__format_sizes(buf, sizeof buf, shape->sizes, shape->dim);
        return yt__fail(YT_ERR_NOMEM, "%s: a %s tensor of shape %s needs more than 2^63 bytes", op,
                        yt_dtype_name(dtype), buf);
    }

    yt_tensor *t = new_handle();
    if (t == NULL)
        return yt__fail(YT_ERR_NOMEM, "%s: out of memory", op);
    t->storage = yt__storage_new((size_t)nbytes, device);
    if (t->storage == NULL) {
        yt_release(t);
        if (yt_errcode() != YT_ERR_NOMEM)
            return NULL; /* e.g. no allocator for the device: keep that message */
        char buf[200];
        yt__format_sizes(buf, sizeof buf, shape->sizes, shape->dim);
        return yt__fail(YT_ERR_NOMEM,
                        "%s: out of memory allocating %lld bytes for a %s tensor of shape %s", op,
                        (long long)nbytes, yt_dtype_name(dtype), buf);
    }
    t->dim = shape->dim;
    t->dtype = dtype;
    t->device = device;
    t->numel = numel;
    memcpy(t->sizes, shape->sizes, (size_t)shape->dim * sizeof t->sizes[0]);
    yt__contiguous_strides(t->strides, t->sizes, t->dim);
    return t;
}

yt_tensor *
yt__empty(const yt_shape *shape, yt_dtype dtype, yt_device device)
{
    return yt__empty_named("empty", shape, dtype, device);
}

yt_tensor *
yt__empty_like(const yt_tensor *like, yt_dtype dtype)
{
    yt_shape shape;
    yt__shape_of(&shape, like);
    return yt__empty_named("empty_like", &shape, dtype, like->device);
}

yt_tensor *
yt__view_of(yt_tensor *base, int dim, const int64_t *sizes, const int64_t *strides, int64_t offset)
{
    yt_tensor *t = new_handle();
    if (t == NULL)
        return yt__fail(YT_ERR_NOMEM, "view: out of memory");
    yt__storage_retain(base->storage);
    t->storage = base->storage;
    t->offset = offset;
    t->dim = dim;
    t->dtype = base->dtype;
    t->device = base->device;
    if (dim > 0) { /* 0-d views may pass NULL arrays */
        memcpy(t->sizes, sizes, (size_t)dim * sizeof t->sizes[0]);
        memcpy(t->strides, strides, (size_t)dim * sizeof t->strides[0]);
    }
    yt__tensor_set_geometry(t);
    return t;
}

yt_tensor *
yt__alias(yt_tensor *t)
{
    return yt__view_of(t, t->dim, t->sizes, t->strides, t->offset);
}

void
yt__element_span(const yt_tensor *t, int64_t *first, int64_t *last)
{
    *first = *last = t->offset;
    for (int i = 0; i < t->dim; i++) {
        const int64_t span = t->strides[i] * (t->sizes[i] - 1);
        if (span < 0)
            *first += span;
        else
            *last += span;
    }
}

void
yt__tensor_set_geometry(yt_tensor *t)
{
    /* Views were checked against their base; saturate rather than wrap if an expand went
     * beyond what an int64 can count. */
    int64_t numel = 1;
    for (int i = 0; i < t->dim; i++)
        if (!yt__mul_ok(&numel, numel, t->sizes[i]))
            numel = INT64_MAX;
    t->numel = numel;

    /* PyTorch's rule: size-1 dims may have any stride, and empty tensors are contiguous. */
    bool contiguous = true;
    if (numel != 0) {
        int64_t expected = 1;
        for (int i = t->dim - 1; i >= 0; i--) {
            if (t->sizes[i] == 1)
                continue;
            if (t->strides[i] != expected) {
                contiguous = false;
                break;
            }
            expected *= t->sizes[i];
        }
    }
    t->is_contiguous = contiguous;
}

void
yt__shape_of(yt_shape *out, const yt_tensor *t)
{
    out->dim = t->dim;
    memcpy(out->sizes, t->sizes, (size_t)t->dim * sizeof out->sizes[0]);
}

void
yt__contiguous_strides(int64_t *strides, const int64_t *sizes, int dim)
{
    /* Callers checked that the element count fits, but an empty tensor's count says nothing about
     * the product of its other sizes ([0, 2^40, 2^40]): its strides, never stepped along, saturate. */
    int64_t stride = 1;
    for (int i = dim - 1; i >= 0; i--) {
        strides[i] = stride;
        if (sizes[i] > 1 && !yt__mul_ok(&stride, stride, sizes[i]))
            stride = INT64_MAX;
    }
}

/* A handle on the stack over caller-owned memory, so copies to and from user buffers reuse the
 * strided, converting, threaded copy loops. Never retained or released. */
static void
wrap_buffer(yt_tensor *t, yt_storage *st, void *data, size_t nbytes, yt_dtype dtype, int dim,
            const int64_t *sizes)
{
    memset(st, 0, sizeof *st);
    atomic_init(&st->refcount, 1);
    atomic_init(&st->version, 0);
    st->data = data;
    st->nbytes = nbytes;
    st->device = YT_DEVICE_CPU;
    memset(t, 0, sizeof *t);
    atomic_init(&t->refcount, 1);
    t->storage = st;
    t->dim = dim;
    t->dtype = dtype;
    t->device = YT_DEVICE_CPU;
    if (dim > 0) /* sizes may be NULL for a 0-d buffer */
        memcpy(t->sizes, sizes, (size_t)dim * sizeof t->sizes[0]);
    yt__contiguous_strides(t->strides, t->sizes, dim);
    yt__tensor_set_geometry(t);
}

/* ---------------------------------------------------------------- public creation */

yt_tensor *
yt_tensor_from_data(const void *data, const int64_t *sizes, int ndim, yt_dtype dtype)
{
    static const char op[] = "yt_tensor_from_data";
    if (ndim < 0 || ndim > YT_MAX_DIM)
        return yt__fail(YT_ERR_VALUE, "%s: ndim=%d is out of range 0..%d", op, ndim, YT_MAX_DIM);
    if (ndim > 0 && sizes == NULL)
        return yt__fail(YT_ERR_VALUE, "%s: sizes is NULL but ndim=%d", op, ndim);
    if ((unsigned)dtype >= YT_DTYPE_COUNT)
        return yt__fail(YT_ERR_DTYPE, "%s: invalid dtype %d", op, (int)dtype);
    yt_shape shape = {.dim = ndim};
    for (int i = 0; i < ndim; i++) {
        if (sizes[i] < 0)
            return yt__fail(YT_ERR_VALUE, "%s: sizes[%d]=%lld is negative", op, i,
                            (long long)sizes[i]);
        shape.sizes[i] = sizes[i];
    }
    yt_tensor *t = yt__empty_named(op, &shape, dtype, YT_DEVICE_CPU);
    if (t == NULL)
        return NULL;
    if (t->numel > 0 && data == NULL) {
        int64_t numel = t->numel;
        yt_release(t);
        return yt__fail(YT_ERR_VALUE, "%s: data is NULL but the tensor has %lld elements", op,
                        (long long)numel);
    }
    char *dst = t->storage->data;
    if (dtype == YT_DTYPE_BOOL) {
        /* Normalise to 0/1: any other byte in a C bool is undefined behaviour in the kernels. */
        const unsigned char *src = data;
        for (int64_t i = 0; i < t->numel; i++)
            dst[i] = src[i] != 0;
    } else if (t->numel > 0) {
        memcpy(dst, data, t->storage->nbytes);
    }
    return yt__scope_track(t);
}

yt_tensor *
yt_scalar_tensor(yt_scalar value, yt_dtype dtype)
{
    static const char op[] = "yt_scalar_tensor";
    if ((unsigned)value.kind > YT_SCALAR_FLOAT)
        return yt__fail(YT_ERR_VALUE, "%s: value has an invalid scalar kind %d", op,
                        (int)value.kind);
    if (dtype == YT_DTYPE_NONE)
        dtype = yt__scalar_dtype(value);
    if ((unsigned)dtype >= YT_DTYPE_COUNT)
        return yt__fail(YT_ERR_DTYPE, "%s: invalid dtype %d", op, (int)dtype);
    yt_shape shape = {.dim = 0};
    yt_tensor *t = yt__empty_named(op, &shape, dtype, YT_DEVICE_CPU);
    if (t == NULL)
        return NULL;
    /* Convert through the copy loops, so the scalar rounds exactly as a cast would. */
    union {
        bool b;
        int64_t i;
        double f;
    } v;
    v.i = 0;
    yt_dtype src_dtype = yt__scalar_dtype(value);
    if (src_dtype == YT_DTYPE_BOOL)
        v.b = value.v.b;
    else if (src_dtype == YT_DTYPE_I64)
        v.i = value.v.i;
    else
        v.f = value.v.f;
    yt_storage st;
    yt_tensor src;
    wrap_buffer(&src, &st, &v, sizeof v, src_dtype, 0, NULL);
    if (yt__copy_into(t, &src) != YT_OK) {
        yt_release(t);
        return NULL;
    }
    return yt__scope_track(t);
}

/* ---------------------------------------------------------------- reference counting */

yt_tensor *
yt_retain(yt_tensor *t)
{
    if (t != NULL)
        atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
    return t;
}

void
yt_release(yt_tensor *t)
{
    if (t == NULL)
        return;
    if (atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel) != 1)
        return;
    yt__storage_release(t->storage);
    yt_release(t->grad); /* a grad has no grad of its own: recursion depth 1 */
    yt__node_release(t->grad_fn);
    yt_release(t->view_base); /* a root: not a view itself, so the recursion stops here */
    yt__count_live(-1, 0);
    yt__cpu_free(t, sizeof *t);
}

/* ---------------------------------------------------------------- accessors */

int
yt_tensor_dim(const yt_tensor *t)
{
    return t ? t->dim : 0;
}

/* Wraps `dim` for the size/stride accessors; -1 when out of range (error recorded). */
static int
accessor_dim(const yt_tensor *t, int dim, const char *op)
{
    if (dim < -t->dim || dim >= t->dim) {
        if (t->dim == 0)
            yt__fail(YT_ERR_VALUE, "%s: dim=%d is out of range for a 0-D tensor (it has no dims)",
                     op, dim);
        else
            yt__fail(YT_ERR_VALUE, "%s: dim=%d is out of range for a %d-D tensor (expected %d..%d)",
                     op, dim, t->dim, -t->dim, t->dim - 1);
        return -1;
    }
    return dim < 0 ? dim + t->dim : dim;
}

int64_t
yt_tensor_size(const yt_tensor *t, int dim)
{
    if (t == NULL)
        return 0;
    int d = accessor_dim(t, dim, "yt_tensor_size");
    return d < 0 ? -1 : t->sizes[d];
}

int64_t
yt_tensor_stride(const yt_tensor *t, int dim)
{
    if (t == NULL)
        return 0;
    int d = accessor_dim(t, dim, "yt_tensor_stride");
    return d < 0 ? -1 : t->strides[d];
}

const int64_t *
yt_tensor_sizes(const yt_tensor *t)
{
    return t ? t->sizes : NULL;
}

const int64_t *
yt_tensor_strides(const yt_tensor *t)
{
    return t ? t->strides : NULL;
}

int64_t
yt_tensor_numel(const yt_tensor *t)
{
    return t ? t->numel : 0;
}

int64_t
yt_tensor_offset(const yt_tensor *t)
{
    return t ? t->offset : 0;
}

yt_dtype
yt_tensor_dtype(const yt_tensor *t)
{
    return t ? t->dtype : YT_DTYPE_NONE; /* not 0: that would read as a valid bool tensor */
}

yt_device
yt_tensor_device(const yt_tensor *t)
{
    return t ? t->device : YT_DEVICE_NONE;
}

bool
yt_tensor_is_contiguous(const yt_tensor *t)
{
    return t ? t->is_contiguous : false;
}

void *
yt_tensor_data(yt_tensor *t)
{
    if (t == NULL || t->device != YT_DEVICE_CPU)
        return NULL;
    return yt__data_ptr(t);
}

uint64_t
yt_tensor_version(const yt_tensor *t)
{
    if (t == NULL)
        return 0;
    return (uint64_t)atomic_load_explicit(&t->storage->version, memory_order_relaxed);
}

/* ---------------------------------------------------------------- reading elements */

yt_status
yt_tensor_copy_to(yt_tensor *t, void *dst, size_t dst_bytes, yt_dtype dtype)
{
    static const char op[] = "yt_tensor_copy_to";
    if (t == NULL)
        return yt__null_status(op, "t");
    if ((unsigned)dtype >= YT_DTYPE_COUNT)
        return yt__fail_status(YT_ERR_DTYPE, "%s: invalid dtype %d", op, (int)dtype);
    if (t->device != YT_DEVICE_CPU)
        return yt__fail_status(YT_ERR_DEVICE, "%s: t is on %s; only cpu tensors can be read", op,
                               yt_device_name(t->device));
    int64_t need;
    if (!yt__mul_ok(&need, t->numel, (int64_t)yt_dtype_size(dtype)) || (uint64_t)need > dst_bytes)
        return yt__fail_status(
            YT_ERR_VALUE, "%s: %lld elements of %s need %lld bytes but dst has %zu", op,
            (long long)t->numel, yt_dtype_name(dtype), (long long)need, dst_bytes);
    if (need == 0)
        return YT_OK;
    if (dst == NULL)
        return yt__fail_status(YT_ERR_VALUE, "%s: dst is NULL", op);
    yt_storage st;
    yt_tensor out;
    wrap_buffer(&out, &st, dst, (size_t)need, dtype, t->dim, t->sizes);
    return yt__copy_into(&out, t);
}

/* One element at `p` as a double (i64 beyond 2^53 rounds, as PyTorch's item() of a float). */
static double
load_double(const char *p, yt_dtype dtype)
{
    switch (dtype) {
    case YT_DTYPE_BOOL:
        return *(const bool *)p ? 1.0 : 0.0;
    case YT_DTYPE_U8:
        return *(const uint8_t *)p;
    case YT_DTYPE_I8:
        return *(const int8_t *)p;
    case YT_DTYPE_I16:
        return *(const int16_t *)p;
    case YT_DTYPE_I32:
        return *(const int32_t *)p;
    case YT_DTYPE_I64:
        return (double)*(const int64_t *)p;
    case YT_DTYPE_F16:
        return yt__f16_to_f32(*(const uint16_t *)p);
    case YT_DTYPE_BF16:
        return yt__bf16_to_f32(*(const uint16_t *)p);
    case YT_DTYPE_F32:
        return *(const float *)p;
    case YT_DTYPE_F64:
        return *(const double *)p;
    default:
        return NAN;
    }
}

double
yt_item(yt_tensor *t)
{
    if (t == NULL)
        return NAN; /* documented: the error of whatever produced the NULL stays */
    if (t->numel != 1) {
        yt__fail(YT_ERR_SHAPE, "yt_item: t has %lld elements, expected exactly 1",
                 (long long)t->numel);
        return NAN;
    }
    if (t->device != YT_DEVICE_CPU) {
        yt__fail(YT_ERR_DEVICE, "yt_item: t is on %s; only cpu tensors can be read",
                 yt_device_name(t->device));
        return NAN;
    }
    return load_double(yt__data_ptr(t), t->dtype);
}

/* ---------------------------------------------------------------- printing
 * PyTorch's repr: one number format for the whole tensor (integers as "1.", fixed "%.4f", or
 * "%.4e" when magnitudes span too much), right-aligned to one width, rows wrapped at 80 columns,
 * and tensors over 1000 elements summarised to 3 items at each edge of every dim. */

enum { PRINT_THRESHOLD = 1000, PRINT_EDGE = 3, LINE_WIDTH = 80, PREFIX_LEN = 7 };

typedef enum print_pass { PASS_STATS, PASS_WIDTH, PASS_PRINT } print_pass;

typedef struct printer {
    const yt_tensor *t;
    FILE *out;
    print_pass pass;
    bool summarize;
    bool int_mode; /* every finite value is an integer */
    bool sci;
    bool any_nonzero;
    double max_abs, min_abs; /* over nonzero finite values */
    int width;
    int col; /* column of the output, for placing suffixes */
} printer;

static void
put(printer *p, const char *s)
{
    if (p->pass != PASS_PRINT)
        return;
    fputs(s, p->out);
    const char *nl = strrchr(s, '\n');
    p->col = nl ? (int)strlen(nl + 1) : p->col + (int)strlen(s);
}

static void
put_spaces(printer *p, int n)
{
    for (int i = 0; i < n; i++)
        put(p, " ");
}

static int
format_element(const printer *p, const char *ptr, char *buf, size_t cap)
{
    yt_dtype dtype = p->t->dtype;
    if (dtype == YT_DTYPE_BOOL)
        return snprintf(buf, cap, "%s", *(const bool *)ptr ? "True" : "False");
    if (dtype == YT_DTYPE_I64)
        return snprintf(buf, cap, "%lld", (long long)*(const int64_t *)ptr);
    double v = load_double(ptr, dtype);
    if (!yt_dtype_is_floating(dtype))
        return snprintf(buf, cap, "%lld", (long long)v); /* exact: narrower than 2^53 */
    if (isnan(v))
        return snprintf(buf, cap, "nan");
    if (isinf(v))
        return snprintf(buf, cap, v > 0 ? "inf" : "-inf");
    if (p->sci)
        return snprintf(buf, cap, "%.4e", v);
    if (p->int_mode)
        return snprintf(buf, cap, "%.0f.", v);
    return snprintf(buf, cap, "%.4f", v);
}

static void
visit_element(printer *p, const char *ptr)
{
    char buf[64];
    if (p->pass == PASS_STATS) {
        if (!yt_dtype_is_floating(p->t->dtype))
            return;
        double v = load_double(ptr, p->t->dtype);
        if (!isfinite(v) || v == 0)
            return;
        if (v != ceil(v))
            p->int_mode = false;
        double a = fabs(v);
        p->max_abs = p->any_nonzero ? fmax(p->max_abs, a) : a;
        p->min_abs = p->any_nonzero ? fmin(p->min_abs, a) : a;
        p->any_nonzero = true;
        return;
    }
    int len = format_element(p, ptr, buf, sizeof buf);
    if (p->pass == PASS_WIDTH) {
        if (len > p->width)
            p->width = len;
        return;
    }
    put_spaces(p, p->width - len);
    put(p, buf);
}

/* Prints dims depth.. of the block starting at element `offset`; `indent` is the column of the
 * opening bracket. The same walk measures in the first two passes (put prints nothing). */
static void
emit(printer *p, int depth, int64_t offset, int indent)
{
    const yt_tensor *t = p->t;
    const char *base = t->storage->data;
    int64_t elsize = (int64_t)yt_dtype_size(t->dtype);
    if (t->dim == 0) {
        visit_element(p, base + offset * elsize);
        return;
    }
    int64_t size = t->sizes[depth];
    int64_t stride = t->strides[depth];
    bool cut = p->summarize && size > 2 * PRINT_EDGE;
    int64_t n_items = cut ? 2 * PRINT_EDGE + 1 : size;
    bool innermost = depth == t->dim - 1;
    int per_line = (LINE_WIDTH - indent) / (p->width + 2);
    if (per_line < 1)
        per_line = 1;

    put(p, "[");
    for (int64_t k = 0; k < n_items; k++) {
        if (k > 0 && innermost) {
            put(p, k % per_line == 0 ? ",\n" : ", ");
            if (k % per_line == 0)
                put_spaces(p, indent + 1);
        } else if (k > 0) {
            put(p, ",");
            for (int i = depth; i < t->dim - 1; i++)
                put(p, "\n");
            put_spaces(p, indent + 1);
        }
        if (cut && k == PRINT_EDGE) {
            put(p, innermost ? " ..." : "...");
            continue;
        }
        int64_t i = cut && k > PRINT_EDGE ? size - (n_items - k) : k;
        if (innermost)
            visit_element(p, base + (offset + i * stride) * elsize);
        else
            emit(p, depth + 1, offset + i * stride, indent + 1);
    }
    put(p, "]");
}

/* Appends ", suffix", or starts a new line when it would pass the line width. */
static void
put_suffix(printer *p, const char *suffix)
{
    if (p->col + 2 + (int)strlen(suffix) + 2 > LINE_WIDTH) {
        put(p, ",\n");
        put_spaces(p, PREFIX_LEN);
    } else {
        put(p, ", ");
    }
    put(p, suffix);
}

yt_status
yt_tensor_print(yt_tensor *t, void *file)
{
    if (t == NULL)
        return yt__null_status("yt_tensor_print", "t");
    if (t->device != YT_DEVICE_CPU)
        return yt__fail_status(YT_ERR_DEVICE,
                               "yt_tensor_print: t is on %s; only cpu tensors can be printed",
                               yt_device_name(t->device));
    printer p = {.t = t, .out = file ? file : stdout, .int_mode = true};
    p.summarize = t->numel > PRINT_THRESHOLD;

    if (t->numel > 0) {
        p.pass = PASS_STATS;
        emit(&p, 0, t->offset, PREFIX_LEN);
        if (p.any_nonzero) {
            double ratio = p.max_abs / p.min_abs;
            p.sci = ratio > 1000.0 || p.max_abs > 1.0e8 || (!p.int_mode && p.min_abs < 1.0e-4);
        }
        p.pass = PASS_WIDTH;
        emit(&p, 0, t->offset, PREFIX_LEN);
    }

    p.pass = PASS_PRINT;
    put(&p, "tensor(");
    if (t->numel > 0) {
        emit(&p, 0, t->offset, PREFIX_LEN);
    } else {
        put(&p, "[]");
        if (t->dim != 1) {
            char buf[200] = "size=(";
            for (int i = 0; i < t->dim; i++)
                snprintf(buf + strlen(buf), sizeof buf - strlen(buf), i ? ", %lld" : "%lld",
                         (long long)t->sizes[i]);
            strcat(buf, ")");
            put_suffix(&p, buf);
        }
    }
    char buf[160];
    snprintf(buf, sizeof buf, "dtype=%s", yt_dtype_name(t->dtype));
    put_suffix(&p, buf);
    if (t->grad_fn != NULL) {
        snprintf(buf, sizeof buf, "grad_fn=<%s>", t->grad_fn->kind->name);
        put_suffix(&p, buf);
    } else if (t->requires_grad) {
        put_suffix(&p, "requires_grad=True");
    }
    put(&p, ")\n");
    if (fflush(p.out) != 0 || ferror(p.out))
        return yt__fail_status(YT_ERR_IO, "yt_tensor_print: write failed");
    return YT_OK;
}

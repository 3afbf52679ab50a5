/* Basic public types shared by every part of the API: status codes, dtypes, devices, scalars.
 * Included by <yaten.h>; not meant to be included on its own. */
#ifndef YATEN_TYPES_H
#define YATEN_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(YT_BUILDING_LIBRARY)
#define YT_API __attribute__((visibility("default")))
#else
#define YT_API
#endif

#define YT_VERSION        "0.1.0"
#define YT_VERSION_NUMBER 1000 /* major * 1000000 + minor * 1000 + patch */

/* Most dimensions a tensor may have. */
#define YT_MAX_DIM 8

/* Result of calls that return nothing else. YT_OK is zero; every other value names a class of
 * failure, and the thread-local message (yt_errmsg) carries the details. */
typedef enum yt_status {
    YT_OK = 0,
    YT_ERR_SHAPE,    /* sizes do not match, broadcast or fit */
    YT_ERR_DTYPE,    /* a dtype the op does not accept, or an unsafe cast */
    YT_ERR_DEVICE,   /* tensors on different devices, or no kernel for the device */
    YT_ERR_VALUE,    /* an argument outside its domain (negative size, dim out of range, ...) */
    YT_ERR_NOMEM,    /* allocation failed, or a size overflowed */
    YT_ERR_STATE,    /* misuse of state: backward twice, saved tensor modified in place, ... */
    YT_ERR_IO,       /* file or stream errors */
    YT_ERR_CUDA,     /* CUDA runtime or cuBLAS failures */
    YT_ERR_INTERNAL, /* a bug in yaten: please report it */
} yt_status;

/* Element types, in PyTorch's promotion order within each category. */
typedef enum yt_dtype {
    YT_DTYPE_NONE = -1, /* "not given": the op picks (only where an argument is optional) */
    YT_DTYPE_BOOL = 0,
    YT_DTYPE_U8,
    YT_DTYPE_I8,
    YT_DTYPE_I16,
    YT_DTYPE_I32,
    YT_DTYPE_I64,
    YT_DTYPE_F16,
    YT_DTYPE_BF16,
    YT_DTYPE_F32,
    YT_DTYPE_F64,
    YT_DTYPE_COUNT
} yt_dtype;

typedef enum yt_device {
    YT_DEVICE_NONE = -1, /* "not given": the op picks */
    YT_DEVICE_CPU = 0,
    YT_DEVICE_CUDA,
    YT_DEVICE_COUNT
} yt_device;

/* A number passed to an op (PyTorch's Scalar). Its kind takes part in type promotion the way a
 * Python number does: int_tensor + yt_float(0.5) is a float tensor, int_tensor + yt_int(2)
 * stays integral. Build one with yt_float(), yt_int() or yt_bool(). */
typedef enum yt_scalar_kind {
    YT_SCALAR_BOOL,
    YT_SCALAR_INT,
    YT_SCALAR_FLOAT,
} yt_scalar_kind;

typedef struct yt_scalar {
    yt_scalar_kind kind;
    union {
        bool b;
        int64_t i;
        double f;
    } v;
} yt_scalar;

static inline yt_scalar
yt_float(double value)
{
    yt_scalar s = {.kind = YT_SCALAR_FLOAT, .v.f = value};
    return s;
}

static inline yt_scalar
yt_int(int64_t value)
{
    yt_scalar s = {.kind = YT_SCALAR_INT, .v.i = value};
    return s;
}

static inline yt_scalar
yt_bool(bool value)
{
    yt_scalar s = {.kind = YT_SCALAR_BOOL, .v.b = value};
    return s;
}

/* The value of an optional integer argument (`int?` in ops.yaml) that means "None". */
#define YT_NONE INT64_MIN

/* A random number generator (Philox4x32-10 stream: seed and offset), for `Generator?` arguments of
 * random ops; NULL means the default generator. Opaque. */
typedef struct yt_generator yt_generator;

/* A tensor: sizes, strides and offset (in elements) over shared, refcounted storage.
 * Opaque; use the accessors in <yaten/tensor.h>. */
typedef struct yt_tensor yt_tensor;

#endif

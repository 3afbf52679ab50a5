/* Typed sums shared by the norm kernels (norm_rows.c and batch_norm.c include this once per
 * compute type, with NT = float or double, FN(name) giving each function a per-type name, and
 * NORM_BLOCK and NORM_VBYTES defined).
 *
 * Sums run in NT inside blocks of NORM_BLOCK elements and in double across blocks, which keeps
 * long runs accurate. Inside a block they go into several vector accumulators, so no add waits
 * for the one before (a single running sum is bound by the add latency when the data is in
 * cache). All are `static inline`: each includer uses some of them. */

#ifndef NORM_VBYTES
#ifdef __AVX__
#define NORM_VBYTES 32 /* one AVX register */
#else
#define NORM_VBYTES 16 /* one SSE / NEON register: wider vectors would change the call ABI */
#endif
#endif

/* NORM_VBYTES bytes of NT values, one vector register (GCC/Clang vector extension). */
typedef NT FN(vec) __attribute__((vector_size(NORM_VBYTES)));
#define VL ((int64_t)(NORM_VBYTES / sizeof(NT)))

static inline FN(vec) FN(load)(const NT *p)
{
    FN(vec) v;
    memcpy(&v, p, sizeof v); /* unaligned */
    return v;
}

/* The lanes of four accumulators, added. */
static inline NT
FN(hsum)(FN(vec) a0, FN(vec) a1, FN(vec) a2, FN(vec) a3)
{
    FN(vec) a = (a0 + a1) + (a2 + a3);
    NT s = 0;
    for (int k = 0; k < VL; k++)
        s += a[k];
    return s;
}

/* sum of x[0..n) */
static inline double
FN(sum)(const NT *x, int64_t n)
{
    double total = 0;
    for (int64_t i0 = 0; i0 < n; i0 += NORM_BLOCK) {
        const int64_t e = i0 + NORM_BLOCK < n ? i0 + NORM_BLOCK : n;
        int64_t i = i0;
        FN(vec) a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
        for (; i + 4 * VL <= e; i += 4 * VL) {
            a0 += FN(load)(x + i);
            a1 += FN(load)(x + i + VL);
            a2 += FN(load)(x + i + 2 * VL);
            a3 += FN(load)(x + i + 3 * VL);
        }
        for (; i + VL <= e; i += VL)
            a0 += FN(load)(x + i);
        NT s = FN(hsum)(a0, a1, a2, a3);
        for (; i < e; i++)
            s += x[i];
        total += s;
    }
    return total;
}

/* sum of (x - m)^2 over x[0..n) */
static inline double
FN(sumsq)(const NT *x, int64_t n, NT m)
{
    double total = 0;
    for (int64_t i0 = 0; i0 < n; i0 += NORM_BLOCK) {
        const int64_t e = i0 + NORM_BLOCK < n ? i0 + NORM_BLOCK : n;
        int64_t i = i0;
        FN(vec) a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
        for (; i + 4 * VL <= e; i += 4 * VL) {
            FN(vec) d0 = FN(load)(x + i) - m, d1 = FN(load)(x + i + VL) - m;
            FN(vec) d2 = FN(load)(x + i + 2 * VL) - m, d3 = FN(load)(x + i + 3 * VL) - m;
            a0 += d0 * d0;
            a1 += d1 * d1;
            a2 += d2 * d2;
            a3 += d3 * d3;
        }
        for (; i + VL <= e; i += VL) {
            FN(vec) d = FN(load)(x + i) - m;
            a0 += d * d;
        }
        NT s = FN(hsum)(a0, a1, a2, a3);
        for (; i < e; i++)
            s += (x[i] - m) * (x[i] - m);
        total += s;
    }
    return total;
}

/* sum of dy * w (a) and dy * w * x (b) over one row of n, w = 1 when NULL */
static inline void
FN(dot2)(const NT *dy, const NT *x, const NT *w, int64_t n, double *a, double *b)
{
    double ta = 0, tb = 0;
    for (int64_t i0 = 0; i0 < n; i0 += NORM_BLOCK) {
        const int64_t e = i0 + NORM_BLOCK < n ? i0 + NORM_BLOCK : n;
        int64_t i = i0;
        FN(vec) a0 = {0}, a1 = {0}, b0 = {0}, b1 = {0};
        for (; i + 2 * VL <= e; i += 2 * VL) {
            FN(vec) g0 = FN(load)(dy + i), g1 = FN(load)(dy + i + VL);
            if (w) {
                g0 *= FN(load)(w + i);
                g1 *= FN(load)(w + i + VL);
            }
            a0 += g0;
            a1 += g1;
            b0 += g0 * FN(load)(x + i);
            b1 += g1 * FN(load)(x + i + VL);
        }
        for (; i + VL <= e; i += VL) {
            FN(vec) g0 = FN(load)(dy + i);
            if (w)
                g0 *= FN(load)(w + i);
            a0 += g0;
            b0 += g0 * FN(load)(x + i);
        }
        const FN(vec) zero = {0};
        NT sa = FN(hsum)(a0, a1, zero, zero), sb = FN(hsum)(b0, b1, zero, zero);
        for (; i < e; i++) {
            NT g = w ? dy[i] * w[i] : dy[i];
            sa += g;
            sb += g * x[i];
        }
        ta += sa;
        tb += sb;
    }
    *a = ta;
    *b = tb;
}

/* sum of g (sg) and of g * (x - m) (sgc) over x[0..n), added to *sg and *sgc */
static inline void
FN(dotc)(const NT *g, const NT *x, int64_t n, NT m, double *sg, double *sgc)
{
    double ta = 0, tb = 0;
    for (int64_t i0 = 0; i0 < n; i0 += NORM_BLOCK) {
        const int64_t e = i0 + NORM_BLOCK < n ? i0 + NORM_BLOCK : n;
        int64_t i = i0;
        FN(vec) a0 = {0}, a1 = {0}, b0 = {0}, b1 = {0};
        for (; i + 2 * VL <= e; i += 2 * VL) {
            FN(vec) g0 = FN(load)(g + i), g1 = FN(load)(g + i + VL);
            a0 += g0;
            a1 += g1;
            b0 += g0 * (FN(load)(x + i) - m);
            b1 += g1 * (FN(load)(x + i + VL) - m);
        }
        for (; i + VL <= e; i += VL) {
            FN(vec) g0 = FN(load)(g + i);
            a0 += g0;
            b0 += g0 * (FN(load)(x + i) - m);
        }
        const FN(vec) zero = {0};
        NT sa = FN(hsum)(a0, a1, zero, zero), sb = FN(hsum)(b0, b1, zero, zero);
        for (; i < e; i++) {
            sa += g[i];
            sb += g[i] * (x[i] - m);
        }
        ta += sa;
        tb += sb;
    }
    *sg += ta;
    *sgc += tb;
}

#undef VL

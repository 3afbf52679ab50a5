/* Microkernel template and vector transposes of the small-GEMM path, private to gemm_small.c,
 * which instantiates the template per element type and instruction set. An instruction set is
 * a prefix ISA naming these macros (ISA_VT, ISA_LANES, ...):
 *   VT vector type, LANES its length, MT mask type, ZERO() LOADU(p) STOREU(p, v) SET1(x)
 *   FMADD(a, b, c) = a * b + c, MUL(a, b), MKMASK(n) the first n lanes, MLOAD(m, p) (masked
 *   lanes read as 0 and are not accessed), MSTORE(p, m, v). */
#ifndef YT_KERNELS_CPU_GEMM_UKR_H
#define YT_KERNELS_CPU_GEMM_UKR_H

#include <immintrin.h>
#include <stdint.h>

#define UKR_CAT_(a, b) a##b
#define UKR_CAT(a, b)  UKR_CAT_(a, b)
#define V(ISA, OP)     UKR_CAT(ISA, _##OP)

/* Vector macro sets: S512 / D512 (AVX-512 f32 / f64), S256 / D256 (AVX2 f32 / f64). */
#define S512_VT              __m512
#define S512_LANES           16
#define S512_MT              __mmask16
#define S512_ZERO()          _mm512_setzero_ps()
#define S512_LOADU(p)        _mm512_loadu_ps(p)
#define S512_STOREU(p, v)    _mm512_storeu_ps(p, v)
#define S512_SET1(x)         _mm512_set1_ps(x)
#define S512_FMADD(a, b, c)  _mm512_fmadd_ps(a, b, c)
#define S512_ADD(a, b)       _mm512_add_ps(a, b)
#define S512_MUL(a, b)       _mm512_mul_ps(a, b)
#define S512_MKMASK(n)       ((__mmask16)((1u << (n)) - 1u))
#define S512_MLOAD(m, p)     _mm512_maskz_loadu_ps(m, p)
#define S512_MSTORE(p, m, v) _mm512_mask_storeu_ps(p, m, v)

#define D512_VT              __m512d
#define D512_LANES           8
#define D512_MT              __mmask8
#define D512_ZERO()          _mm512_setzero_pd()
#define D512_LOADU(p)        _mm512_loadu_pd(p)
#define D512_STOREU(p, v)    _mm512_storeu_pd(p, v)
#define D512_SET1(x)         _mm512_set1_pd(x)
#define D512_FMADD(a, b, c)  _mm512_fmadd_pd(a, b, c)
#define D512_ADD(a, b)       _mm512_add_pd(a, b)
#define D512_MUL(a, b)       _mm512_mul_pd(a, b)
#define D512_MKMASK(n)       ((__mmask8)((1u << (n)) - 1u))
#define D512_MLOAD(m, p)     _mm512_maskz_loadu_pd(m, p)
#define D512_MSTORE(p, m, v) _mm512_mask_storeu_pd(p, m, v)

#define S256_VT             __m256
#define S256_LANES          8
#define S256_MT             __m256i
#define S256_ZERO()         _mm256_setzero_ps()
#define S256_LOADU(p)       _mm256_loadu_ps(p)
#define S256_STOREU(p, v)   _mm256_storeu_ps(p, v)
#define S256_SET1(x)        _mm256_set1_ps(x)
#define S256_FMADD(a, b, c) _mm256_fmadd_ps(a, b, c)
#define S256_ADD(a, b)      _mm256_add_ps(a, b)
#define S256_MUL(a, b)      _mm256_mul_ps(a, b)
#define S256_MKMASK(n)                                                                             \
    _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define S256_MLOAD(m, p)     _mm256_maskload_ps(p, m)
#define S256_MSTORE(p, m, v) _mm256_maskstore_ps(p, m, v)

#define D256_VT              __m256d
#define D256_LANES           4
#define D256_MT              __m256i
#define D256_ZERO()          _mm256_setzero_pd()
#define D256_LOADU(p)        _mm256_loadu_pd(p)
#define D256_STOREU(p, v)    _mm256_storeu_pd(p, v)
#define D256_SET1(x)         _mm256_set1_pd(x)
#define D256_FMADD(a, b, c)  _mm256_fmadd_pd(a, b, c)
#define D256_ADD(a, b)       _mm256_add_pd(a, b)
#define D256_MUL(a, b)       _mm256_mul_pd(a, b)
#define D256_MKMASK(n)       _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3))
#define D256_MLOAD(m, p)     _mm256_maskload_pd(p, m)
#define D256_MSTORE(p, m, v) _mm256_maskstore_pd(p, m, v)

/* Element (i, p) of the A tile. ROWS = 0: a panel, MR values per column p, columns lda apart
 * (packed: lda = the packing height; in place: a column-major A). ROWS = 1: a row-major A read
 * in place, rows lda apart; ar[g] points at row 4g, column p. */
#define UKR_A0(i) a[i]
#define UKR_A1(i) ar[(i) / 4][((i) % 4) * lda]

/* One k step: NV vectors of B row p (LOADB(v)), MR broadcasts of A, MR * NV FMAs. */
#define UKR_STEPS(ISA, MR, NV, ROWS, LOADB)                                                        \
    for (int64_t p = 0; p < kc; p++) {                                                             \
        V(ISA, VT) bv[NV];                                                                         \
        _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) bv[v] = LOADB(ISA, v);                \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                      \
        {                                                                                          \
            V(ISA, VT) ai = V(ISA, SET1)(UKR_CAT(UKR_A, ROWS)(i));                                 \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) acc[i][v] =                       \
                V(ISA, FMADD)(ai, bv[v], acc[i][v]);                                               \
        }                                                                                          \
        if (ROWS) {                                                                                \
            _Pragma("GCC unroll 4") for (int g = 0; g < (MR + 3) / 4; g++) ar[g]++;                \
        } else {                                                                                   \
            a += lda;                                                                              \
        }                                                                                          \
        b += ldb;                                                                                  \
    }

/* An MR x (NV * LANES) microkernel:
 *   C[0..mh) x [0..nw) = alpha * A B + beta * C (+ bias[j] in column j when bias is not NULL)
 *   (beta == 0: C is not read; bias: nw values, read masked)
 * over kc steps; A as UKR_A0 / UKR_A1 say, B row p at b + p * ldb. Lanes of B past nw are not
 * read (masked loads), so B may be read in place up to its last column; the mh <= MR rows of A
 * the kernel reads must all be readable (in place: mh == MR). C element (i, j) is at
 * c[i * rsc + j * csc]: unit csc stores vectors (masked at the edge), other layouts go through
 * a tile on the stack. */
#define DEFINE_UKR(NAME, T, TARGET, ISA, MR, NV, ROWS)                                             \
    __attribute__((target(TARGET))) static void NAME(                                              \
        int64_t kc, const T *restrict a, int64_t lda, const T *restrict b, int64_t ldb,            \
        T *restrict c, int64_t rsc, int64_t csc, T alpha, T beta, int mh, int nw,                  \
        const T *restrict bias)                                                                    \
    {                                                                                              \
        enum { L = V(ISA, LANES) };                                                                \
        V(ISA, VT) acc[MR][NV];                                                                    \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                      \
        {                                                                                          \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) acc[i][v] = V(ISA, ZERO)();       \
        }                                                                                          \
        const T *ar[(MR + 3) / 4];                                                                 \
        _Pragma("GCC unroll 4") for (int g = 0; g < (MR + 3) / 4; g++) ar[g] = a + 4 * g * lda;    \
        (void)ar;                                                                                  \
        if (csc == 1) { /* C's tile arrives while the k loop runs */                               \
            _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                  \
            {                                                                                      \
                if (i >= mh)                                                                       \
                    break;                                                                         \
                _mm_prefetch((const char *)(c + i * rsc), _MM_HINT_T0);                            \
                _mm_prefetch((const char *)(c + i * rsc + nw - 1), _MM_HINT_T0);                   \
            }                                                                                      \
        }                                                                                          \
        bool full = nw == NV * L;                                                                  \
        V(ISA, MT) mk[NV];                                                                         \
        _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++)                                       \
        {                                                                                          \
            int w = nw - v * L;                                                                    \
            mk[v] = V(ISA, MKMASK)(w < 0 ? 0 : w > L ? L : w);                                     \
        }                                                                                          \
        if (full) {                                                                                \
            UKR_STEPS(ISA, MR, NV, ROWS, UKR_LOADB_FULL)                                           \
        } else {                                                                                   \
            UKR_STEPS(ISA, MR, NV, ROWS, UKR_LOADB_MASK)                                           \
        }                                                                                          \
        V(ISA, VT) va = V(ISA, SET1)(alpha), vb = V(ISA, SET1)(beta);                              \
        if (csc == 1) {                                                                            \
            V(ISA, VT) bv[NV]; /* the bias row, added to every row of the tile */                  \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) bv[v] =                           \
                bias != NULL ? V(ISA, MLOAD)(mk[v], bias + v * L) : V(ISA, ZERO)();                \
            _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                  \
            {                                                                                      \
                if (i >= mh)                                                                       \
                    break;                                                                         \
                T *ci = c + i * rsc;                                                               \
                _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++)                               \
                {                                                                                  \
                    V(ISA, VT) r = V(ISA, MUL)(acc[i][v], va);                                     \
                    if (bias != NULL)                                                              \
                        r = V(ISA, ADD)(r, bv[v]);                                                 \
                    if (full) {                                                                    \
                        if (beta != 0)                                                             \
                            r = V(ISA, FMADD)(vb, V(ISA, LOADU)(ci + v * L), r);                   \
                        V(ISA, STOREU)(ci + v * L, r);                                             \
                    } else {                                                                       \
                        if (beta != 0)                                                             \
                            r = V(ISA, FMADD)(vb, V(ISA, MLOAD)(mk[v], ci + v * L), r);            \
                        V(ISA, MSTORE)(ci + v * L, mk[v], r);                                      \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        T tile[MR][NV * L];                                                                        \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                      \
        {                                                                                          \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++)                                   \
                V(ISA, STOREU)(tile[i] + v * L, V(ISA, MUL)(acc[i][v], va));                       \
        }                                                                                          \
        if (bias != NULL)                                                                          \
            for (int i = 0; i < mh; i++)                                                           \
                for (int j = 0; j < nw; j++)                                                       \
                    tile[i][j] += bias[j];                                                         \
        if (rsc == 1) { /* C^T row-major: walk its rows */                                         \
            for (int j = 0; j < nw; j++) {                                                         \
                T *cj = c + j * csc;                                                               \
                if (beta == 0)                                                                     \
                    for (int i = 0; i < mh; i++)                                                   \
                        cj[i] = tile[i][j];                                                        \
                else                                                                               \
                    for (int i = 0; i < mh; i++)                                                   \
                        cj[i] = tile[i][j] + beta * cj[i];                                         \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        for (int i = 0; i < mh; i++) {                                                             \
            T *ci = c + i * rsc;                                                                   \
            if (beta == 0)                                                                         \
                for (int j = 0; j < nw; j++)                                                       \
                    ci[j * csc] = tile[i][j];                                                      \
            else                                                                                   \
                for (int j = 0; j < nw; j++)                                                       \
                    ci[j * csc] = tile[i][j] + beta * ci[j * csc];                                 \
        }                                                                                          \
    }
/* (used inside DEFINE_UKR, where b, L and mk are in scope) */
#define UKR_LOADB_FULL(ISA, v) V(ISA, LOADU)(b + (v)*L)
#define UKR_LOADB_MASK(ISA, v) V(ISA, MLOAD)(mk[v], b + (v)*L)

/* Transposing copies for packing: dst[q * lds + r] = src[r * ss + q] for q < cols and
 * r < width, where source rows r >= rows read as 0 (rows <= width <= LANES, cols <= LANES).
 * One LANES x LANES block through registers: 4 (f32) or 3 (f64) rounds of shuffles. */
__attribute__((target("avx512f"))) static void
transpose_s512(const float *src, int64_t ss, int rows, int cols, float *dst, int64_t lds, int width)
{
    __m512 r[16], t[16], u[16], o[16];
    __mmask16 mc = S512_MKMASK(cols), mw = S512_MKMASK(width);
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) r[i] =
        i < rows ? _mm512_maskz_loadu_ps(mc, src + i * ss) : _mm512_setzero_ps();
    _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++)
    {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* u[4g + c], 128-bit lane l: rows 4g..4g+3 of column 4l + c */
    _Pragma("GCC unroll 4") for (int g = 0; g < 4; g++)
    {
        __m512d t0 = _mm512_castps_pd(t[4 * g]), t1 = _mm512_castps_pd(t[4 * g + 1]);
        __m512d t2 = _mm512_castps_pd(t[4 * g + 2]), t3 = _mm512_castps_pd(t[4 * g + 3]);
        u[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
        u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
        u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
        u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
    }
    _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)
    {
        __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44);
        __m512 w0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xEE);
        __m512 v1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44);
        __m512 w1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xEE);
        o[c] = _mm512_shuffle_f32x4(v0, v1, 0x88);
        o[4 + c] = _mm512_shuffle_f32x4(v0, v1, 0xDD);
        o[8 + c] = _mm512_shuffle_f32x4(w0, w1, 0x88);
        o[12 + c] = _mm512_shuffle_f32x4(w0, w1, 0xDD);
    }
    _Pragma("GCC unroll 16") for (int q = 0; q < 16; q++)
    {
        if (q >= cols)
            break;
        if (width == 16)
            _mm512_storeu_ps(dst + q * lds, o[q]);
        else
            _mm512_mask_storeu_ps(dst + q * lds, mw, o[q]);
    }
}

__attribute__((target("avx512f"))) static void
transpose_d512(const double *src, int64_t ss, int rows, int cols, double *dst, int64_t lds,
               int width)
{
    __m512d r[8], t[8], o[8];
    __mmask8 mc = D512_MKMASK(cols), mw = D512_MKMASK(width);
    _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) r[i] =
        i < rows ? _mm512_maskz_loadu_pd(mc, src + i * ss) : _mm512_setzero_pd();
    /* t[2g + c], 128-bit lane l: rows 2g, 2g+1 of column 2l + c */
    _Pragma("GCC unroll 4") for (int g = 0; g < 4; g++)
    {
        t[2 * g] = _mm512_unpacklo_pd(r[2 * g], r[2 * g + 1]);
        t[2 * g + 1] = _mm512_unpackhi_pd(r[2 * g], r[2 * g + 1]);
    }
    _Pragma("GCC unroll 2") for (int c = 0; c < 2; c++)
    {
        __m512d v0 = _mm512_shuffle_f64x2(t[c], t[2 + c], 0x44);
        __m512d w0 = _mm512_shuffle_f64x2(t[c], t[2 + c], 0xEE);
        __m512d v1 = _mm512_shuffle_f64x2(t[4 + c], t[6 + c], 0x44);
        __m512d w1 = _mm512_shuffle_f64x2(t[4 + c], t[6 + c], 0xEE);
        o[c] = _mm512_shuffle_f64x2(v0, v1, 0x88);
        o[2 + c] = _mm512_shuffle_f64x2(v0, v1, 0xDD);
        o[4 + c] = _mm512_shuffle_f64x2(w0, w1, 0x88);
        o[6 + c] = _mm512_shuffle_f64x2(w0, w1, 0xDD);
    }
    _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++)
    {
        if (q >= cols)
            break;
        if (width == 8)
            _mm512_storeu_pd(dst + q * lds, o[q]);
        else
            _mm512_mask_storeu_pd(dst + q * lds, mw, o[q]);
    }
}

/* The AVX2 forms: 3 (f32) or 2 (f64) rounds of shuffles; the last swaps 128-bit halves. */
__attribute__((target("avx2"))) static void
transpose_s256(const float *src, int64_t ss, int rows, int cols, float *dst, int64_t lds, int width)
{
    __m256 r[8], t[8], u[8];
    __m256i mc = S256_MKMASK(cols), mw = S256_MKMASK(width);
    _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) r[i] =
        i >= rows   ? _mm256_setzero_ps()
        : cols == 8 ? _mm256_loadu_ps(src + i * ss)
                    : _mm256_maskload_ps(src + i * ss, mc);
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
    {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* u[4g + c], 128-bit half h: rows 4g..4g+3 of column 4h + c */
    _Pragma("GCC unroll 2") for (int g = 0; g < 2; g++)
    {
        u[4 * g] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
        u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
    _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++)
    {
        if (q >= cols)
            break;
        __m256 o = q < 4 ? _mm256_permute2f128_ps(u[q], u[4 + q], 0x20)
                         : _mm256_permute2f128_ps(u[q - 4], u[q], 0x31);
        if (width == 8)
            _mm256_storeu_ps(dst + q * lds, o);
        else
            _mm256_maskstore_ps(dst + q * lds, mw, o);
    }
}

__attribute__((target("avx2"))) static void
transpose_d256(const double *src, int64_t ss, int rows, int cols, double *dst, int64_t lds,
               int width)
{
    __m256d r[4], t[4];
    __m256i mc = D256_MKMASK(cols), mw = D256_MKMASK(width);
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) r[i] =
        i >= rows   ? _mm256_setzero_pd()
        : cols == 4 ? _mm256_loadu_pd(src + i * ss)
                    : _mm256_maskload_pd(src + i * ss, mc);
    /* t[2g + c], 128-bit half h: rows 2g, 2g+1 of column 2h + c */
    _Pragma("GCC unroll 2") for (int g = 0; g < 2; g++)
    {
        t[2 * g] = _mm256_unpacklo_pd(r[2 * g], r[2 * g + 1]);
        t[2 * g + 1] = _mm256_unpackhi_pd(r[2 * g], r[2 * g + 1]);
    }
    _Pragma("GCC unroll 4") for (int q = 0; q < 4; q++)
    {
        if (q >= cols)
            break;
        __m256d o = q < 2 ? _mm256_permute2f128_pd(t[q], t[2 + q], 0x20)
                          : _mm256_permute2f128_pd(t[q - 2], t[q], 0x31);
        if (width == 4)
            _mm256_storeu_pd(dst + q * lds, o);
        else
            _mm256_maskstore_pd(dst + q * lds, mw, o);
    }
}

#endif

/* One head of linear (lsa_*) or softmax (smx_*) self-attention per seed and task, forward and backward, for
 * the fused training path (icgd.train.kernel compiles and loads this file).
 *
 * Per task: C = scale * sum_{i < N} x_i x_i^T (D x D) over the context rows, and for every query row t in
 * [Q0, Q1): o_t = U C M x_t, with M (D x D) and U (G x D) the seed's weights. With a residual (G0 >= 0) the
 * layer's whole update is computed instead: o_t = clip(x_t[G0:G0+G] + lam * U C M x_t), the clip to
 * [-clip, clip] only when clip > 0 (its gradient passes where -clip <= pre-clip value <= clip, as for
 * torch.clamp; the backward recomputes that value).
 *
 * Layout ("blocks"): the tasks are taken LANES at a time and every token entry is a vector of LANES tasks,
 * tok[seed][block][row][d] (a V), so that each product is a chain of LANES-wide multiply-adds (GCC/Clang
 * vector extensions): the per-task matrices (about 11 x 11) are far too small for BLAS, whose per-matrix
 * overhead dominates. Weight gradients are summed per block into dgm_part / dgu_part and added up by the
 * caller in a fixed order, so results do not depend on how blocks are split between threads.
 * Included twice by icgd.train.kernel: REAL float (SUFFIX _f32) and double (_f64).
 */
#ifndef LSA_KERNEL_COMMON
#define LSA_KERNEL_COMMON
#include <stdint.h>
#include <string.h>

#ifndef LANES /* defined by icgd.train.compiled's driver: lanes(), 16 with AVX-512, else 8 */
#define LANES 16
#endif
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(name, SUFFIX)

typedef struct {
    int64_t S, NB, TT, N, Q0, Q1, D, G;
    int64_t G0; /* first token coordinate of the residual, or -1: no residual (o_t = U C M x_t) */
    int64_t tok_seed_stride; /* in vectors: NB * TT * D, or 0 when the tokens are shared by all seeds */
} dims_t;
#endif

typedef REAL FN(V) __attribute__((vector_size(LANES * sizeof(REAL))));
typedef IREAL FN(IV) __attribute__((vector_size(LANES * sizeof(REAL))));  /* comparison masks */
#define V FN(V)
#define IV FN(IV)

/* Matrix times vector, y[r * ys] (+)= sum_{c < cols} a[r * ar + c * ac] * x[c * xs] for r < rows, with the
 * matrix entries scalars (weights, the same for every lane: mv_s) or vectors (per task: mv_v). Four rows
 * at a time: four independent chains of multiply-adds hide each one's latency, and each x[c] is loaded
 * once for four of them (one chain at a time runs at a quarter of the machine's multiply-add rate). */
#define MV_DEFINE(NAME, AT)                                                                                   \
    static inline __attribute__((always_inline)) void FN(NAME##_rows)(                                     \
        const AT *a, int64_t ar, int64_t ac, const V *x, int64_t xs, int64_t cols, V *y, int64_t ys,         \
        int accumulate, const int nb) {                                                                      \
        V acc0 = {0}, acc1 = {0}, acc2 = {0}, acc3 = {0};                                                    \
        for (int64_t c = 0; c < cols; c++) {                                                                 \
            const V xv = x[c * xs];                                                                          \
            const AT *p = a + c * ac;                                                                        \
            acc0 += p[0] * xv;                                                                               \
            if (nb > 1) acc1 += p[ar] * xv;                                                                  \
            if (nb > 2) acc2 += p[2 * ar] * xv;                                                              \
            if (nb > 3) acc3 += p[3 * ar] * xv;                                                              \
        }                                                                                                    \
        if (accumulate) {                                                                                    \
            y[0] += acc0;                                                                                    \
            if (nb > 1) y[ys] += acc1;                                                                       \
            if (nb > 2) y[2 * ys] += acc2;                                                                   \
            if (nb > 3) y[3 * ys] += acc3;                                                                   \
        } else {                                                                                             \
            y[0] = acc0;                                                                                     \
            if (nb > 1) y[ys] = acc1;                                                                        \
            if (nb > 2) y[2 * ys] = acc2;                                                                    \
            if (nb > 3) y[3 * ys] = acc3;                                                                    \
        }                                                                                                    \
    }                                                                                                        \
    static void FN(NAME)(const AT *a, int64_t ar, int64_t ac, const V *x, int64_t xs, int64_t rows,          \
                         int64_t cols, V *y, int64_t ys, int accumulate) {                                   \
        int64_t r = 0;                                                                                       \
        for (; r + 4 <= rows; r += 4) FN(NAME##_rows)(a + r * ar, ar, ac, x, xs, cols, y + r * ys, ys, accumulate, 4); \
        switch (rows - r) {                                                                                  \
        case 3: FN(NAME##_rows)(a + r * ar, ar, ac, x, xs, cols, y + r * ys, ys, accumulate, 3); break;     \
        case 2: FN(NAME##_rows)(a + r * ar, ar, ac, x, xs, cols, y + r * ys, ys, accumulate, 2); break;     \
        case 1: FN(NAME##_rows)(a + r * ar, ar, ac, x, xs, cols, y + r * ys, ys, accumulate, 1); break;     \
        }                                                                                                    \
    }
MV_DEFINE(mv_s, REAL)
MV_DEFINE(mv_v, V)
#undef MV_DEFINE

/* c (D, D) = scale * sum_{i < N} x_i x_i^T for one block (the upper triangle, mirrored) */
static void FN(gram)(const V *x, int64_t N, int64_t D, REAL scale, V *c) {
    for (int64_t e = 0; e < D; e++) {
        FN(mv_v)(x + e, 1, D, x + e, D, D - e, N, c + e * D + e, 1, 0);
        for (int64_t f = e; f < D; f++) c[f * D + e] = c[e * D + f] = c[e * D + f] * scale;
    }
}

static REAL FN(lane_sum)(V v) {
    REAL sum = 0;
    for (int l = 0; l < LANES; l++) sum += v[l];
    return sum;
}

/* the residual's pre-clip value x + lam * o for one entry */
static V FN(pre_clip)(V x, V o, REAL lam) { return x + lam * o; }

/* per lane: a where the mask is set, else b */
static V FN(select)(IV mask, V a, V b) { return (V)(((IV)a & mask) | ((IV)b & ~mask)); }

/* v clamped to [-c, c] (NaN stays NaN), and v where -c <= pre <= c else 0 */
static V FN(clamp)(V v, REAL c) {
    const V zero = {0}, hi = zero + c, lo = zero - c;
    return FN(select)(v > hi, hi, FN(select)(v < lo, lo, v));
}

static V FN(pass_within)(V v, V pre, REAL c) {
    const V zero = {0}, hi = zero + c;
    return FN(select)((pre >= -hi) & (pre <= hi), v, zero);
}

/* y = M x_t (D), z = C y (D) for one row */
static void FN(row)(const V *xt, const REAL *m, const V *c, int64_t D, V *y, V *z) {
    FN(mv_s)(m, D, 1, xt, 1, D, D, y, 1, 0);
    FN(mv_v)(c, D, 1, y, 1, D, D, z, 1, 0);
}

/* o (G) = U z, or with a residual clip(x_t[G0:G0+G] + lam * U z), for one query row x_t */
static void FN(emit_row)(const REAL *u, const V *z, const V *xt, const dims_t *d, REAL lam, REAL clip, V *o) {
    FN(mv_s)(u, d->D, 1, z, 1, d->G, d->D, o, 1, 0);
    if (d->G0 < 0) return;
    for (int64_t g = 0; g < d->G; g++) {
        const V v = FN(pre_clip)(xt[d->G0 + g], o[g], lam);
        o[g] = clip > 0 ? FN(clamp)(v, clip) : v;
    }
}

/* For one query row with a residual: gres (G) = dO masked by the clip (from the recomputed pre-clip value
 * x_t[G0+g] + lam * (U z)_g; the residual's gradient) and gupd (G) = lam * gres (the update's) */
static void FN(residual_grad_row)(const REAL *u, const V *z, const V *xt, const V *go, const dims_t *d,
                                  REAL lam, REAL clip, V *gres, V *gupd) {
    const int64_t G = d->G;
    V o[G];
    if (clip > 0) FN(mv_s)(u, d->D, 1, z, 1, G, d->D, o, 1, 0);
    for (int64_t g = 0; g < G; g++) {
        gres[g] = clip > 0 ? FN(pass_within)(go[g], FN(pre_clip)(xt[d->G0 + g], o[g], lam), clip) : go[g];
        gupd[g] = lam * gres[g];
    }
}

/* The weight gradients of one block: pu (G, D) = sum_t gO_t z_t^T and pm (D, D) = sum_t dy_t x_t^T over
 * the R query rows (gO (R, G), z, dy and the rows x (R, D)), each entry's lanes summed */
static void FN(weight_grads)(const V *go, const V *z, const V *gy, const V *xq, int64_t R, int64_t D, int64_t G,
                             REAL *pm, REAL *pu) {
    V tmp[D];
    for (int64_t g = 0; g < G; g++) {
        FN(mv_v)(z, 1, D, go + g, G, D, R, tmp, 1, 0);
        for (int64_t f = 0; f < D; f++) pu[g * D + f] = FN(lane_sum)(tmp[f]);
    }
    for (int64_t e = 0; e < D; e++) {
        FN(mv_v)(xq, 1, D, gy + e, D, D, R, tmp, 1, 0);
        for (int64_t q = 0; q < D; q++) pm[e * D + q] = FN(lane_sum)(tmp[q]);
    }
}

/* out (S, NB, Q1 - Q0, G); block k is seed k / NB, block k % NB; blocks split between n_threads (OpenMP,
 * the runtime PyTorch already loaded). */
int FN(lsa_forward)(const V *tok, const REAL *m, const REAL *u, V *out, const dims_t *d, REAL scale,
                    REAL lam, REAL clip, int n_threads) {
    const int64_t D = d->D, G = d->G, TT = d->TT, R = d->Q1 - d->Q0;
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t k = 0; k < d->S * d->NB; k++) {
        V c[D * D], y[D], z[D];
        const int64_t s = k / d->NB;
        const V *x = tok + s * d->tok_seed_stride + (k % d->NB) * TT * D;
        const REAL *ms = m + s * D * D, *us = u + s * G * D;
        FN(gram)(x, d->N, D, scale, c);
        for (int64_t t = 0; t < R; t++) {
            FN(row)(x + (d->Q0 + t) * D, ms, c, D, y, z);
            FN(emit_row)(us, z, x + (d->Q0 + t) * D, d, lam, clip, out + (k * R + t) * G);
        }
    }
    return 0;
}

/* Gradients given gout (S, NB, R, G): gtok (S, NB, TT, D) when not NULL (per-seed
 * tokens only; rows neither query nor context get 0), dgm_part (S * NB, D, D), dgu_part (S * NB, G, D).
 * Weight gradients: sums over the query rows (weight_grads). */
int FN(lsa_backward)(const V *tok, const REAL *m, const REAL *u, const V *gout, V *gtok, REAL *dgm_part,
                     REAL *dgu_part, const dims_t *d, REAL scale, REAL lam, REAL clip, int n_threads) {
    const int64_t D = d->D, G = d->G, TT = d->TT, N = d->N, R = d->Q1 - d->Q0;
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t k = 0; k < d->S * d->NB; k++) {
        V c[D * D], y[R * D], z[R * D], gz[R * D], gy[R * D], gc[D * D], gres[d->G0 < 0 ? 1 : R * G],
          gupd[d->G0 < 0 ? 1 : R * G];
        const int64_t s = k / d->NB;
        const V *x = tok + s * d->tok_seed_stride + (k % d->NB) * TT * D, *xq = x + d->Q0 * D;
        const V *go = gout + k * R * G;
        const REAL *ms = m + s * D * D, *us = u + s * G * D;
        /* C, y, z recomputed: cheaper than keeping them from the forward (measured: memory traffic) */
        FN(gram)(x, N, D, scale, c);
        for (int64_t t = 0; t < R; t++) FN(row)(xq + t * D, ms, c, D, y + t * D, z + t * D);
        if (d->G0 >= 0) {  /* the residual: its gradient gres, the update's gupd */
            for (int64_t t = 0; t < R; t++)
                FN(residual_grad_row)(us, z + t * D, xq + t * D, go + t * G, d, lam, clip, gres + t * G, gupd + t * G);
            go = gupd;
        }
        for (int64_t t = 0; t < R; t++) {
            FN(mv_s)(us, 1, D, go + t * G, 1, D, G, gz + t * D, 1, 0);  /* dz = U^T gO */
            FN(mv_v)(c, D, 1, gz + t * D, 1, D, D, gy + t * D, 1, 0);  /* dy = C dz (C symmetric) */
        }
        FN(weight_grads)(go, z, gy, xq, R, D, G, dgm_part + k * D * D, dgu_part + k * G * D);
        if (!gtok) continue;
        V *gx = gtok + k * TT * D;
        memset(gx, 0, sizeof(V) * TT * D);
        for (int64_t t = 0; t < R; t++)  /* dx_t = M^T dy_t */
            FN(mv_s)(ms, 1, D, gy + t * D, 1, D, D, gx + (d->Q0 + t) * D, 1, 0);
        for (int64_t e = 0; e < D; e++)  /* A = sum_t y_t dz_t^T */
            FN(mv_v)(gz, 1, D, y + e, D, D, R, gc + e * D, 1, 0);
        for (int64_t e = 0; e < D; e++)  /* dC = scale * (A + A^T) */
            for (int64_t f = e; f < D; f++) gc[e * D + f] = gc[f * D + e] = (gc[e * D + f] + gc[f * D + e]) * scale;
        for (int64_t i = 0; i < N; i++)  /* dctx_i += dC x_i */
            FN(mv_v)(gc, D, 1, x + i * D, 1, D, D, gx + i * D, 1, 1);
        if (d->G0 >= 0)  /* the residual's gradient */
            for (int64_t t = 0; t < R; t++)
                for (int64_t g = 0; g < G; g++) gx[(d->Q0 + t) * D + d->G0 + g] += gres[t * G + g];
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- softmax attention
 * Per task and query row t: y_t = M x_t, e_tj = y_t . x_j (j < N), w_t = softmax_j(e_t) * scale,
 * z_t = sum_j w_tj x_j, o_t = U z_t (M = W_K^T W_Q / tau, U = P W_V), with the same residual, dampening and
 * clip as above. The exponential is computed here on whole vectors (exp_v). */

/* exp per lane: 2^k * p(r), x = k ln 2 + r, |r| <= ln 2 / 2, p the Taylor polynomial of degree 7 (float)
 * or 13 (double), truncation below half an ulp; 0 below the smallest normal result (the softmax's
 * arguments are <= 0 here; about 1e-38 or 1e-308 lost there); NaN stays NaN. */
static V FN(exp_v)(V x) {
    const int single = sizeof(REAL) == 4;
    const V zero = {0};
    const V lo = zero + (single ? (REAL)-87.0 : (REAL)-708.0);
    const V shifter = zero + (single ? (REAL)12582912.0 : (REAL)6755399441055744.0); /* 1.5 * 2^mantissa */
    const IV under = x < lo;
    x = FN(select)(under, lo, x);
    const V kf = (x * (REAL)1.4426950408889634 + shifter) - shifter; /* round(x / ln 2) */
    const V r = (x - kf * (single ? (REAL)0.693359375 : (REAL)6.93147180369123816490e-01))
                - kf * (single ? (REAL)-2.12194440e-4 : (REAL)1.90821492927058770002e-10);
    const int degree = single ? 7 : 13;
    REAL inv_fact[14];
    inv_fact[0] = 1;
    for (int i = 1; i <= degree; i++) inv_fact[i] = inv_fact[i - 1] / i;
    V p = zero + inv_fact[degree];
    for (int i = degree - 1; i >= 0; i--) p = p * r + inv_fact[i];
    const IV ki = __builtin_convertvector(kf, IV);
    const V two_k = (V)((ki + (single ? 127 : 1023)) << (single ? 23 : 52));
    return FN(select)(under, zero, p * two_k);
}

/* w (N) = scale * softmax(e (N)) per lane, and the softmax itself in ws */
static void FN(softmax)(const V *e, int64_t N, REAL scale, V *ws, V *w) {
    V mx = e[0], sum = {0};
    for (int64_t j = 1; j < N; j++) mx = FN(select)(e[j] > mx, e[j], mx);
    for (int64_t j = 0; j < N; j++) {
        ws[j] = FN(exp_v)(e[j] - mx);
        sum += ws[j];
    }
    for (int64_t j = 0; j < N; j++) {
        ws[j] = ws[j] / sum;
        w[j] = ws[j] * scale;
    }
}

/* y = M x_t (D), e (N), ws, w (N) and z = sum_j w_j x_j (D) for one row */
static void FN(smx_row)(const V *x, const V *xt, const REAL *m, int64_t N, int64_t D, REAL scale, V *y, V *e,
                        V *ws, V *w, V *z) {
    FN(mv_s)(m, D, 1, xt, 1, D, D, y, 1, 0);
    FN(mv_v)(x, D, 1, y, 1, N, D, e, 1, 0);
    FN(softmax)(e, N, scale, ws, w);
    FN(mv_v)(x, 1, D, w, 1, D, N, z, 1, 0);
}

int FN(smx_forward)(const V *tok, const REAL *m, const REAL *u, V *out, const dims_t *d, REAL scale,
                    REAL lam, REAL clip, int n_threads) {
    const int64_t D = d->D, G = d->G, TT = d->TT, N = d->N, R = d->Q1 - d->Q0;
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t k = 0; k < d->S * d->NB; k++) {
        V y[D], e[N], ws[N], w[N], z[D];
        const int64_t s = k / d->NB;
        const V *x = tok + s * d->tok_seed_stride + (k % d->NB) * TT * D;
        const REAL *ms = m + s * D * D, *us = u + s * G * D;
        for (int64_t t = 0; t < R; t++) {
            FN(smx_row)(x, x + (d->Q0 + t) * D, ms, N, D, scale, y, e, ws, w, z);
            FN(emit_row)(us, z, x + (d->Q0 + t) * D, d, lam, clip, out + (k * R + t) * G);
        }
    }
    return 0;
}

/* Gradients as lsa_backward's, row by row: each row's y, e, w, z recomputed. */
int FN(smx_backward)(const V *tok, const REAL *m, const REAL *u, const V *gout, V *gtok, REAL *dgm_part,
                     REAL *dgu_part, const dims_t *d, REAL scale, REAL lam, REAL clip, int n_threads) {
    const int64_t D = d->D, G = d->G, TT = d->TT, N = d->N, R = d->Q1 - d->Q0;
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t k = 0; k < d->S * d->NB; k++) {
        V y[D], e[N], ws[N], w[N], z[R * D], gz[D], dw[N], gy[R * D], gup[R * G], gres[G];
        const int64_t s = k / d->NB;
        const V *x = tok + s * d->tok_seed_stride + (k % d->NB) * TT * D, *xq = x + d->Q0 * D;
        const REAL *ms = m + s * D * D, *us = u + s * G * D;
        V *gx = gtok ? gtok + k * TT * D : NULL;
        if (gx) memset(gx, 0, sizeof(V) * TT * D);
        for (int64_t t = 0; t < R; t++) {
            const V *go = gout + (k * R + t) * G;
            V *zt = z + t * D, *gyt = gy + t * D, *gu = gup + t * G;
            FN(smx_row)(x, xq + t * D, ms, N, D, scale, y, e, ws, w, zt);
            if (d->G0 >= 0)
                FN(residual_grad_row)(us, zt, xq + t * D, go, d, lam, clip, gres, gu);
            else
                for (int64_t g = 0; g < G; g++) gu[g] = go[g];
            FN(mv_s)(us, 1, D, gu, 1, D, G, gz, 1, 0);       /* dz = U^T dO */
            FN(mv_v)(x, D, 1, gz, 1, N, D, dw, 1, 0);        /* dw_j = x_j . dz (of the scaled weights) */
            V dot = {0};
            for (int64_t j = 0; j < N; j++) {
                dw[j] = dw[j] * scale;                      /* ... of the softmax */
                dot += ws[j] * dw[j];
            }
            for (int64_t j = 0; j < N; j++) e[j] = ws[j] * (dw[j] - dot);  /* de_j */
            FN(mv_v)(x, 1, D, e, 1, D, N, gyt, 1, 0);      /* dy = sum_j de_j x_j */
            if (!gx) continue;
            FN(mv_s)(ms, 1, D, gyt, 1, D, D, gx + (d->Q0 + t) * D, 1, 1);  /* dx_t += M^T dy */
            for (int64_t j = 0; j < N; j++)                  /* dx_j += de_j y + w_j dz */
                for (int64_t q = 0; q < D; q++) gx[j * D + q] += e[j] * y[q] + w[j] * gz[q];
            if (d->G0 >= 0)
                for (int64_t g = 0; g < G; g++) gx[(d->Q0 + t) * D + d->G0 + g] += gres[g];
        }
        FN(weight_grads)(gup, z, gy, xq, R, D, G, dgm_part + k * D * D, dgu_part + k * G * D);
    }
    return 0;
}
#undef V
#undef IV

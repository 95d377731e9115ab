/* One head of linear self-attention per seed and task, forward and backward, for the fused training path
 * (icgd.train.kernel compiles and loads this file).
 *
 * Per task: C = scale * sum_{i < N} x_i x_i^T (D x D) over the context rows, and for every query row t in
 * [Q0, Q1): o_t = U C M x_t, with M (D x D) and U (G x D) the seed's weights.
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

#define LANES 16
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(name, SUFFIX)

typedef struct {
    int64_t S, NB, TT, N, Q0, Q1, D, G;
    int64_t tok_seed_stride; /* in vectors: NB * TT * D, or 0 when the tokens are shared by all seeds */
} dims_t;
#endif

typedef REAL FN(V) __attribute__((vector_size(LANES * sizeof(REAL))));
#define V FN(V)

/* c (D, D) = scale * sum_{i < N} x_i x_i^T for one block */
static void FN(gram)(const V *x, int64_t N, int64_t D, REAL scale, V *c) {
    for (int64_t e = 0; e < D; e++)
        for (int64_t f = e; f < D; f++) {
            V acc = {0};
            for (int64_t i = 0; i < N; i++) acc += x[i * D + e] * x[i * D + f];
            c[e * D + f] = c[f * D + e] = acc * scale;
        }
}

/* sum_t a[t * sa] * b[t * sb] over t < R (per lane), and the sum of a vector's lanes */
static V FN(col_dot)(const V *a, int64_t sa, const V *b, int64_t sb, int64_t R) {
    V acc = {0};
    for (int64_t t = 0; t < R; t++) acc += a[t * sa] * b[t * sb];
    return acc;
}

static REAL FN(lane_sum)(V v) {
    REAL sum = 0;
    for (int l = 0; l < LANES; l++) sum += v[l];
    return sum;
}

/* y = M x_t (D), z = C y (D) for one row */
static void FN(row)(const V *xt, const REAL *m, const V *c, int64_t D, V *y, V *z) {
    for (int64_t e = 0; e < D; e++) {
        V acc = {0};
        for (int64_t k = 0; k < D; k++) acc += m[e * D + k] * xt[k];
        y[e] = acc;
    }
    for (int64_t f = 0; f < D; f++) {
        V acc = {0};
        for (int64_t e = 0; e < D; e++) acc += c[f * D + e] * y[e];
        z[f] = acc;
    }
}

/* out (S, NB, Q1 - Q0, G); block k is seed k / NB, block k % NB; blocks split between n_threads (OpenMP,
 * the runtime PyTorch already loaded). */
int FN(lsa_forward)(const V *tok, const REAL *m, const REAL *u, V *out, const dims_t *d, REAL scale,
                    int n_threads) {
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
            V *o = out + (k * R + t) * G;
            for (int64_t g = 0; g < G; g++) {
                V acc = {0};
                for (int64_t f = 0; f < D; f++) acc += us[g * D + f] * z[f];
                o[g] = acc;
            }
        }
    }
    return 0;
}

/* Gradients given gout (S, NB, R, G): gtok (S, NB, TT, D) when not NULL (per-seed
 * tokens only; rows neither query nor context get 0), dgm_part (S * NB, D, D), dgu_part (S * NB, G, D).
 * Each weight gradient is a sum over the query rows kept in registers (one store per entry). */
int FN(lsa_backward)(const V *tok, const REAL *m, const REAL *u, const V *gout, V *gtok, REAL *dgm_part,
                     REAL *dgu_part, const dims_t *d, REAL scale, int n_threads) {
    const int64_t D = d->D, G = d->G, TT = d->TT, N = d->N, R = d->Q1 - d->Q0;
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t k = 0; k < d->S * d->NB; k++) {
        V c[D * D], y[R * D], z[R * D], gz[R * D], gy[R * D], gc[D * D];
        const int64_t s = k / d->NB;
        const V *x = tok + s * d->tok_seed_stride + (k % d->NB) * TT * D, *xq = x + d->Q0 * D;
        const V *go = gout + k * R * G;
        const REAL *ms = m + s * D * D, *us = u + s * G * D;
        /* C, y, z recomputed: cheaper than keeping them from the forward (measured: memory traffic) */
        FN(gram)(x, N, D, scale, c);
        for (int64_t t = 0; t < R; t++) FN(row)(xq + t * D, ms, c, D, y + t * D, z + t * D);
        for (int64_t t = 0; t < R; t++) {
            for (int64_t f = 0; f < D; f++) {  /* dz = U^T gO */
                V acc = {0};
                for (int64_t g = 0; g < G; g++) acc += us[g * D + f] * go[t * G + g];
                gz[t * D + f] = acc;
            }
            for (int64_t e = 0; e < D; e++) {  /* dy = C dz (C symmetric) */
                V acc = {0};
                for (int64_t f = 0; f < D; f++) acc += c[e * D + f] * gz[t * D + f];
                gy[t * D + e] = acc;
            }
        }
        REAL *pm = dgm_part + k * D * D, *pu = dgu_part + k * G * D;
        for (int64_t g = 0; g < G; g++)  /* dU = sum_t gO_t z_t^T */
            for (int64_t f = 0; f < D; f++) pu[g * D + f] = FN(lane_sum)(FN(col_dot)(go + g, G, z + f, D, R));
        for (int64_t e = 0; e < D; e++)  /* dM = sum_t dy_t x_t^T */
            for (int64_t q = 0; q < D; q++) pm[e * D + q] = FN(lane_sum)(FN(col_dot)(gy + e, D, xq + q, D, R));
        if (!gtok) continue;
        V *gx = gtok + k * TT * D;
        memset(gx, 0, sizeof(V) * TT * D);
        for (int64_t t = 0; t < R; t++)  /* dx_t = M^T dy_t */
            for (int64_t q = 0; q < D; q++) {
                V acc = {0};
                for (int64_t e = 0; e < D; e++) acc += ms[e * D + q] * gy[t * D + e];
                gx[(d->Q0 + t) * D + q] = acc;
            }
        for (int64_t e = 0; e < D; e++)  /* dC = sum_t y_t dz_t^T, then scale * (dC + dC^T) */
            for (int64_t f = e; f < D; f++) {
                const V a1 = FN(col_dot)(y + e, D, gz + f, D, R), a2 = FN(col_dot)(y + f, D, gz + e, D, R);
                gc[e * D + f] = gc[f * D + e] = (a1 + a2) * scale;
            }
        for (int64_t i = 0; i < N; i++)  /* dctx_i += (scaled dC + dC^T) x_i */
            for (int64_t q = 0; q < D; q++) {
                V acc = {0};
                for (int64_t e = 0; e < D; e++) acc += gc[q * D + e] * x[i * D + e];
                gx[i * D + q] += acc;
            }
    }
    return 0;
}
#undef V

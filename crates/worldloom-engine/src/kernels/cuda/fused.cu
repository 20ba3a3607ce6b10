// Fused decode kernels of the Qwen3.5-MoE engine (Worldloom).
//
// Each kernel has a CPU twin in `src/kernels/fused.rs` that computes the
// same maths in the same order of roundings; the tests compare the twins
// with the unfused candle path. Element types: float, __nv_bfloat16,
// __half (suffixes _f32, _bf16, _f16). Every rounding to the model dtype
// is round-to-nearest-even, as the `half` crate's and candle's casts are.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

template <typename T> __device__ __forceinline__ float to_f(T x);
template <> __device__ __forceinline__ float to_f<float>(float x) { return x; }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <> __device__ __forceinline__ float to_f<__half>(__half x) { return __half2float(x); }

template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half_rn(x); }

// x rounded to T and read back as float.
template <typename T> __device__ __forceinline__ float rnd(float x) { return to_f<T>(from_f<T>(x)); }

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every
// thread gets the result. `scratch` holds 32 floats.
__device__ float block_sum(float v, float *scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = blockDim.x >> 5;
  float t = lane < warps ? scratch[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffff, t, o);
  return t;
}

__device__ float block_max(float v, float *scratch) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = blockDim.x >> 5;
  float t = lane < warps ? scratch[lane] : -INFINITY;
  for (int o = 16; o > 0; o >>= 1) t = fmaxf(t, __shfl_xor_sync(0xffffffff, t, o));
  return t;
}

// Whether (va, ia) ranks before (vb, ib): larger value first, ties to the
// lower index. An index of -1 (no candidate) ranks last.
__device__ __forceinline__ bool ranks_before(float va, int ia, float vb, int ib) {
  if (ia < 0) return false;
  if (ib < 0) return true;
  return va > vb || (va == vb && ia < ib);
}

// The best (value, index) over the block by `ranks_before`.
__device__ void block_best(float &v, int &i, float *sv, int *si) {
  for (int o = 16; o > 0; o >>= 1) {
    float v2 = __shfl_xor_sync(0xffffffff, v, o);
    int i2 = __shfl_xor_sync(0xffffffff, i, o);
    if (ranks_before(v2, i2, v, i)) { v = v2; i = i2; }
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) { sv[warp] = v; si[warp] = i; }
  __syncthreads();
  const int warps = blockDim.x >> 5;
  v = lane < warps ? sv[lane] : -INFINITY;
  i = lane < warps ? si[lane] : -1;
  for (int o = 16; o > 0; o >>= 1) {
    float v2 = __shfl_xor_sync(0xffffffff, v, o);
    int i2 = __shfl_xor_sync(0xffffffff, i, o);
    if (ranks_before(v2, i2, v, i)) { v = v2; i = i2; }
  }
}

// ---------------------------------------------------------------------------
// Zero-centred RMSNorm: y = round_T((x / sqrt(mean(x²) + eps)) · scale),
// statistics in f32; one block per row of `dim` values.
template <typename T>
__device__ void rms_norm_scaled(const T *x, const float *scale, T *y, int dim, float eps) {
  __shared__ float scratch[32];
  const T *row = x + (size_t)blockIdx.x * dim;
  T *out = y + (size_t)blockIdx.x * dim;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    float v = to_f<T>(row[i]);
    ss += v * v;
  }
  ss = block_sum(ss, scratch);
  const float den = sqrtf(ss / (float)dim + eps);
  for (int i = threadIdx.x; i < dim; i += blockDim.x) {
    out[i] = from_f<T>((to_f<T>(row[i]) / den) * scale[i]);
  }
}

// The DeltaNet output norm of one row, in place in `o` (dim values, f32 in,
// T-rounded values out, as f32): w · rmsnorm(o) · silu(z) with the
// roundings of the unfused path: o → T, rmsnorm in f32 → T, × w → T,
// × silu(z) in f32 → T.
template <typename T>
__device__ void gated_norm_row(float *o, const T *z, const T *w, int dim, float eps,
                               float *scratch) {
  float ss = 0.0f;
  for (int j = threadIdx.x; j < dim; j += blockDim.x) {
    float v = rnd<T>(o[j]);
    o[j] = v;
    ss += v * v;
  }
  ss = block_sum(ss, scratch);
  const float den = sqrtf(ss / (float)dim + eps);
  for (int j = threadIdx.x; j < dim; j += blockDim.x) {
    float n = rnd<T>(o[j] / den);
    n = rnd<T>(n * to_f<T>(w[j]));
    const float zf = to_f<T>(z[j]);
    const float sz = zf / (1.0f + expf(-zf));
    o[j] = rnd<T>(n * sz);
  }
}

// Gated RMSNorm over rows: o f32 [rows, dim], z, w T → y T [rows, dim].
template <typename T>
__device__ void gated_rms_norm(const float *o, const T *z, const T *w, T *y, int dim, float eps) {
  extern __shared__ float dyn[];
  float *scratch = dyn;     // 32
  float *row = dyn + 32;    // dim
  const size_t base = (size_t)blockIdx.x * dim;
  for (int j = threadIdx.x; j < dim; j += blockDim.x) row[j] = o[base + j];
  __syncthreads();
  gated_norm_row<T>(row, z + base, w, dim, eps, scratch);
  __syncthreads();
  for (int j = threadIdx.x; j < dim; j += blockDim.x) y[base + j] = from_f<T>(row[j]);
}

// ---------------------------------------------------------------------------
// One Gated DeltaNet decode step; one block per value head.
//
// padded [K, C] (T): the conv window, the cached K−1 inputs then this
// token's in_proj_qkv output; taps [K, C] (T); z [n_v·d_v], b, a [n_v] (T);
// neg_a = −exp(A_log), dt_bias [n_v] (f32); norm_w [d_v] (T); state
// [n_v, d_k, d_v] (f32). out (f32): [n_v·d_v] the gated-norm output
// (T-rounded), then [n_v, d_k, d_v] the new state.
template <typename T>
__device__ float conv_silu(const T *padded, const T *taps, int c, int C, int K) {
  float acc = rnd<T>(to_f<T>(padded[c]) * to_f<T>(taps[c]));
  for (int j = 1; j < K; ++j) {
    const float p = rnd<T>(to_f<T>(padded[(size_t)j * C + c]) * to_f<T>(taps[(size_t)j * C + c]));
    acc = rnd<T>(acc + p);
  }
  const float e = rnd<T>(expf(-acc));
  const float d = rnd<T>(1.0f + e);
  return rnd<T>(acc / d);
}

template <typename T>
__device__ void gdn_decode_step(const T *padded, const T *taps, const T *z, const T *b,
                                const T *a, const float *neg_a, const float *dt_bias,
                                const T *norm_w, const float *state, float *out, int C, int K,
                                int n_k, int n_v, int d_k, int d_v, int tiled, float eps,
                                float l2_eps, float q_scale) {
  extern __shared__ float dyn[];
  float *scratch = dyn;          // 32
  float *qs = dyn + 32;          // d_k
  float *ks = qs + d_k;          // d_k
  float *vs = ks + d_k;          // d_v
  float *os = vs + d_v;          // d_v
  const int h = blockIdx.x;
  const int kh = tiled ? h % n_k : h / (n_v / n_k);
  const int key_dim = n_k * d_k;
  float sq = 0.0f, sk = 0.0f;
  for (int i = threadIdx.x; i < d_k; i += blockDim.x) {
    const float q = conv_silu<T>(padded, taps, kh * d_k + i, C, K);
    const float k = conv_silu<T>(padded, taps, key_dim + kh * d_k + i, C, K);
    qs[i] = q;
    ks[i] = k;
    sq += q * q;
    sk += k * k;
  }
  for (int j = threadIdx.x; j < d_v; j += blockDim.x) {
    vs[j] = conv_silu<T>(padded, taps, 2 * key_dim + h * d_v + j, C, K);
  }
  sq = block_sum(sq, scratch);
  sk = block_sum(sk, scratch);
  const float qden = sqrtf(sq + l2_eps), kden = sqrtf(sk + l2_eps);
  for (int i = threadIdx.x; i < d_k; i += blockDim.x) {
    qs[i] = (qs[i] / qden) * q_scale;
    ks[i] = ks[i] / kden;
  }
  const float bf = to_f<T>(b[h]);
  const float beta = 1.0f / (1.0f + expf(-bf));
  const float x = to_f<T>(a[h]) + dt_bias[h];
  const float sp = x > 20.0f ? x : logf(expf(x) + 1.0f);
  const float decay = expf(sp * neg_a[h]);
  __syncthreads();

  const float *s = state + (size_t)h * d_k * d_v;
  float *sn = out + (size_t)n_v * d_v + (size_t)h * d_k * d_v;
  for (int j = threadIdx.x; j < d_v; j += blockDim.x) {
    float mem = 0.0f;
    for (int i = 0; i < d_k; ++i) mem += (s[(size_t)i * d_v + j] * decay) * ks[i];
    const float delta = (vs[j] - mem) * beta;
    float o = 0.0f;
    for (int i = 0; i < d_k; ++i) {
      const float v = s[(size_t)i * d_v + j] * decay + ks[i] * delta;
      sn[(size_t)i * d_v + j] = v;
      o += v * qs[i];
    }
    os[j] = o;
  }
  __syncthreads();
  gated_norm_row<T>(os, z + (size_t)h * d_v, norm_w, d_v, eps, scratch);
  __syncthreads();
  for (int j = threadIdx.x; j < d_v; j += blockDim.x) out[(size_t)h * d_v + j] = os[j];
}

// ---------------------------------------------------------------------------
// Router: softmax in f32 over each row of E logits, the top k (larger
// first, ties to the lower expert), their probabilities divided by their
// sum (in rank order) and rounded to the model dtype (round_mode 0 f32,
// 1 bf16, 2 f16). out f32 [rows, 2k]: the k expert ids, then the k weights.
template <typename T>
__device__ void router_top_k(const T *logits, float *out, int E, int k, int round_mode) {
  extern __shared__ float dyn[];
  float *scratch = dyn;               // 32
  int *iscratch = (int *)(dyn + 32);  // 32
  float *p = dyn + 64;                // E
  float *chosen_p = p + E;            // k
  int *chosen_i = (int *)(chosen_p + k);  // k
  const T *row = logits + (size_t)blockIdx.x * E;
  float m = -INFINITY;
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    p[e] = to_f<T>(row[e]);
    m = fmaxf(m, p[e]);
  }
  m = block_max(m, scratch);
  float s = 0.0f;
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    p[e] = expf(p[e] - m);
    s += p[e];
  }
  s = block_sum(s, scratch);
  for (int e = threadIdx.x; e < E; e += blockDim.x) p[e] = p[e] / s;
  __syncthreads();
  float pv = INFINITY;
  int pi = -1;
  for (int r = 0; r < k; ++r) {
    float v = -INFINITY;
    int idx = -1;
    for (int e = threadIdx.x; e < E; e += blockDim.x) {
      const bool after = pi < 0 || p[e] < pv || (p[e] == pv && e > pi);
      if (after && ranks_before(p[e], e, v, idx)) { v = p[e]; idx = e; }
    }
    block_best(v, idx, scratch, iscratch);
    if (threadIdx.x == 0) { chosen_p[r] = v; chosen_i[r] = idx; }
    pv = v;
    pi = idx;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (int r = 0; r < k; ++r) sum += chosen_p[r];
    float *o = out + (size_t)blockIdx.x * 2 * k;
    for (int r = 0; r < k; ++r) {
      float w = chosen_p[r] / sum;
      if (round_mode == 1) w = rnd<__nv_bfloat16>(w);
      else if (round_mode == 2) w = rnd<__half>(w);
      o[r] = (float)chosen_i[r];
      o[k + r] = w;
    }
  }
}

// ---------------------------------------------------------------------------
// Sampling candidates over a [V] f32 logit row, two passes.
//
// Pass 1 (one block per chunk of `chunk` logits): the chunk's k best
// finite logits by x / temperature (larger first, ties to the lower id),
// and the chunk's max and Σ exp(x − max) over finite raw logits.
// part: [blocks, 2k + 2] f32: k ids (−1 when fewer), k scaled values, max,
// sum.
__global__ void sample_candidates_pass1(const float *logits, float *part, int V, int chunk,
                                        int k, float temperature) {
  __shared__ float scratch[32];
  __shared__ int iscratch[32];
  const int start = blockIdx.x * chunk;
  const int end = min(V, start + chunk);
  float m = -INFINITY;
  for (int i = start + threadIdx.x; i < end; i += blockDim.x) {
    const float x = logits[i];
    if (isfinite(x)) m = fmaxf(m, x);
  }
  m = block_max(m, scratch);
  float s = 0.0f;
  if (isfinite(m)) {
    for (int i = start + threadIdx.x; i < end; i += blockDim.x) {
      const float x = logits[i];
      if (isfinite(x)) s += expf(x - m);
    }
  }
  s = block_sum(s, scratch);
  float *o = part + (size_t)blockIdx.x * (2 * k + 2);
  if (threadIdx.x == 0) {
    for (int r = 0; r < k; ++r) { o[r] = -1.0f; o[k + r] = -INFINITY; }
  }
  float pv = INFINITY;
  int pi = -1;
  for (int r = 0; r < k; ++r) {
    float v = -INFINITY;
    int idx = -1;
    for (int i = start + threadIdx.x; i < end; i += blockDim.x) {
      const float x = logits[i];
      if (!isfinite(x)) continue;
      const float y = x / temperature;
      const bool after = pi < 0 || y < pv || (y == pv && i > pi);
      if (after && ranks_before(y, i, v, idx)) { v = y; idx = i; }
    }
    block_best(v, idx, scratch, iscratch);
    if (threadIdx.x == 0) { o[r] = (float)idx; o[k + r] = v; }
    if (idx < 0) break;
    pv = v;
    pi = idx;
  }
  if (threadIdx.x == 0) { o[2 * k] = m; o[2 * k + 1] = s; }
}

// Pass 2 (one block): merges the blocks' candidates and statistics.
// out: [3k + 2] f32: k ids (−1 when fewer), k scaled values, k raw logits,
// the max finite logit, ln Σ exp(x − max).
__global__ void sample_candidates_pass2(const float *logits, const float *part, float *out,
                                        int blocks, int k) {
  __shared__ float scratch[32];
  __shared__ int iscratch[32];
  const int stride = 2 * k + 2;
  float m = -INFINITY;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) m = fmaxf(m, part[(size_t)b * stride + 2 * k]);
  m = block_max(m, scratch);
  float s = 0.0f;
  if (isfinite(m)) {
    for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
      const float bm = part[(size_t)b * stride + 2 * k];
      if (isfinite(bm)) s += part[(size_t)b * stride + 2 * k + 1] * expf(bm - m);
    }
  }
  s = block_sum(s, scratch);
  const int n = blocks * k;
  float pv = INFINITY;
  int pi = -1;
  for (int r = 0; r < k; ++r) {
    float v = -INFINITY;
    int idx = -1;
    for (int c = threadIdx.x; c < n; c += blockDim.x) {
      const int b = c / k, slot = c % k;
      const int id = (int)part[(size_t)b * stride + slot];
      if (id < 0) continue;
      const float y = part[(size_t)b * stride + k + slot];
      const bool after = pi < 0 || y < pv || (y == pv && id > pi);
      if (after && ranks_before(y, id, v, idx)) { v = y; idx = id; }
    }
    block_best(v, idx, scratch, iscratch);
    if (threadIdx.x == 0) {
      out[r] = (float)idx;
      out[k + r] = v;
      out[2 * k + r] = idx < 0 ? -INFINITY : logits[idx];
    }
    pv = v;
    pi = idx;
  }
  if (threadIdx.x == 0) {
    out[3 * k] = m;
    out[3 * k + 1] = logf(s);
  }
}

// ---------------------------------------------------------------------------
// extern "C" entry points, one per element type.
#define FUSED_OPS(T, S)                                                                       \
  extern "C" __global__ void rms_norm_scaled_##S(const T *x, const float *scale, T *y,      \
                                                 int dim, float eps) {                      \
    rms_norm_scaled<T>(x, scale, y, dim, eps);                                              \
  }                                                                                         \
  extern "C" __global__ void gated_rms_norm_##S(const float *o, const T *z, const T *w,     \
                                                T *y, int dim, float eps) {                 \
    gated_rms_norm<T>(o, z, w, y, dim, eps);                                                \
  }                                                                                         \
  extern "C" __global__ void gdn_decode_step_##S(                                           \
      const T *padded, const T *taps, const T *z, const T *b, const T *a,                   \
      const float *neg_a, const float *dt_bias, const T *norm_w, const float *state,        \
      float *out, int C, int K, int n_k, int n_v, int d_k, int d_v, int tiled, float eps,   \
      float l2_eps, float q_scale) {                                                        \
    gdn_decode_step<T>(padded, taps, z, b, a, neg_a, dt_bias, norm_w, state, out, C, K,     \
                       n_k, n_v, d_k, d_v, tiled, eps, l2_eps, q_scale);                    \
  }                                                                                         \
  extern "C" __global__ void router_top_k_##S(const T *logits, float *out, int E, int k,    \
                                              int round_mode) {                             \
    router_top_k<T>(logits, out, E, k, round_mode);                                         \
  }

FUSED_OPS(float, f32)
FUSED_OPS(__nv_bfloat16, bf16)
FUSED_OPS(__half, f16)

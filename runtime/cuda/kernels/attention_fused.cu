// attention_fused.cu - scaled dot-product attention in one launch, for encoder sizes (a
// head's keys and values fit in shared memory). At BERT-base and vit_b_16 sizes the three
// launches of attention.cu (Q K^T, mask + softmax, P V) take 12-17 us per layer on an H100
// for a few MFLOP of work: mostly launch and pipeline latency.
//
// A block of 8 warps takes 8 or 16 query rows of one (batch, head) (8 where that grid is
// still resident at once: more warps per multiprocessor), or one of 10 or 12 warps takes 20
// or 24 rows where that makes the grid one block per multiprocessor (vit_b_16: 120 blocks
// of 20 rows, not 156 of 16 on 132 multiprocessors):
//   1. stages the head's keys, the block's query rows and the values in shared memory with
//      asynchronous 16-byte copies where the strides allow (the values in a second group,
//      still in flight during the scores), and the mask of its rows as one additive term
//      per score;
//   2. scores: a warp takes 4 query rows x 128 keys (a lane: keys lane + 32c, c < 4) over
//      a share of the head dimensions (the warps are rows / 4 groups of rows times 2 or
//      4 shares); per 4 dimensions it reads 4 float4s of keys and 4 broadcast float4s of
//      queries for 64 FMAs into 16 independent sums. Key rows are padded to 4 (mod 32)
//      floats, so that a quarter-warp's 8 lanes read 8 keys from disjoint banks. The other
//      shares' sums pass through shared memory to the first, which adds them in order;
//   3. each warp turns rows of scores into exp(score - max), and their sum by shuffles;
//   4. P V: a warp takes 4 rows x 64 value columns (a lane: 2 columns) over a share of the
//      keys; per 4 keys it reads 4 float2s of values and 4 broadcast float4s of P for 32
//      FMAs. The shares meet in shared memory; the output is scaled by 1 / sum and written
//      through out's strides.
// Measured on an H100 (bench/cuda/attention_fused_bench.cu, bench/results_gpu.md), the
// time goes to staging (each block copies its head's keys and values: 12 MB from L2 per
// BERT-base layer) and to the scores (shared-memory bound).
// The previous one-launch kernel (reverted, bench/results_gpu.md) did a row per warp with
// a shared load per FMA: 52 us at BERT-base's size.
//
// Exact float32 (FMA) at every precision; the sums run in another order than cuBLAS's, so
// results differ from the three-launch path in the last bits. Not for attention weights
// (need_weights): those take attention.cu's path.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/attention_staging.cuh>

#include <cstdlib>

namespace aotc::rt::cuda {
namespace {

constexpr int kWarps = 8;  // per block of 8 or 16 rows (wider blocks: warps_for)
// Query rows per block: 16, or 8 where that gives the grid more blocks (up to two per
// multiprocessor): more warps per multiprocessor hide more latency; 20 or 24 where that
// makes the grid one block per multiprocessor (attention_fused_f32).
constexpr int kMaxRows = 24;
constexpr int kKeysPerPass = 128;  // scores: 32 lanes x 4 keys
constexpr int kValueChunk = 64;    // P V: 32 lanes x 2 columns

// Shared-memory layout (in floats), the same on host and device.
struct FusedLayout {
  int rows;       // query rows per block (the kernel's ROWS)
  int e4;         // head_dim rounded up to 4 (query and key rows are zero-padded to it)
  int ev4;        // v_head_dim rounded up to 4: value row stride
  int kp;         // key row stride: e4 rounded up to 32, plus 4 (bank spread, see above)
  int sp;         // kv_len rounded up to 4: score row stride and value rows staged (pad rows zero)
  bool separate;  // values in their own space (staged with the keys), else over the keys
  bool has_bias;  // a mask: its additive term per score is staged
  int bias_ld;    // row stride of the staged term: sp, or 0 when one row serves every query row
  int k_floats, kv_floats, q_floats, p_floats, part_floats, bias_floats;
  int total() const { return kv_floats + q_floats + p_floats + part_floats + bias_floats + kMaxRows; }
  int64_t bytes() const { return static_cast<int64_t>(total()) * static_cast<int64_t>(sizeof(float)); }
};

// Warps per block: 8 (2 or 4 to a group of 4 rows), 10 or 12 for 20 or 24 rows (2 to a
// group); and the shares that the scores' head dimensions and P V's keys are split into.
__host__ __device__ constexpr int warps_for(int rows) { return rows <= 16 ? kWarps : rows / 2; }
__host__ __device__ constexpr int shares_for(int rows) { return warps_for(rows) / (rows / 4); }

FusedLayout fused_layout(const AttentionParams& p, int rows, bool separate) {
  FusedLayout l;
  l.rows = rows;
  l.e4 = round_up(p.head_dim, 4);
  l.ev4 = round_up(p.v_head_dim, 4);
  l.kp = round_up(l.e4, 32) + 4;
  l.sp = round_up(p.kv_len, 4);
  l.separate = separate;
  l.has_bias = p.mask_kind != AttentionMask::None;
  l.k_floats = static_cast<int>(p.kv_len) * l.kp;
  const int values = l.sp * l.ev4;
  l.kv_floats = separate ? l.k_floats + values : (l.k_floats > values ? l.k_floats : values);
  l.q_floats = rows * l.e4;
  l.p_floats = rows * l.sp;
  // The partial sums of the other shares. Scores: the second share's go into the score
  // rows themselves, the third's and fourth's here (rows x sp each). P V chunks (rows x 64
  // each, for every share but the first): here and in the query rows before it, which are
  // no longer needed then.
  const int shares = shares_for(rows);
  const int score_parts = (shares - 2) * rows * l.sp,
            value_parts = (shares - 1) * rows * kValueChunk - l.q_floats;
  l.part_floats = score_parts > value_parts ? score_parts : (value_parts > 0 ? value_parts : 0);
  l.bias_ld = p.mask_strides[2] != 0 ? l.sp : 0;
  l.bias_floats = l.has_bias ? (l.bias_ld ? rows : 1) * l.sp : 0;
  return l;
}

// The mask's term for every score of the block's rows (rows x sp), or one row when the
// mask is the same for every query row (a key padding mask; l.bias_ld is then 0). Eight
// elements per thread at a time, all their loads issued before the first store, so that
// they wait for memory once.
template <int THREADS>
__device__ __forceinline__ void stage_bias(const AttentionParams& p, const FusedLayout& l, float* bias,
                                           const void* mask, int64_t b, int64_t h, int row0, int rows) {
  constexpr int kBatch = 8;
  const int S = static_cast<int>(p.kv_len);
  const int bias_rows = l.bias_ld ? l.rows : 1;
  const int dr = THREADS / S, dc = THREADS - dr * S;
  int r = static_cast<int>(threadIdx.x) / S, j = static_cast<int>(threadIdx.x) - r * S;
  const int64_t base =
      (p.mask_batch_period > 0 ? b % p.mask_batch_period : b) * p.mask_strides[0] + h * p.mask_strides[1];
  while (r < bias_rows) {
    float x[kBatch];
    int at[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int64_t i = row0 + min(r, rows - 1);
      x[u] = r < bias_rows ? mask_term(p, mask, base + i * p.mask_strides[2] + j * p.mask_strides[3]) : 0.0f;
      at[u] = r < bias_rows ? r * l.sp + j : -1;
      r += dr;
      j += dc;
      if (j >= S) {
        j -= S;
        ++r;
      }
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
      if (at[u] >= 0) bias[at[u]] = x[u];
  }
}

// (8 or 16 rows: at most 128 registers, two blocks per multiprocessor; 20 or 24 rows run
// one block per multiprocessor.)
template <int ROWS>
__global__ void __launch_bounds__(32 * warps_for(ROWS), ROWS <= 16 ? 2 : 1)
    attention_fused_kernel(AttentionParams p, FusedLayout l, bool vec_q, bool vec_k, bool vec_v,
                           const float* __restrict__ q, const float* __restrict__ k,
                           const float* __restrict__ v, const void* __restrict__ mask, void* __restrict__ out,
                           AttentionOut out_type) {
  constexpr int kGroups = ROWS / 4, kShares = shares_for(ROWS), W = warps_for(ROWS), kThreads = 32 * W;
  static_assert(W == kGroups * kShares && kShares >= 2, "every group of rows has two or more warps");
  extern __shared__ float4 shared4[];
  float* const shared = reinterpret_cast<float*>(shared4);
  float* const ks = shared;                             // S x kp
  float* const vs = l.separate ? ks + l.k_floats : ks;  // sp x ev4 (over the keys if not separate)
  float* const qs = shared + l.kv_floats;               // ROWS x e4, later P V partial sums
  float* const part = qs + l.q_floats;                  // the other shares' partial sums (see fused_layout)
  float* const ps = part + l.part_floats;               // ROWS x sp: scores, then exp(score - max)
  float* const bias = ps + l.p_floats;                  // ROWS (or 1) x sp, when has_bias
  float* const inv_sum = bias + l.bias_floats;          // ROWS
  const int S = static_cast<int>(p.kv_len), E = static_cast<int>(p.head_dim),
            Ev = static_cast<int>(p.v_head_dim);
  const int row0 = blockIdx.x * ROWS;
  const int rows = min(ROWS, static_cast<int>(p.q_len) - row0);
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Both products: warp w takes rows (w % kGroups) * 4 .. + 4 and share w / kGroups of
  // the sum (head dimensions for the scores, keys for P V).
  const int r0 = (warp % kGroups) * 4, share = warp / kGroups;
  const float* const vh = v + b * p.v_strides[0] + h * p.v_strides[1];

  // 1. Keys and query rows (group 0), the values if they have their own space (group 1).
  stage(kThreads, ks, l.kp, k + b * p.k_strides[0] + h * p.k_strides[1], p.k_strides[2], S, S, E, l.e4,
        vec_k);
  stage(kThreads, qs, l.e4, q + b * p.q_strides[0] + h * p.q_strides[1] + row0 * p.q_strides[2],
        p.q_strides[2], rows, ROWS, E, l.e4, vec_q);
  commit_copies();
  if (l.separate) stage(kThreads, vs, l.ev4, vh, p.v_strides[2], S, l.sp, Ev, l.ev4, vec_v);
  commit_copies();
  if (l.has_bias) stage_bias<kThreads>(p, l, bias, mask, b, h, row0, rows);
  wait_copies<1>();
  __syncthreads();

  // 2. Scores: a lane's 4 rows x keys j0 + lane + 32c, c < 4, over its share's dimensions.
  {
    const int e_part = (l.e4 / 4 + kShares - 1) / kShares * 4;
    const int e_lo = min(share * e_part, l.e4), e_hi = min(e_lo + e_part, l.e4);
    for (int j0 = 0; j0 < S; j0 += kKeysPerPass) {
      const float* kr[4];
#pragma unroll
      for (int c = 0; c < 4; ++c)
        kr[c] = ks + min(j0 + lane + 32 * c, S - 1) * l.kp;  // (past the end: dropped)
      const float* qr = qs + r0 * l.e4;
      float acc[4][4] = {};
#pragma unroll 2
      for (int e = e_lo; e < e_hi; e += 4) {
        float4 kx[4], qx[4];
#pragma unroll
        for (int c = 0; c < 4; ++c) kx[c] = *reinterpret_cast<const float4*>(kr[c] + e);
#pragma unroll
        for (int r = 0; r < 4; ++r) qx[r] = *reinterpret_cast<const float4*>(qr + r * l.e4 + e);
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            acc[r][c] = fmaf(qx[r].x, kx[c].x, acc[r][c]);
            acc[r][c] = fmaf(qx[r].y, kx[c].y, acc[r][c]);
            acc[r][c] = fmaf(qx[r].z, kx[c].z, acc[r][c]);
            acc[r][c] = fmaf(qx[r].w, kx[c].w, acc[r][c]);
          }
      }
      if (share > 0 && share < kShares) {  // (share < kShares always: W = kGroups x kShares)
        float* const dst = share == 1 ? ps : part + (share - 2) * ROWS * l.sp;
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int c = 0; c < 4; ++c)
            if (j0 + lane + 32 * c < S) dst[(r0 + r) * l.sp + j0 + lane + 32 * c] = acc[r][c];
      }
      __syncthreads();
      if (share == 0) {
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            const int j = j0 + lane + 32 * c;
            if (j >= S) continue;
            float sum = kShares > 1 ? acc[r][c] + ps[(r0 + r) * l.sp + j] : acc[r][c];
#pragma unroll
            for (int t = 2; t < kShares; ++t) sum += part[((t - 2) * ROWS + r0 + r) * l.sp + j];
            float x = p.scale * sum;
            if (l.has_bias) {
              const float term = bias[(r0 + r) * l.bias_ld + j];
              x = term == kAttentionNegInf && p.mask_kind != AttentionMask::Additive ? kAttentionNegInf
                                                                                     : x + term;
            }
            if (p.causal && j > row0 + r0 + r) x = kAttentionNegInf;  // query i sees keys j <= i
            ps[(r0 + r) * l.sp + j] = r0 + r < rows ? x : 0.0f;       // (rows past the last: zero)
          }
      }
      __syncthreads();
    }
  }

  // 3. The rows' exponentials, a row per warp at a time (the values staged over the keys
  //    meanwhile, when they have no space of their own).
  if (!l.separate) {
    stage(kThreads, vs, l.ev4, vh, p.v_strides[2], S, l.sp, Ev, l.ev4, vec_v);
    commit_copies();
  }
  for (int r = warp; r < ROWS; r += W) {
    float* const pr = ps + r * l.sp;
    float m = kAttentionNegInf;
    for (int j = lane; j < S; j += 32) m = fmaxf(m, pr[j]);
    for (int offset = 16; offset > 0; offset /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
    // Every key masked (or -inf scores): zeros, as torch's safe softmax, not NaN.
    const bool none = m == kAttentionNegInf;
    float sum = 0.0f;
    for (int j = lane; j < l.sp; j += 32) {
      const float x = j < S && !none ? expf(pr[j] - m) : 0.0f;
      pr[j] = x;
      sum += x;
    }
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) inv_sum[r] = none ? 0.0f : 1.0f / sum;
  }
  wait_copies<0>();
  __syncthreads();

  // 4. out = P V / sum, in chunks of 64 value columns: a lane's 4 rows x columns 2 lane,
  //    2 lane + 1 of the chunk, over its share's keys.
  const int j_part = (l.sp / 4 + kShares - 1) / kShares * 4;
  const int j_lo = min(share * j_part, l.sp), j_hi = min(j_lo + j_part, l.sp);
  float2* const part2 = reinterpret_cast<float2*>(qs);  // per share but the first: ROWS x 32 float2
  for (int e0 = 0; e0 < Ev; e0 += kValueChunk) {
    const int e = e0 + 2 * lane;
    const int ec = min(e, l.ev4 - 2);  // (columns past the end: not stored)
    float2 acc[4] = {};
    const float* vp = vs + j_lo * l.ev4 + ec;
    const float* pp = ps + r0 * l.sp + j_lo;
#pragma unroll 2
    for (int j = j_lo; j < j_hi; j += 4, vp += 4 * l.ev4, pp += 4) {
      float2 vx[4];
      float4 px[4];
#pragma unroll
      for (int t = 0; t < 4; ++t) vx[t] = *reinterpret_cast<const float2*>(vp + t * l.ev4);
#pragma unroll
      for (int r = 0; r < 4; ++r) px[r] = *reinterpret_cast<const float4*>(pp + r * l.sp);
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        acc[r].x = fmaf(px[r].x, vx[0].x, acc[r].x);
        acc[r].y = fmaf(px[r].x, vx[0].y, acc[r].y);
        acc[r].x = fmaf(px[r].y, vx[1].x, acc[r].x);
        acc[r].y = fmaf(px[r].y, vx[1].y, acc[r].y);
        acc[r].x = fmaf(px[r].z, vx[2].x, acc[r].x);
        acc[r].y = fmaf(px[r].z, vx[2].y, acc[r].y);
        acc[r].x = fmaf(px[r].w, vx[3].x, acc[r].x);
        acc[r].y = fmaf(px[r].w, vx[3].y, acc[r].y);
      }
    }
    if (share > 0 && share < kShares) {
#pragma unroll
      for (int r = 0; r < 4; ++r) part2[((share - 1) * ROWS + r0 + r) * 32 + lane] = acc[r];
    }
    __syncthreads();
    if (share == 0) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        if (r0 + r >= rows) continue;
        float2 o = acc[r];
#pragma unroll
        for (int t = 1; t < kShares; ++t) {
          const float2 x = part2[((t - 1) * ROWS + r0 + r) * 32 + lane];
          o.x += x.x;
          o.y += x.y;
        }
        const float s = inv_sum[r0 + r];
        const int64_t at = b * p.out_strides[0] + h * p.out_strides[1] + (row0 + r0 + r) * p.out_strides[2];
        if (e < Ev) store_out(out, out_type, at + e, o.x * s);
        if (e + 1 < Ev) store_out(out, out_type, at + e + 1, o.y * s);
      }
    }
    __syncthreads();  // (the partial sums' space is written again by the next chunk)
  }
}

}  // namespace

bool attention_fused_f32(const Exec& ex, const AttentionParams& p, const float* q, const float* k,
                         const float* v, const void* mask, void* out, AttentionOut out_type) {
  if (p.weights != AttentionWeights::None || std::getenv("AOTC_CUDA_ATTENTION_UNFUSED")) return false;
  // At most 64 keys on a large enough grid: with tf32 products allowed,
  // attention_short_tf32.cu's kernel, else attention_short.cu's (a block per window of a
  // Swin transformer). Neither where the rows per block are forced (the checks of this
  // kernel on short sequences; any value of AOTC_CUDA_ATTENTION_ROWS turns them off).
  // Past 64 keys at fp16 and bf16, attention_mma_16bit.cu's kernel.
  if (!std::getenv("AOTC_CUDA_ATTENTION_ROWS") &&
      (attention_short_tf32(ex, p, q, k, v, mask, out, out_type) ||
       attention_short_f32(ex, p, q, k, v, mask, out, out_type) ||
       attention_mma_16bit(ex, p, q, k, v, mask, out, out_type)))
    return true;
  // (An empty head dimension, where every score is 0, takes the three launches: the staging
  // loops step over float4 columns.)
  if (p.head_dim <= 0 || p.q_len > INT32_MAX / 2 || p.kv_len > 65536 || p.head_dim > 4096 ||
      p.v_head_dim > 4096 || p.heads > 65535 || p.batch > 65535)
    return false;
  AttentionDevice device;
  if (!attention_device(device)) return false;
  const int max_bytes = device.max_block_bytes, sm_bytes = device.sm_bytes, sms = device.sms;
  // The layout of `rows`-row blocks: the values beside the keys, so that their loads
  // overlap the scores, when that still keeps every block of the grid resident at once;
  // else over the keys (vit_b_16's 156 blocks need two per multiprocessor); rows = 0 when
  // neither fits.
  const auto blocks_of = [&](int rows) { return (p.q_len + rows - 1) / rows * p.heads * p.batch; };
  const auto layout_for = [&](int rows) {
    const int64_t per_sm = (blocks_of(rows) + sms - 1) / sms;
    FusedLayout l = fused_layout(p, rows, true);
    if (l.bytes() > max_bytes || per_sm * (l.bytes() + 1024) > sm_bytes) l = fused_layout(p, rows, false);
    if (l.bytes() > max_bytes) l.rows = 0;
    return l;
  };
  // 8 query rows per block where the grid of 8-row blocks is still resident at once (two
  // per multiprocessor: the register limit) and fits, else 16 (fewer copies of each head's
  // keys and values). BERT-base, 12 heads x 128 rows: 192 blocks of 8 rather than 96 of
  // 16, which left each scheduler of a multiprocessor two warps.
  FusedLayout l = layout_for(8);
  if (l.rows == 0 || blocks_of(8) > 2 * static_cast<int64_t>(sms)) l = layout_for(16);
  // Where 16-row blocks are more than one per multiprocessor and 20 or 24-row ones are not,
  // the larger blocks (10 or 12 warps, 2 to each group of 4 rows): otherwise the
  // multiprocessors with two blocks finish last while the others wait. vit_b_16, 197 rows x
  // 12 heads: 120 blocks of 20 rows rather than 156 of 16 (bench/results_gpu.md).
  if (l.rows == 16 && blocks_of(16) > sms)
    for (const int wider : {20, 24})
      if (blocks_of(wider) <= sms) {
        const FusedLayout w = layout_for(wider);
        if (w.rows != 0) l = w;
        break;
      }
  // AOTC_CUDA_ATTENTION_ROWS=8, 16, 20 or 24 forces the rows per block where they fit (for
  // the checks of bench/cuda/attention_fused_bench.cu).
  if (const char* forced = std::getenv("AOTC_CUDA_ATTENTION_ROWS")) {
    const int rows = std::atoi(forced);
    if (rows == 8 || rows == 16 || rows == 20 || rows == 24)
      if (const FusedLayout f = layout_for(rows); f.rows != 0) l = f;
  }
  if (l.rows == 0) return false;
  const int rows = l.rows;
  const dim3 grid(static_cast<unsigned>((p.q_len + rows - 1) / rows), static_cast<unsigned>(p.heads),
                  static_cast<unsigned>(p.batch));
  auto* const kernel = rows == 8    ? attention_fused_kernel<8>
                       : rows == 20 ? attention_fused_kernel<20>
                       : rows == 24 ? attention_fused_kernel<24>
                                    : attention_fused_kernel<16>;
  if (!allow_block_bytes(kernel, device)) return false;
  kernel<<<grid, 32 * warps_for(rows), static_cast<size_t>(l.bytes()), ex.stream>>>(
      p, l, vector_rows(q, p.q_strides, p.head_dim), vector_rows(k, p.k_strides, p.head_dim),
      vector_rows(v, p.v_strides, p.v_head_dim), q, k, v, mask, out, out_type);
  check_launch("attention_fused_kernel");
  return true;
}

}  // namespace aotc::rt::cuda

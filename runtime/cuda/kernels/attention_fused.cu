// attention_fused.cu - scaled dot-product attention in one launch, for the sizes of
// transformer encoders (every key and value of a head fits in shared memory). At BERT-base
// and vit_b_16 sizes the three launches of attention.cu (Q K^T, the mask + softmax, P V)
// took 15-17 us per layer on an H100, mostly latency; their arithmetic is a few MFLOP.
//
// A block takes kRows query rows of one (batch, head): it stages that head's keys (rows
// padded by one float, so that lanes reading different keys hit different banks), values
// and its query rows in shared memory; each warp then takes kRows / kWarps query rows, one
// at a time: the scores (lanes over keys), the causal limit and the mask, the row maximum
// and the sum of exponentials by shuffles, then the output (lanes over the value width)
// as the sum of exp(score - max) * value, times 1 / sum. Exact float32 at every precision;
// the sums run in another order than cuBLAS's, so results differ in the last bits.
//
// Not for attention weights (need_weights): those take attention.cu's path.
#include <aotc/rt/cuda/kernels_cuda.h>

#include <cstdlib>

namespace aotc::rt::cuda {
namespace {

constexpr int kRows = 16;  // query rows per block
constexpr int kWarps = 4;  // per block
constexpr float kNegInf = -__builtin_inff();
// Shared memory a block may take (the H100 allows 227 KB; 160 KB leaves room for two
// blocks of BERT's size per multiprocessor: 78 KB each).
constexpr int64_t kMaxSharedBytes = 160 * 1024;

int64_t shared_floats(const AttentionParams& p) {
  return p.kv_len * (p.head_dim + 1) + p.kv_len * p.v_head_dim + kRows * p.head_dim + kRows * p.kv_len;
}

// The score after the causal limit and the mask (as attention.cu's masked_score).
__device__ __forceinline__ float masked(const AttentionParams& p, float v, int64_t j, int64_t visible,
                                        const float* mf, const unsigned char* mb, int64_t mc) {
  if (j >= visible) return kNegInf;
  switch (p.mask_kind) {
    case AttentionMask::None:
      return v;
    case AttentionMask::Additive:
      return v + mf[j * mc];
    case AttentionMask::KeepIfTrue:
      return mb[j * mc] ? v : kNegInf;
    case AttentionMask::DropIfTrue:
      return mb[j * mc] ? kNegInf : v;
    case AttentionMask::DropIfNonzero:
      return mf[j * mc] != 0.0f ? kNegInf : v;
  }
  return v;
}

__global__ void __launch_bounds__(32 * kWarps)
    attention_fused_kernel(AttentionParams p, const float* __restrict__ q, const float* __restrict__ k,
                           const float* __restrict__ v, const void* __restrict__ mask,
                           float* __restrict__ out) {
  extern __shared__ float shared[];
  const int S = static_cast<int>(p.kv_len), E = static_cast<int>(p.head_dim),
            Ev = static_cast<int>(p.v_head_dim);
  const int row0 = blockIdx.x * kRows;
  const int64_t h = blockIdx.y, b = blockIdx.z;
  float* const ks = shared;            // S x (E + 1)
  float* const vs = ks + S * (E + 1);  // S x Ev
  float* const qs = vs + S * Ev;       // kRows x E
  float* const ps = qs + kRows * E;    // kRows x S: exp(score - max)
  const float* const kh = k + b * p.k_strides[0] + h * p.k_strides[1];
  const float* const vh = v + b * p.v_strides[0] + h * p.v_strides[1];
  const float* const qh = q + b * p.q_strides[0] + h * p.q_strides[1];
  for (int idx = threadIdx.x; idx < S * E; idx += blockDim.x) {
    const int j = idx / E, e = idx - j * E;
    ks[j * (E + 1) + e] = kh[j * p.k_strides[2] + e];
  }
  for (int idx = threadIdx.x; idx < S * Ev; idx += blockDim.x) {
    const int j = idx / Ev, e = idx - j * Ev;
    vs[idx] = vh[j * p.v_strides[2] + e];
  }
  const int rows = min(kRows, static_cast<int>(p.q_len) - row0);
  for (int idx = threadIdx.x; idx < rows * E; idx += blockDim.x) {
    const int r = idx / E, e = idx - r * E;
    qs[idx] = qh[(row0 + r) * p.q_strides[2] + e];
  }
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int r = warp; r < rows; r += kWarps) {
    const int64_t i = row0 + r;
    const int64_t visible = p.causal ? (i + 1 < S ? i + 1 : S) : S;
    const int64_t mrow = b * p.mask_strides[0] + h * p.mask_strides[1] + i * p.mask_strides[2];
    const auto* mf = static_cast<const float*>(mask) + mrow;
    const auto* mb = static_cast<const unsigned char*>(mask) + mrow;
    const float* const qr = qs + r * E;
    float* const pr = ps + r * S;
    float m = kNegInf;
    // Four keys per lane at a time: four independent chains of FMAs instead of one.
    for (int j0 = lane; j0 < S; j0 += 128) {
      // (a key past the end reads the last key's row; its score is dropped)
      const float* const k0 = ks + min(j0, S - 1) * (E + 1);
      const float* const k1 = ks + min(j0 + 32, S - 1) * (E + 1);
      const float* const k2 = ks + min(j0 + 64, S - 1) * (E + 1);
      const float* const k3 = ks + min(j0 + 96, S - 1) * (E + 1);
      float dot[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (int e = 0; e < E; ++e) {
        const float qe = qr[e];
        dot[0] = fmaf(qe, k0[e], dot[0]);
        dot[1] = fmaf(qe, k1[e], dot[1]);
        dot[2] = fmaf(qe, k2[e], dot[2]);
        dot[3] = fmaf(qe, k3[e], dot[3]);
      }
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int j = j0 + 32 * t;
        if (j < S) {
          const float x = masked(p, p.scale * dot[t], j, visible, mf, mb, p.mask_strides[3]);
          pr[j] = x;
          m = fmaxf(m, x);
        }
      }
    }
    for (int offset = 16; offset > 0; offset /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
    float* const o = out + b * p.out_strides[0] + h * p.out_strides[1] + i * p.out_strides[2];
    if (m == kNegInf) {  // every key masked: zeros, as torch's safe softmax
      for (int e = lane; e < Ev; e += 32) o[e] = 0.0f;
      continue;
    }
    float sum = 0.0f;
    for (int j = lane; j < S; j += 32) {
      const float x = expf(pr[j] - m);
      pr[j] = x;
      sum += x;
    }
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    __syncwarp();  // the row's exponentials, written by every lane, are read by every lane
    const float inv = 1.0f / sum;
    // Two value columns per lane, each summed over even and odd keys apart: four chains.
    for (int e0 = lane; e0 < Ev; e0 += 64) {
      const int e1 = e0 + 32 < Ev ? e0 + 32 : e0;
      float a0 = 0.0f, a1 = 0.0f, b0 = 0.0f, b1 = 0.0f;
      int j = 0;
      for (; j + 1 < S; j += 2) {
        const float p0 = pr[j], p1 = pr[j + 1];
        a0 = fmaf(p0, vs[j * Ev + e0], a0);
        b0 = fmaf(p0, vs[j * Ev + e1], b0);
        a1 = fmaf(p1, vs[(j + 1) * Ev + e0], a1);
        b1 = fmaf(p1, vs[(j + 1) * Ev + e1], b1);
      }
      if (j < S) {
        a0 = fmaf(pr[j], vs[j * Ev + e0], a0);
        b0 = fmaf(pr[j], vs[j * Ev + e1], b0);
      }
      o[e0] = (a0 + a1) * inv;
      if (e0 + 32 < Ev) o[e1] = (b0 + b1) * inv;
    }
  }
}

}  // namespace

bool attention_fused_f32(const Exec& ex, const AttentionParams& p, const float* q, const float* k,
                         const float* v, const void* mask, float* out) {
  if (p.weights != AttentionWeights::None || std::getenv("AOTC_CUDA_ATTENTION_UNFUSED")) return false;
  const int64_t bytes = shared_floats(p) * static_cast<int64_t>(sizeof(float));
  if (bytes > kMaxSharedBytes || p.q_len > INT32_MAX / 2 || p.heads > 65535 || p.batch > 65535) return false;
  // The kernel's dynamic shared memory limit, raised on the current device (not a stream
  // operation: allowed while the graph is captured).
  if (cudaFuncSetAttribute(attention_fused_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(kMaxSharedBytes)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  const dim3 grid(static_cast<unsigned>((p.q_len + kRows - 1) / kRows), static_cast<unsigned>(p.heads),
                  static_cast<unsigned>(p.batch));
  attention_fused_kernel<<<grid, 32 * kWarps, static_cast<size_t>(bytes), ex.stream>>>(p, q, k, v, mask, out);
  check_launch("attention_fused_kernel");
  return true;
}

}  // namespace aotc::rt::cuda

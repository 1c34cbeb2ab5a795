// layer_norm.cu - layer normalisation of each contiguous row (LayerNormParams, as the CPU
// kernel takes it). Two reductions over the row, both in float32: the mean, then the
// centred sum of squares (not E[x^2] - E[x]^2, which cancels badly when the mean is large
// against the spread).
//
// Rows of up to kMaxWarpVectors * 128 floats whose rows start on 16 bytes (transformer
// widths: 768, 1024) take one warp per row: the row is read once, in 16-byte loads, into
// registers, and both reductions are shuffles within the warp, with no barrier. Longer
// or unaligned rows take one block per row (shared memory between the warps, the row read
// three times; after the first from L1/L2). The block version was latency-bound on
// BERT-base's 128 x 768 rows (bench/results_gpu.md).
//
// layer_norm_16bit writes the result in the 16-bit type of --precision fp16 / bf16, for
// GEMMs that read it as their 16-bit operand (store_activations_16bit.cpp): the same
// arithmetic, rounded once as it is stored. layer_norm_16bit_input reads rows kept in that
// type (a ConvNeXt's depthwise outputs and stem), widened to float32 as they are loaded: the
// same arithmetic on the rounded values.
//
// A RowGather reorders the rows read (a Swin block's shift and window partition, which
// would otherwise be copies after the normalisation): output row r normalises input row
// gathered_row(r).
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/block_sum.cuh>
#include <aotc/rt/cuda/lowp.cuh>

namespace aotc::rt::cuda {
namespace {

__device__ int64_t gathered_row(const RowGather& g, int64_t row) { return g.index ? g.source_row(row) : row; }

// Four consecutive outputs (16-byte aligned for float, 8-byte for the 16-bit types).
template <class T>
struct alignas(4 * sizeof(T)) Four {
  T v[4];
};

// Four consecutive inputs as float32 (16-byte aligned for float, 8-byte for the 16-bit types).
template <class TX>
__device__ __forceinline__ float4 load4(const TX* x) {
  if constexpr (sizeof(TX) == sizeof(float)) {
    return *reinterpret_cast<const float4*>(x);
  } else {
    const Four<TX> v = *reinterpret_cast<const Four<TX>*>(x);
    return make_float4(widen(v.v[0]), widen(v.v[1]), widen(v.v[2]), widen(v.v[3]));
  }
}

template <class T>
__device__ __forceinline__ void store4(T* y, float a, float b, float c, float d) {
  *reinterpret_cast<Four<T>*>(y) = Four<T>{{round_to<T>(a), round_to<T>(b), round_to<T>(c), round_to<T>(d)}};
}

template <class TX, class T>
__global__ void layer_norm_kernel(LayerNormParams p, RowGather g, const TX* __restrict__ x,
                                  const float* __restrict__ gamma, const float* __restrict__ beta,
                                  T* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const int64_t n = p.cols;
  const TX* xr = x + gathered_row(g, row) * n;
  T* yr = y + row * n;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += widen(xr[j]);
  const float mu = block_sum(s, shared) / static_cast<float>(n);
  float sq = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float d = widen(xr[j]) - mu;
    sq += d * d;
  }
  const float var = block_sum(sq, shared) / static_cast<float>(n);
  const float r = rsqrtf(var + p.eps);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    float v = (widen(xr[j]) - mu) * r;
    if (gamma) v *= gamma[j];
    if (beta) v += beta[j];
    yr[j] = round_to<T>(v);
  }
  if (threadIdx.x == 0) {
    if (mean) mean[row] = mu;
    if (rstd) rstd[row] = r;
  }
}

constexpr int kMaxWarpVectors = 8;  // float4s per lane: rows of up to 1024 floats
constexpr int kWarpRowsPerBlock = 4;

template <int kVectors, class TX, class T>
__global__ void layer_norm_warp_kernel(LayerNormParams p, RowGather gather, const TX* __restrict__ x,
                                       const float* __restrict__ gamma, const float* __restrict__ beta,
                                       T* __restrict__ y, float* __restrict__ mean,
                                       float* __restrict__ rstd) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / 32;
  if (row >= p.rows) return;  // the same for the whole warp
  const int lane = threadIdx.x % 32;
  const int vectors = static_cast<int>(p.cols / 4);
  const TX* const xr = x + gathered_row(gather, row) * p.cols;
  T* const yr = y + row * p.cols;
  // gamma and beta are loaded with the row: their latency overlaps its, not the reductions'.
  float4 v[kVectors], g[kVectors], b[kVectors];
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < kVectors; ++i) {
    const int c = lane + 32 * i;
    const bool inside = c < vectors;
    v[i] = inside ? load4(xr + 4 * c) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    g[i] = inside && gamma ? reinterpret_cast<const float4*>(gamma)[c] : make_float4(1.0f, 1.0f, 1.0f, 1.0f);
    b[i] = inside && beta ? reinterpret_cast<const float4*>(beta)[c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
  }
  const float n = static_cast<float>(p.cols);
  const float mu = warp_sum(s) / n;
  float sq = 0.0f;
#pragma unroll
  for (int i = 0; i < kVectors; ++i) {
    if (lane + 32 * i >= vectors) break;
    const float x0 = v[i].x - mu, x1 = v[i].y - mu, x2 = v[i].z - mu, x3 = v[i].w - mu;
    sq += (x0 * x0 + x1 * x1) + (x2 * x2 + x3 * x3);
  }
  const float r = rsqrtf(warp_sum(sq) / n + p.eps);
#pragma unroll
  for (int i = 0; i < kVectors; ++i) {
    const int c = lane + 32 * i;
    if (c >= vectors) break;
    // (x - mu) * r * gamma + beta, as the block kernel (gamma 1 and beta 0 when absent).
    store4(yr + 4 * c, (v[i].x - mu) * r * g[i].x + b[i].x, (v[i].y - mu) * r * g[i].y + b[i].y,
           (v[i].z - mu) * r * g[i].z + b[i].z, (v[i].w - mu) * r * g[i].w + b[i].w);
  }
  if (lane == 0) {
    if (mean) mean[row] = mu;
    if (rstd) rstd[row] = r;
  }
}

bool aligned(const void* ptr, size_t bytes) { return reinterpret_cast<uintptr_t>(ptr) % bytes == 0; }

template <int kVectors, class TX, class T>
void launch_warp_rows(cudaStream_t stream, const LayerNormParams& p, const RowGather& g, const TX* x,
                      const float* gamma, const float* beta, T* y, float* mean, float* rstd) {
  const auto blocks = static_cast<unsigned>((p.rows + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock);
  layer_norm_warp_kernel<kVectors, TX, T>
      <<<blocks, 32 * kWarpRowsPerBlock, 0, stream>>>(p, g, x, gamma, beta, y, mean, rstd);
  check_launch("layer_norm_warp_kernel");
}

// The warp-per-row kernel for rows that fit it; false for the others.
template <class TX, class T>
bool layer_norm_warp_rows(cudaStream_t stream, const LayerNormParams& p, const RowGather& g, const TX* x,
                          const float* gamma, const float* beta, T* y, float* mean, float* rstd) {
  if (p.cols % 4 != 0 || p.cols > int64_t{128} * kMaxWarpVectors || !aligned(x, 4 * sizeof(TX)) ||
      !aligned(y, 4 * sizeof(T)) || (gamma && !aligned(gamma, 16)) || (beta && !aligned(beta, 16)))
    return false;
  switch ((p.cols + 127) / 128) {
    case 1:
      launch_warp_rows<1>(stream, p, g, x, gamma, beta, y, mean, rstd);
      return true;
    case 2:
      launch_warp_rows<2>(stream, p, g, x, gamma, beta, y, mean, rstd);
      return true;
    case 3:
      launch_warp_rows<3>(stream, p, g, x, gamma, beta, y, mean, rstd);
      return true;
    case 4:
      launch_warp_rows<4>(stream, p, g, x, gamma, beta, y, mean, rstd);
      return true;
    case 5:
    case 6:
      launch_warp_rows<6>(stream, p, g, x, gamma, beta, y, mean, rstd);
      return true;
    default:
      launch_warp_rows<kMaxWarpVectors>(stream, p, g, x, gamma, beta, y, mean, rstd);
      return true;
  }
}

template <class TX, class T>
void layer_norm_as(cudaStream_t stream, const LayerNormParams& p, const TX* x, const float* gamma,
                   const float* beta, T* y, float* mean, float* rstd, const RowGather& gather) {
  if (p.rows <= 0 || p.cols <= 0) return;
  if (p.rows > 0x7fffffff) {
    note_error("layer_norm", "more rows than a grid holds");
    return;
  }
  if (gather.index && !gather.fits(p.rows)) {
    note_error("layer_norm", "a row order whose period does not divide the rows");
    return;
  }
  if (layer_norm_warp_rows(stream, p, gather, x, gamma, beta, y, mean, rstd)) return;
  // About 4 to 8 columns per thread; at least one warp, at most 1024 threads.
  int threads = 32;
  while (threads < 1024 && threads * 8 < p.cols) threads *= 2;
  layer_norm_kernel<TX, T>
      <<<static_cast<unsigned>(p.rows), threads, 0, stream>>>(p, gather, x, gamma, beta, y, mean, rstd);
  check_launch("layer_norm_kernel");
}

}  // namespace

void layer_norm_f32(cudaStream_t stream, const LayerNormParams& p, const float* x, const float* gamma,
                    const float* beta, float* y, float* mean, float* rstd, const RowGather& gather) {
  layer_norm_as(stream, p, x, gamma, beta, y, mean, rstd, gather);
}

void layer_norm_16bit(cudaStream_t stream, Precision precision, const LayerNormParams& p, const float* x,
                      const float* gamma, const float* beta, void* y, const RowGather& gather) {
  if (precision == Precision::Fp16)
    layer_norm_as(stream, p, x, gamma, beta, static_cast<__half*>(y), nullptr, nullptr, gather);
  else if (precision == Precision::Bf16)
    layer_norm_as(stream, p, x, gamma, beta, static_cast<__nv_bfloat16*>(y), nullptr, nullptr, gather);
  else
    note_error("layer_norm_16bit", "16-bit outputs need --precision fp16 or bf16");
}

namespace {
template <class TX>
void layer_norm_from(cudaStream_t stream, const LayerNormParams& p, const void* x, const float* gamma,
                     const float* beta, void* y, bool y_16bit, const RowGather& gather) {
  const auto* rows = static_cast<const TX*>(x);
  if (y_16bit)
    layer_norm_as(stream, p, rows, gamma, beta, static_cast<TX*>(y), nullptr, nullptr, gather);
  else
    layer_norm_as(stream, p, rows, gamma, beta, static_cast<float*>(y), nullptr, nullptr, gather);
}
}  // namespace

void layer_norm_16bit_input(cudaStream_t stream, Precision precision, const LayerNormParams& p, const void* x,
                            const float* gamma, const float* beta, void* y, bool y_16bit,
                            const RowGather& gather) {
  if (precision == Precision::Fp16)
    layer_norm_from<__half>(stream, p, x, gamma, beta, y, y_16bit, gather);
  else if (precision == Precision::Bf16)
    layer_norm_from<__nv_bfloat16>(stream, p, x, gamma, beta, y, y_16bit, gather);
  else
    note_error("layer_norm_16bit_input", "16-bit inputs need --precision fp16 or bf16");
}

}  // namespace aotc::rt::cuda

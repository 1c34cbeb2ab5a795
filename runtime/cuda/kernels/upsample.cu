// upsample.cu - nearest, nearest-exact, (bi/tri)linear and bicubic resampling of N x C x D x H
// x W planes (UpsampleParams, as the CPU kernel takes it): one thread per output element,
// consecutive threads along an output row, so that the writes are coalesced and the reads of
// a warp fall on a few input rows.
//
// Each thread finds its source cells and weights along every dim with the CPU kernel's
// float formulas in the same order, the fused multiply-adds where the CPU's compiler fuses
// them (g++ contracts a * b + c at -march=x86-64-v3) and nowhere else, so that the nearest
// modes pick the CPU's cells bit for bit. The linear and cubic sums follow the CPU's order
// too: per column tap, the input rows blended (the first product, then fused adds), then the
// column taps summed by fused adds from 0; rows wider than the CPU's blend buffer
// (kBlendMax) are summed row by row as the CPU does there.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/fast_div.cuh>

namespace aotc::rt::cuda {
namespace {

constexpr int kMaxTaps = 4;
constexpr int64_t kBlendMax = 4096;  // the CPU kernel's: input rows up to this wide are blended first

struct Source {
  int64_t index[kMaxTaps];
  float weight[kMaxTaps];
};

// torch's area_pixel_compute_source_index: linear clamps a negative position to 0, cubic
// does not (its taps are clamped to the input instead).
__device__ __forceinline__ float source_position(float ratio, int64_t o, bool align_corners, bool cubic) {
  if (align_corners) return __fmul_rn(ratio, static_cast<float>(o));
  const float s = fmaf(ratio, __fadd_rn(static_cast<float>(o), 0.5f), -0.5f);
  return !cubic && s < 0.0f ? 0.0f : s;
}

// torch's cubic convolution kernel (A = -0.75): for |x| <= 1 and for 1 < |x| < 2, fused as
// the CPU's compiler (g++ 12) fuses them: the last constant is added to the four weights
// in one vector addition, unfused.
constexpr float kCubicA = -0.75f;
__device__ __forceinline__ float cubic1(float x) {
  return __fadd_rn(__fmul_rn(__fmul_rn(fmaf(kCubicA + 2.0f, x, -(kCubicA + 3.0f)), x), x), 1.0f);
}
__device__ __forceinline__ float cubic2(float x) {
  return __fadd_rn(__fmul_rn(fmaf(fmaf(kCubicA, x, -5.0f * kCubicA), x, 8.0f * kCubicA), x), -4.0f * kCubicA);
}

template <UpsampleMode kMode>
__device__ __forceinline__ Source source(const UpsampleParams& p, int dim, int64_t o) {
  const int64_t in = p.in[dim], out = p.out[dim];
  const float ratio = p.ratio[dim];
  Source s{};
  s.weight[0] = 1.0f;
  if constexpr (kMode == UpsampleMode::Nearest) {
    s.index[0] = min(static_cast<int64_t>(floorf(__fmul_rn(ratio, static_cast<float>(o)))), in - 1);
  } else if constexpr (kMode == UpsampleMode::NearestExact) {
    // torch: floorf(real + 0.5) with a double 0.5, rounded back to float by floorf.
    const float real = source_position(ratio, o, false, false);
    s.index[0] =
        min(static_cast<int64_t>(floorf(static_cast<float>(static_cast<double>(real) + 0.5))), in - 1);
  } else if constexpr (kMode == UpsampleMode::Linear) {
    if (in == out) {  // torch copies
      s.index[0] = s.index[1] = o;
      s.weight[1] = 0.0f;
    } else {
      const float real = source_position(ratio, o, p.align_corners, false);
      const int64_t i0 = min(static_cast<int64_t>(floorf(real)), in - 1);
      float l1 = __fsub_rn(real, static_cast<float>(i0));
      l1 = l1 < 0.0f ? 0.0f : (l1 > 1.0f ? 1.0f : l1);
      s.index[0] = i0;
      s.index[1] = i0 + (i0 < in - 1 ? 1 : 0);
      s.weight[0] = __fsub_rn(1.0f, l1);
      s.weight[1] = l1;
    }
  } else {
    const float real = source_position(ratio, o, p.align_corners, true);
    const float floor_real = floorf(real);
    const int64_t i = static_cast<int64_t>(floor_real);
    const float t = __fsub_rn(real, floor_real);
    s.weight[0] = cubic2(__fadd_rn(t, 1.0f));
    s.weight[1] = cubic1(t);
    s.weight[2] = cubic1(__fsub_rn(1.0f, t));
    s.weight[3] = cubic2(__fsub_rn(2.0f, t));
#pragma unroll
    for (int j = 0; j < 4; ++j) s.index[j] = min(max(i - 1 + j, int64_t{0}), in - 1);
  }
  s.index[0] = max(s.index[0], int64_t{0});
  return s;
}

__host__ __device__ constexpr int taps_of(UpsampleMode mode) {
  return mode == UpsampleMode::Cubic ? 4 : (mode == UpsampleMode::Linear ? 2 : 1);
}

// The output's shape for index arithmetic: 32-bit division by multiplication where every
// index fits 32 bits.
struct OutShape {
  FastDiv w, h, d;
  bool narrow;
};

template <UpsampleMode kMode>
__global__ void upsample_kernel(int64_t total, UpsampleParams p, OutShape shape, const float* __restrict__ x,
                                float* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  int64_t ow, oh, od, plane;
  if (shape.narrow) {
    const auto u = static_cast<uint32_t>(i);
    const uint32_t row = shape.w.div(u), col = u - row * shape.w.divisor();
    const uint32_t rows = shape.h.div(row), depth = shape.d.div(rows);
    ow = col;
    oh = row - rows * shape.h.divisor();
    od = rows - depth * shape.d.divisor();
    plane = depth;
  } else {
    ow = i % p.out[2];
    oh = (i / p.out[2]) % p.out[1];
    od = (i / (p.out[2] * p.out[1])) % p.out[0];
    plane = i / (p.out[2] * p.out[1] * p.out[0]);
  }
  const float* xp = x + plane * (p.in[0] * p.in[1] * p.in[2]);
  constexpr int kTaps = taps_of(kMode);
  // Dims the op does not interpolate contribute one row of weight 1 (no 0 * x terms, which
  // would turn an infinite input into NaN where the CPU gives inf).
  const Source none{{0}, {1.0f}};
  const Source sw = source<kMode>(p, 2, ow);
  const Source sh = p.dims >= 2 ? source<kMode>(p, 1, oh) : none;
  const Source sd = p.dims >= 3 ? source<kMode>(p, 0, od) : none;
  if constexpr (kTaps == 1) {
    y[i] = xp[(sd.index[0] * p.in[1] + sh.index[0]) * p.in[2] + sw.index[0]];
  } else {
    const int nd = p.dims >= 3 ? kTaps : 1, nh = p.dims >= 2 ? kTaps : 1;
    float acc = 0.0f;
    if (nd * nh == 1 || p.in[2] <= kBlendMax) {
      // The CPU blends the rows into one, then sums the column taps into it.
      float v = 0.0f;
#pragma unroll
      for (int j = 0; j < kTaps; ++j) {
        float blended = 0.0f;
#pragma unroll
        for (int a = 0; a < kTaps; ++a) {
          if (a >= nd) break;  // unrolled with constant indices: the taps stay in registers
#pragma unroll
          for (int b = 0; b < kTaps; ++b) {
            if (b >= nh) break;
            const float w = __fmul_rn(sd.weight[a], sh.weight[b]);
            const float cell = xp[(sd.index[a] * p.in[1] + sh.index[b]) * p.in[2] + sw.index[j]];
            blended = a == 0 && b == 0 ? __fmul_rn(w, cell) : fmaf(w, cell, blended);
          }
        }
        v = fmaf(blended, sw.weight[j], v);
      }
      acc = fmaf(1.0f, v, acc);
    } else {
#pragma unroll
      for (int a = 0; a < kTaps; ++a) {
        if (a >= nd) break;
#pragma unroll
        for (int b = 0; b < kTaps; ++b) {
          if (b >= nh) break;
          const float* row = xp + (sd.index[a] * p.in[1] + sh.index[b]) * p.in[2];
          float v = 0.0f;
#pragma unroll
          for (int j = 0; j < kTaps; ++j) v = fmaf(row[sw.index[j]], sw.weight[j], v);
          acc = fmaf(__fmul_rn(sd.weight[a], sh.weight[b]), v, acc);
        }
      }
    }
    y[i] = acc;
  }
}

template <UpsampleMode kMode>
void launch(cudaStream_t stream, int64_t total, const UpsampleParams& p, const OutShape& shape,
            const float* x, float* y) {
  upsample_kernel<kMode><<<blocks_for(total), kThreads, 0, stream>>>(total, p, shape, x, y);
  check_launch("upsample_kernel");
}

}  // namespace

void upsample_f32(cudaStream_t stream, const UpsampleParams& p, const float* x, float* y) {
  if (p.planes <= 0 || p.out[0] <= 0 || p.out[1] <= 0 || p.out[2] <= 0) return;
  const int64_t total = p.planes * p.out[0] * p.out[1] * p.out[2];
  OutShape shape{};
  shape.narrow = total <= int64_t{0xffffffff};
  if (shape.narrow) {
    shape.w = FastDiv(static_cast<uint32_t>(p.out[2]));
    shape.h = FastDiv(static_cast<uint32_t>(p.out[1]));
    shape.d = FastDiv(static_cast<uint32_t>(p.out[0]));
  }
  switch (p.mode) {
    case UpsampleMode::Nearest:
      return launch<UpsampleMode::Nearest>(stream, total, p, shape, x, y);
    case UpsampleMode::NearestExact:
      return launch<UpsampleMode::NearestExact>(stream, total, p, shape, x, y);
    case UpsampleMode::Linear:
      return launch<UpsampleMode::Linear>(stream, total, p, shape, x, y);
    case UpsampleMode::Cubic:
      return launch<UpsampleMode::Cubic>(stream, total, p, shape, x, y);
  }
  note_error("upsample", "unknown mode");
}

}  // namespace aotc::rt::cuda

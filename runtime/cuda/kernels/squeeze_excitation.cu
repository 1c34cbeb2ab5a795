// squeeze_excitation.cu - a squeeze-and-excitation block's gate from its pooled input in
// one launch (fuse_squeeze_excitation.cpp): h = clamp(act(w1 x + b1)), s = gate(w2 h + b2)
// per image, where the two 1x1 convolutions and the gate were two cuBLAS products of m =
// batch rows and a pointwise pass, each a launch (EfficientNet has 16 such blocks). A block
// of 1024 threads takes an image and 1024 channels of s: its warps compute every hidden
// value (a row of w1 a warp at a time, lanes across the channels, added by shuffles in a
// fixed order) into shared memory, then each thread its channel of s from w2 stored
// transposed (r x c, so that a warp's loads are one run). Float32 throughout, in the order
// torch adds: the dot products, then the bias.
//
// The kernel is bound by the latency of its loads from L2 (a block reads all of w1 and its
// channels of w2), not by their bytes: rows are read as float4 where the channels allow and
// the loops are unrolled so that a lane has its loads in flight together rather than one
// round trip each.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/squeeze_excitation_plan.h>
#include <aotc/rt/cuda/pointwise.cuh>

#include <cstdint>
#include <type_traits>

namespace aotc::rt::cuda {
namespace {

constexpr unsigned kBlock = 1024;

// A warp's dot product of a row of w1 with an image's pooled input; lanes take every 32nd
// element (or float4), then shuffles add the lanes in a fixed order.
template <bool Vec4>
__device__ float row_dot(const float* __restrict__ row, const float* __restrict__ x, unsigned c,
                         unsigned lane) {
  float acc = 0.0f;
  if constexpr (Vec4) {
    const float4* row4 = reinterpret_cast<const float4*>(row);
    const float4* x4 = reinterpret_cast<const float4*>(x);
#pragma unroll 8
    for (unsigned k = lane; k < c / 4; k += 32) {
      const float4 a = row4[k], b = x4[k];
      acc = fmaf(a.x, b.x, acc);
      acc = fmaf(a.y, b.y, acc);
      acc = fmaf(a.z, b.z, acc);
      acc = fmaf(a.w, b.w, acc);
    }
  } else {
#pragma unroll 8
    for (unsigned k = lane; k < c; k += 32) acc = fmaf(row[k], x[k], acc);
  }
  for (unsigned offset = 16; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  return acc;
}

template <GemmActivation Act, UnaryOp Gate, bool Vec4>
__global__ void __launch_bounds__(kBlock)
    squeeze_excitation_kernel(unsigned c, unsigned r, float lo, float hi, const float* __restrict__ x,
                              const float* __restrict__ w1, const float* __restrict__ b1,
                              const float* __restrict__ w2t, const float* __restrict__ b2,
                              float* __restrict__ s) {
  extern __shared__ float hidden[];  // r
  const float* image_x = x + static_cast<size_t>(blockIdx.x) * c;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (unsigned j = warp; j < r; j += kBlock / 32) {
    const float acc = row_dot<Vec4>(w1 + static_cast<size_t>(j) * c, image_x, c, lane);
    if (lane == 0) {
      float v = b1 ? acc + b1[j] : acc;
      if constexpr (Act == GemmActivation::Silu) v = unary_apply<UnaryOp::Silu>(v, 0.0f, 0.0f);
      hidden[j] = clamp_apply(v, lo, hi);
    }
  }
  __syncthreads();
  const unsigned ch = blockIdx.y * kBlock + threadIdx.x;
  if (ch >= c) return;
  float acc = 0.0f;
#pragma unroll 16
  for (unsigned j = 0; j < r; ++j) acc = fmaf(w2t[static_cast<size_t>(j) * c + ch], hidden[j], acc);
  s[static_cast<size_t>(blockIdx.x) * c + ch] = unary_apply<Gate>(b2 ? acc + b2[ch] : acc, 0.0f, 0.0f);
}

}  // namespace

void squeeze_excitation_gate(cudaStream_t stream, const SqueezeExcitationParams& p, const float* x,
                             const float* w1, const float* b1, const float* w2t, const float* b2, float* s) {
  if (p.n <= 0 || p.c <= 0) return;
  if (!squeeze_excitation_fits(p.n, p.c, p.r)) {
    note_error("squeeze_excitation_gate",
               "the sizes are out of the kernel's range (squeeze_excitation_plan.h)");
    return;
  }
  if ((p.act != GemmActivation::None && p.act != GemmActivation::Silu) ||
      (p.gate != UnaryOp::Sigmoid && p.gate != UnaryOp::Hardsigmoid)) {
    note_error("squeeze_excitation_gate",
               "the activation is none or a SiLU, the gate a sigmoid or hardsigmoid");
    return;
  }
  const dim3 grid(static_cast<unsigned>(p.n), static_cast<unsigned>((p.c + kBlock - 1) / kBlock));
  const size_t shared = static_cast<size_t>(p.r) * sizeof(float);
  const auto run = [&](auto kernel) {
    kernel<<<grid, kBlock, shared, stream>>>(static_cast<unsigned>(p.c), static_cast<unsigned>(p.r), p.lo,
                                             p.hi, x, w1, b1, w2t, b2, s);
  };
  // float4 rows need every row and image to start on 16 bytes.
  const bool vec4 =
      p.c % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(w1) % 16 == 0;
  const bool silu = p.act == GemmActivation::Silu, sigmoid = p.gate == UnaryOp::Sigmoid;
  const auto pick = [&](auto vec) {
    constexpr bool V = decltype(vec)::value;
    if (silu && sigmoid)
      run(squeeze_excitation_kernel<GemmActivation::Silu, UnaryOp::Sigmoid, V>);
    else if (silu)
      run(squeeze_excitation_kernel<GemmActivation::Silu, UnaryOp::Hardsigmoid, V>);
    else if (sigmoid)
      run(squeeze_excitation_kernel<GemmActivation::None, UnaryOp::Sigmoid, V>);
    else
      run(squeeze_excitation_kernel<GemmActivation::None, UnaryOp::Hardsigmoid, V>);
  };
  if (vec4)
    pick(std::true_type{});
  else
    pick(std::false_type{});
  check_launch("squeeze_excitation_kernel");
}

}  // namespace aotc::rt::cuda

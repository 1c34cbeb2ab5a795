// max_pool2d_nhwc.cu - max pooling of an NHWC tensor (convert_to_channels_last.cpp): a thread
// per output pixel and vector of channels (4 where the channel count allows, as a float4),
// consecutive threads consecutive channels, so a warp reads each window pixel's channels
// as one run. 32-bit unsigned index arithmetic (a 64-bit division is a software loop on the
// GPU). Padded cells never win and NaN propagates, as in torch and max_pool2d.cu.
#include <aotc/rt/cuda/kernels_cuda.h>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

__device__ inline float max_nan(float m, float v) { return (v > m || v != v) ? v : m; }
__device__ inline float4 max_nan(float4 m, float4 v) {
  return {max_nan(m.x, v.x), max_nan(m.y, v.y), max_nan(m.z, v.z), max_nan(m.w, v.w)};
}
__device__ inline float4 lowest(float4) {
  const float inf = __builtin_inff();
  return {-inf, -inf, -inf, -inf};
}
__device__ inline float lowest(float) { return -__builtin_inff(); }

struct Geometry {
  unsigned vectors, h_in, w_in, h_out, w_out, kernel_h, kernel_w;  // vectors: channels / kVec
  int stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  unsigned total;  // n * h_out * w_out * vectors
};

template <class V>
__global__ void max_pool2d_nhwc_kernel(Geometry g, const V* __restrict__ x, V* __restrict__ y) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= g.total) return;
  const unsigned pixel = i / g.vectors, c = i - pixel * g.vectors;
  const unsigned image_oh = pixel / g.w_out, ow = pixel - image_oh * g.w_out;
  const unsigned image = image_oh / g.h_out, oh = image_oh - image * g.h_out;
  const V* xp = x + static_cast<int64_t>(image) * g.h_in * g.w_in * g.vectors + c;
  V m = lowest(V{});
  for (unsigned kh = 0; kh < g.kernel_h; ++kh) {
    const int ih = static_cast<int>(oh) * g.stride_h - g.pad_h + static_cast<int>(kh) * g.dilation_h;
    if (ih < 0 || ih >= static_cast<int>(g.h_in)) continue;
    for (unsigned kw = 0; kw < g.kernel_w; ++kw) {
      const int iw = static_cast<int>(ow) * g.stride_w - g.pad_w + static_cast<int>(kw) * g.dilation_w;
      if (iw < 0 || iw >= static_cast<int>(g.w_in)) continue;
      m = max_nan(m, xp[(static_cast<unsigned>(ih) * g.w_in + static_cast<unsigned>(iw)) * g.vectors]);
    }
  }
  y[i] = m;
}

}  // namespace

void max_pool2d_nhwc_f32(cudaStream_t stream, const Pool2dParams& p, const float* x, float* y) {
  const int64_t total = p.n * p.c * p.h_out * p.w_out;
  if (total <= 0) return;
  if (total > INT32_MAX || p.h_in * p.w_in * p.c > INT32_MAX) {
    note_error("max_pool2d_nhwc_f32", "the tensor is too large for the kernel's 32-bit index arithmetic");
    return;
  }
  const bool vec4 =
      p.c % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  auto u = [](int64_t v) { return static_cast<unsigned>(v); };
  auto i = [](int64_t v) { return static_cast<int>(v); };
  const int64_t vectors = vec4 ? p.c / 4 : p.c;
  const Geometry g{u(vectors),      u(p.h_in),
                   u(p.w_in),       u(p.h_out),
                   u(p.w_out),      u(p.kernel_h),
                   u(p.kernel_w),   i(p.stride_h),
                   i(p.stride_w),   i(p.pad_h),
                   i(p.pad_w),      i(p.dilation_h),
                   i(p.dilation_w), u(total / p.c * vectors)};
  if (vec4)
    max_pool2d_nhwc_kernel<<<blocks_for(g.total), kThreads, 0, stream>>>(
        g, reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y));
  else
    max_pool2d_nhwc_kernel<<<blocks_for(g.total), kThreads, 0, stream>>>(g, x, y);
  check_launch("max_pool2d_nhwc_kernel");
}

}  // namespace aotc::rt::cuda

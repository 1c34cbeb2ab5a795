// im2col_nhwc.cu - a convolution's receptive fields unfolded from an NHWC input: row
// (image, oh, ow) of the columns holds the window's taps one after another, each tap the
// c_in channels of one input pixel, which are contiguous in NHWC. So a row is a series of
// contiguous copies, as long as the channels, and a warp reads and writes consecutive
// addresses. A block row takes one output row, so the position's divisions are made once
// per block; a thread then divides its element index by the channel count (per vector)
// and the kernel width to find its tap. Where the channel count is a multiple of 4 (every
// layer but an RGB stem) and the pointers allow, a thread moves a float4.
#include <aotc/rt/cuda/kernels_cuda.h>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

struct Geometry {
  int c_in, h_in, w_in, h_out, w_out, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  int row_vectors;  // vectors per row of the columns: kernel_h * kernel_w * c_in / kVec
};

// V is float4 (c_in a multiple of 4) or float.
template <class V>
__global__ void im2col_nhwc_kernel(Geometry g, const float* __restrict__ x, float* __restrict__ col) {
  constexpr int kVec = sizeof(V) / sizeof(float);
  const int j = blockIdx.y * blockDim.x + threadIdx.x;  // the vector within the row
  if (j >= g.row_vectors) return;
  const int64_t row = blockIdx.x;  // (image * h_out + oh) * w_out + ow
  const int ow = static_cast<int>(row % g.w_out);
  const int64_t image_oh = row / g.w_out;
  const int oh = static_cast<int>(image_oh % g.h_out);
  const int64_t image = image_oh / g.h_out;
  const int channel_vectors = g.c_in / kVec;
  const int tap = j / channel_vectors;
  const int c = (j - tap * channel_vectors) * kVec;
  const int kh = tap / g.kernel_w, kw = tap - kh * g.kernel_w;
  const int ih = oh * g.stride_h - g.pad_h + kh * g.dilation_h;
  const int iw = ow * g.stride_w - g.pad_w + kw * g.dilation_w;
  V v;
  if (ih >= 0 && ih < g.h_in && iw >= 0 && iw < g.w_in)
    v = *reinterpret_cast<const V*>(x + ((image * g.h_in + ih) * g.w_in + iw) * g.c_in + c);
  else
    v = V{};
  reinterpret_cast<V*>(col + row * g.row_vectors * kVec)[j] = v;
}

template <class V>
void launch(cudaStream_t stream, const Conv2dParams& p, Geometry g, const float* x, float* col) {
  constexpr int kVec = sizeof(V) / sizeof(float);
  g.row_vectors = static_cast<int>(p.kernel_h * p.kernel_w * p.c_in / kVec);
  // Short rows (a 1x1 strided convolution of 64 channels: 16 vectors) still fill a warp.
  const int threads = g.row_vectors >= 256 ? 256 : (g.row_vectors + 31) / 32 * 32;
  const dim3 grid(static_cast<unsigned>(p.n * p.h_out * p.w_out),
                  static_cast<unsigned>((g.row_vectors + threads - 1) / threads));
  im2col_nhwc_kernel<V><<<grid, threads, 0, stream>>>(g, x, col);
  check_launch("im2col_nhwc_kernel");
}

}  // namespace

void im2col_nhwc_f32(cudaStream_t stream, const Conv2dParams& p, const float* x, float* col) {
  const int64_t rows = p.n * p.h_out * p.w_out;
  const int64_t row_length = p.kernel_h * p.kernel_w * p.c_in;
  if (rows <= 0 || row_length <= 0) return;
  // Rows are grid x (up to 2^31 - 1); a row's vectors, and an image's elements, int.
  if (rows > INT32_MAX || row_length > INT32_MAX || p.h_in * p.w_in * p.c_in > INT32_MAX ||
      (row_length + 255) / 256 > 65535) {
    note_error("im2col_nhwc_f32", "the convolution is too large for the unfolding's index arithmetic");
    return;
  }
  const Geometry g{static_cast<int>(p.c_in),     static_cast<int>(p.h_in),       static_cast<int>(p.w_in),
                   static_cast<int>(p.h_out),    static_cast<int>(p.w_out),      static_cast<int>(p.kernel_w),
                   static_cast<int>(p.stride_h), static_cast<int>(p.stride_w),   static_cast<int>(p.pad_h),
                   static_cast<int>(p.pad_w),    static_cast<int>(p.dilation_h), static_cast<int>(p.dilation_w),
                   0};
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(col) % 16 == 0;
  if (p.c_in % 4 == 0 && aligned)
    launch<float4>(stream, p, g, x, col);
  else
    launch<float>(stream, p, g, x, col);
}

}  // namespace aotc::rt::cuda

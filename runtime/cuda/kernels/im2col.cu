// im2col.cu - unfolds every image's receptive fields into columns so that an ungrouped
// convolution becomes one GEMM per image. A 2-d grid: x runs along the output positions
// (coalesced writes, nearly coalesced reads), y over (image, channel, kernel tap), so
// each thread divides only by the output width; 32-bit index arithmetic (the launcher
// checks that every index fits).
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

struct Im2colShape {
  int c_in, h_in, w_in, h_out, w_out, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h,
      dilation_w;
};

// One block per (unfolded row, output row): the row's channel and kernel tap and the input
// row it reads are the same for the whole block, so the threads only step along the output
// row, with no division; an input row outside the image writes zeros.
__global__ void im2col_kernel(Im2colShape s, int first_row, const float* __restrict__ x,
                              float* __restrict__ col) {
  const int oh = blockIdx.x;
  const int row = first_row + blockIdx.y;  // (image * c_in + c) * kernel_h * kernel_w + kh * kernel_w + kw
  const int taps = s.kernel_h * s.kernel_w;
  const int plane = row / taps;  // image * c_in + c
  const int tap = row - plane * taps;
  const int kh = tap / s.kernel_w, kw = tap - kh * s.kernel_w;
  const int ih = oh * s.stride_h - s.pad_h + kh * s.dilation_h;
  float* out = col + static_cast<int64_t>(row) * s.h_out * s.w_out + oh * s.w_out;
  if (ih < 0 || ih >= s.h_in) {
    for (int ow = threadIdx.x; ow < s.w_out; ow += blockDim.x) out[ow] = 0.0f;
    return;
  }
  const float* in = x + (static_cast<int64_t>(plane) * s.h_in + ih) * s.w_in;
  const int iw0 = kw * s.dilation_w - s.pad_w;
  for (int ow = threadIdx.x; ow < s.w_out; ow += blockDim.x) {
    const int iw = ow * s.stride_w + iw0;
    out[ow] = (iw >= 0 && iw < s.w_in) ? in[iw] : 0.0f;
  }
}

}  // namespace

void im2col_f32(cudaStream_t stream, const Conv2dParams& p, const float* x, float* col) {
  const int64_t rows = p.n * p.c_in * p.kernel_h * p.kernel_w;
  const int64_t spatial = p.h_out * p.w_out;
  if (rows <= 0 || spatial <= 0) return;
  if (rows > (int64_t{1} << 30) || rows * spatial > (int64_t{1} << 40) || spatial > (int64_t{1} << 30) ||
      p.h_in * p.w_in > (int64_t{1} << 30)) {
    note_error("im2col", "the convolution is too large for the im2col kernel");
    return;
  }
  const Im2colShape s{
      static_cast<int>(p.c_in),      static_cast<int>(p.h_in),     static_cast<int>(p.w_in),
      static_cast<int>(p.h_out),     static_cast<int>(p.w_out),    static_cast<int>(p.kernel_h),
      static_cast<int>(p.kernel_w),  static_cast<int>(p.stride_h), static_cast<int>(p.stride_w),
      static_cast<int>(p.pad_h),     static_cast<int>(p.pad_w),    static_cast<int>(p.dilation_h),
      static_cast<int>(p.dilation_w)};
  // Threads along an output row: a multiple of a warp, at most 256. gridDim.y is at most
  // 65535: taller matrices go in slices of rows.
  const unsigned threads = static_cast<unsigned>(p.w_out >= 256 ? 256 : (p.w_out + 31) / 32 * 32);
  for (int64_t first = 0; first < rows; first += 65535) {
    const unsigned slice = static_cast<unsigned>(rows - first < 65535 ? rows - first : 65535);
    im2col_kernel<<<dim3(static_cast<unsigned>(p.h_out), slice), threads, 0, stream>>>(
        s, static_cast<int>(first), x, col);
    check_launch("im2col_kernel");
  }
}

}  // namespace aotc::rt::cuda

// im2col.cu - unfolds every image's receptive fields into columns so that an ungrouped
// convolution becomes one GEMM per image. A 2-d grid: x runs along the output positions
// (coalesced writes, nearly coalesced reads), y over (image, channel, kernel tap), so
// each thread divides only by the output width; 32-bit index arithmetic (the launcher
// checks that every index fits). For --precision fp16 / bf16 the columns are written in the
// 16-bit type, the GEMM operand (half the bytes of float32).
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/lowp.cuh>

namespace aotc::rt::cuda {
namespace {

struct Im2colShape {
  int c_in, h_in, w_in, h_out, w_out, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h,
      dilation_w;
};

template <class T>
__global__ void im2col_kernel(Im2colShape s, int first_row, const float* __restrict__ x,
                              T* __restrict__ col) {
  const int spatial = s.h_out * s.w_out;
  const int pos = blockIdx.x * blockDim.x + threadIdx.x;
  if (pos >= spatial) return;
  const int row = first_row + blockIdx.y;  // (image * c_in + c) * kernel_h * kernel_w + kh * kernel_w + kw
  const int taps = s.kernel_h * s.kernel_w;
  const int plane = row / taps;  // image * c_in + c
  const int tap = row - plane * taps;
  const int kh = tap / s.kernel_w, kw = tap - (tap / s.kernel_w) * s.kernel_w;
  const int oh = pos / s.w_out, ow = pos - (pos / s.w_out) * s.w_out;
  const int ih = oh * s.stride_h - s.pad_h + kh * s.dilation_h;
  const int iw = ow * s.stride_w - s.pad_w + kw * s.dilation_w;
  float v = 0.0f;
  if (ih >= 0 && ih < s.h_in && iw >= 0 && iw < s.w_in)
    v = x[static_cast<int64_t>(plane) * s.h_in * s.w_in + ih * s.w_in + iw];
  col[static_cast<int64_t>(row) * spatial + pos] = round_to<T>(v);
}

template <class T>
void im2col(cudaStream_t stream, const Conv2dParams& p, const float* x, T* col) {
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
  // gridDim.y is at most 65535: taller matrices go in slices of rows.
  for (int64_t first = 0; first < rows; first += 65535) {
    const unsigned slice = static_cast<unsigned>(rows - first < 65535 ? rows - first : 65535);
    im2col_kernel<T>
        <<<dim3(blocks_for(spatial), slice), kThreads, 0, stream>>>(s, static_cast<int>(first), x, col);
    check_launch("im2col_kernel");
  }
}

}  // namespace

void im2col_f32(cudaStream_t stream, const Conv2dParams& p, const float* x, float* col) {
  im2col(stream, p, x, col);
}

void im2col_16bit(cudaStream_t stream, const Conv2dParams& p, Precision precision, const float* x,
                  void* col) {
  if (precision == Precision::Fp16)
    im2col(stream, p, x, static_cast<__half*>(col));
  else
    im2col(stream, p, x, static_cast<__nv_bfloat16*>(col));
}

}  // namespace aotc::rt::cuda

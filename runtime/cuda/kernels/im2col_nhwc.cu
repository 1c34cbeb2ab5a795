// im2col_nhwc.cu - a convolution's receptive fields unfolded from an NHWC input: row
// (image, oh, ow) of the columns holds the window's taps one after another, each tap the
// c_in channels of one input pixel, which are contiguous in NHWC. So a row is a series of
// contiguous copies, as long as the channels, and a warp reads and writes consecutive
// addresses. A thread finds its row's position and its tap with four 32-bit divisions.
// Where the channel count is a multiple of 4 (every layer but an RGB stem) and the
// pointers allow, a thread moves a float4.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/lowp.cuh>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

struct Geometry {
  unsigned c_in, h_in, w_in, h_out, w_out, kernel_w;
  int stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  unsigned rows;            // n * h_out * w_out
  unsigned row_vectors;     // vectors of a row's taps: kernel_h * kernel_w * c_in / kVec
  unsigned stride_vectors;  // vectors from row to row (zeros after the taps)
};

// kVec floats read as one V (float4 where c_in is a multiple of 4, else float).
template <int kVec>
struct Load;
template <>
struct Load<4> {
  using type = float4;
};
template <>
struct Load<1> {
  using type = float;
};

// kVec values of type T (float, __half, __nv_bfloat16) stored as one.
template <class T, int kVec>
struct alignas(sizeof(T) * kVec) Store {
  T v[kVec];
};

// A block is blockDim.y rows of the columns by blockDim.x vectors of a row. 32-bit unsigned
// index arithmetic (a 64-bit division is a software loop on the GPU: it made the first
// version 4x slower on the 3-channel stem). T is the columns' type: float32, or the 16-bit
// type of --precision fp16 / bf16, rounded to nearest even.
template <class T, int kVec>
__global__ void im2col_nhwc_kernel(Geometry g, const float* __restrict__ x, T* __restrict__ col) {
  using V = typename Load<kVec>::type;
  const unsigned j = blockIdx.y * blockDim.x + threadIdx.x;  // the vector within the row
  const unsigned row = blockIdx.x * blockDim.y + threadIdx.y;  // (image * h_out + oh) * w_out + ow
  if (j >= g.stride_vectors || row >= g.rows) return;
  auto* const out = reinterpret_cast<Store<T, kVec>*>(col + static_cast<int64_t>(row) * g.stride_vectors * kVec) + j;
  if (j >= g.row_vectors) {
    *out = Store<T, kVec>{};
    return;
  }
  const unsigned image_oh = row / g.w_out, ow = row - image_oh * g.w_out;
  const unsigned image = image_oh / g.h_out, oh = image_oh - image * g.h_out;
  const unsigned channel_vectors = g.c_in / kVec;
  const unsigned tap = j / channel_vectors, c = (j - tap * channel_vectors) * kVec;
  const unsigned kh = tap / g.kernel_w, kw = tap - kh * g.kernel_w;
  const int ih = static_cast<int>(oh) * g.stride_h - g.pad_h + static_cast<int>(kh) * g.dilation_h;
  const int iw = static_cast<int>(ow) * g.stride_w - g.pad_w + static_cast<int>(kw) * g.dilation_w;
  V v{};
  if (ih >= 0 && ih < static_cast<int>(g.h_in) && iw >= 0 && iw < static_cast<int>(g.w_in))
    v = *reinterpret_cast<const V*>(
        x + ((static_cast<int64_t>(image) * g.h_in + static_cast<unsigned>(ih)) * g.w_in + static_cast<unsigned>(iw)) *
                g.c_in +
        c);
  Store<T, kVec> rounded;
  const float* f = reinterpret_cast<const float*>(&v);
#pragma unroll
  for (int k = 0; k < kVec; ++k) rounded.v[k] = round_to<T>(f[k]);
  *out = rounded;
}

template <class T, int kVec>
void launch(cudaStream_t stream, Geometry g, const float* x, T* col) {
  g.row_vectors /= kVec;
  g.stride_vectors /= kVec;
  // Whole warps along a row; short rows (a 1x1 strided convolution of 64 channels: 16
  // vectors) share a block with the next rows.
  const unsigned threads_x = g.stride_vectors >= 256 ? 256 : (g.stride_vectors + 31) / 32 * 32;
  const unsigned threads_y = 256 / threads_x;
  const dim3 block(threads_x, threads_y);
  const dim3 grid((g.rows + threads_y - 1) / threads_y, (g.stride_vectors + threads_x - 1) / threads_x);
  im2col_nhwc_kernel<T, kVec><<<grid, block, 0, stream>>>(g, x, col);
  check_launch("im2col_nhwc_kernel");
}

template <class T>
void im2col_nhwc(cudaStream_t stream, const Conv2dParams& p, int64_t row_stride, const float* x, T* col) {
  const int64_t rows = p.n * p.h_out * p.w_out;
  const int64_t row_length = p.kernel_h * p.kernel_w * p.c_in;
  if (rows <= 0 || row_length <= 0) return;
  if (row_stride < row_length) {
    note_error("im2col_nhwc_f32", "the rows of the columns are shorter than the receptive field");
    return;
  }
  // 32-bit rows, row lengths and coordinates; a row's vectors in grid y (at most 65535 blocks).
  if (rows > INT32_MAX || row_stride > INT32_MAX || p.n * p.h_in > INT32_MAX || p.h_in > INT32_MAX ||
      p.w_in > INT32_MAX || (row_stride + 255) / 256 > 65535) {
    note_error("im2col_nhwc_f32", "the convolution is too large for the unfolding's index arithmetic");
    return;
  }
  auto u = [](int64_t v) { return static_cast<unsigned>(v); };
  auto i = [](int64_t v) { return static_cast<int>(v); };
  const Geometry g{u(p.c_in),       u(p.h_in),       u(p.w_in),      u(p.h_out),      u(p.w_out),
                   u(p.kernel_w),   i(p.stride_h),   i(p.stride_w),  i(p.pad_h),      i(p.pad_w),
                   i(p.dilation_h), i(p.dilation_w), u(rows),        u(row_length),  u(row_stride)};
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(col) % 16 == 0;
  if (p.c_in % 4 == 0 && row_stride % 4 == 0 && aligned)
    launch<T, 4>(stream, g, x, col);
  else
    launch<T, 1>(stream, g, x, col);
}

}  // namespace

void im2col_nhwc_f32(cudaStream_t stream, const Conv2dParams& p, int64_t row_stride, const float* x, float* col) {
  im2col_nhwc(stream, p, row_stride, x, col);
}

void im2col_nhwc_16bit(cudaStream_t stream, const Conv2dParams& p, Precision precision, int64_t row_stride,
                       const float* x, void* col) {
  if (precision == Precision::Fp16)
    im2col_nhwc(stream, p, row_stride, x, static_cast<__half*>(col));
  else if (precision == Precision::Bf16)
    im2col_nhwc(stream, p, row_stride, x, static_cast<__nv_bfloat16*>(col));
  else
    note_error("im2col_nhwc_16bit", "16-bit columns need --precision fp16 or bf16");
}

}  // namespace aotc::rt::cuda

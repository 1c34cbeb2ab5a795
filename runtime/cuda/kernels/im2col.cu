// im2col.cu - unfolds every image's receptive fields into columns so that an ungrouped
// convolution becomes one GEMM per image. A thread writes kVec consecutive positions of one
// row (image, channel, kernel tap); consecutive threads take consecutive runs, row after row,
// so blocks stay full however short a row is (7x7 outputs: 13 runs). Index
// arithmetic, not memory, bounded the one-element-per-thread kernel (two integer divisions
// per element took several times as long as writing the columns at HBM speed:
// bench/results_gpu.md), so a thread divides once for its run of positions and walks the output row
// from there; where a row of columns is a whole number of vectors it stores them as one
// (float4, or 4 x 16 bits). 32-bit index arithmetic (the launcher checks that every index
// fits). For --precision fp16 / bf16 the columns are written in the 16-bit type, the GEMM
// operand (half the bytes of float32).
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/lowp.cuh>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

constexpr int kVec = 4;  // output positions per thread

struct Im2colShape {
  int c_in, h_in, w_in, h_out, w_out, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h,
      dilation_w;
};

// kVec values of type T as one aligned store.
template <class T>
struct VecOf;
template <>
struct VecOf<float> {
  using type = float4;
};
template <>
struct VecOf<__half> {
  using type = uint2;
};
template <>
struct VecOf<__nv_bfloat16> {
  using type = uint2;
};

// Rows first_row.. of the columns, runs_per_row runs of kVec positions each, runs in all.
template <class T, bool kVectorStore>
__global__ void im2col_kernel(Im2colShape s, int first_row, int runs_per_row, int runs,
                              const float* __restrict__ x, T* __restrict__ col) {
  const int spatial = s.h_out * s.w_out;
  const unsigned thread = blockIdx.x * blockDim.x + threadIdx.x;  // runs + 255 fits, int may not
  if (thread >= static_cast<unsigned>(runs)) return;
  const int run = static_cast<int>(thread);
  const int row_in_slice = run / runs_per_row;
  const int pos0 = (run - row_in_slice * runs_per_row) * kVec;
  const int row = first_row + row_in_slice;  // (image * c_in + c) * kernel_h * kernel_w + kh * kernel_w + kw
  const int taps = s.kernel_h * s.kernel_w;
  const int plane = row / taps;  // image * c_in + c
  const int tap = row - plane * taps;
  const int kh = tap / s.kernel_w, kw = tap - kh * s.kernel_w;
  const float* const xp = x + static_cast<int64_t>(plane) * s.h_in * s.w_in;
  int oh = pos0 / s.w_out, ow = pos0 - oh * s.w_out;
  T v[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    float value = 0.0f;
    const int ih = oh * s.stride_h - s.pad_h + kh * s.dilation_h;
    const int iw = ow * s.stride_w - s.pad_w + kw * s.dilation_w;
    if (pos0 + j < spatial && ih >= 0 && ih < s.h_in && iw >= 0 && iw < s.w_in) value = xp[ih * s.w_in + iw];
    v[j] = round_to<T>(value);
    if (++ow == s.w_out) {
      ow = 0;
      ++oh;
    }
  }
  T* const out = col + static_cast<int64_t>(row) * spatial + pos0;
  if constexpr (kVectorStore) {
    // spatial % kVec == 0: the run is whole and its address a multiple of kVec elements.
    using V = typename VecOf<T>::type;
    static_assert(sizeof(V) == kVec * sizeof(T));
    V packed;
    __builtin_memcpy(&packed, v, sizeof packed);
    *reinterpret_cast<V*>(out) = packed;
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      if (pos0 + j < spatial) out[j] = v[j];
  }
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
  // The vector store needs every row to start on a vector: the scratch is 256-byte aligned.
  const bool vector_store = spatial % kVec == 0 && reinterpret_cast<uintptr_t>(col) % 16 == 0;
  const int64_t runs_per_row = (spatial + kVec - 1) / kVec;
  // Run indices are 32-bit: more rows than that go in slices.
  const int64_t slice_rows = ((int64_t{1} << 31) - 1) / runs_per_row;
  for (int64_t first = 0; first < rows; first += slice_rows) {
    const int64_t runs = (rows - first < slice_rows ? rows - first : slice_rows) * runs_per_row;
    const auto launch = vector_store ? im2col_kernel<T, true> : im2col_kernel<T, false>;
    launch<<<blocks_for(runs), kThreads, 0, stream>>>(
        s, static_cast<int>(first), static_cast<int>(runs_per_row), static_cast<int>(runs), x, col);
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

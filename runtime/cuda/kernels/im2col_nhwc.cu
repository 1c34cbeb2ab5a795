// im2col_nhwc.cu - a convolution's receptive fields unfolded from an NHWC input: row
// (image, oh, ow) of the columns holds the window's taps one after another, each tap the
// c_in channels of one input pixel, which are contiguous in NHWC. So a row is a series of
// contiguous copies, as long as the channels, and a warp reads and writes consecutive
// addresses. A thread finds its row, position and tap with five divisions by invariants.
// Where the channel count is a multiple of the vector (every layer but an RGB stem) and the
// pointers allow, a thread moves 16 bytes of input: 4 floats, or 8 values of an input kept
// in the 16-bit type of --precision fp16 / bf16 (store_activations_16bit.cpp).
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/fast_div.cuh>
#include <aotc/rt/cuda/lowp.cuh>

#include <cstdint>
#include <type_traits>

namespace aotc::rt::cuda {
namespace {

struct Geometry {
  unsigned h_in, w_in;
  // The input's element strides: NHWC (c 1), or NCHW for a model input read in place.
  int64_t stride_image, stride_row, stride_pixel, stride_channel;
  FastDiv w_out, h_out, kernel_w, channel_vectors, stride_vectors;
  int stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  unsigned row_vectors;  // vectors of a row's taps: kernel_h * kernel_w * c_in / kVec
  unsigned row_length;   // kernel_h * kernel_w * c_in
  unsigned c_in;
  unsigned first_row;  // of this launch
  unsigned vectors;    // rows of this launch * stride_vectors
};

// kVec values of type T (float, __half, __nv_bfloat16) loaded or stored as one.
template <class T, int kVec>
struct alignas(sizeof(T) * kVec) Vec {
  T v[kVec];
};

// A thread per vector of the columns, consecutive threads along a row and on to the next.
// 32-bit unsigned index arithmetic by multiplication (fast_div.cuh): the first version,
// with 64-bit divisions (a software loop on the GPU) took several times as long as writing
// its columns (bench/results_gpu.md). T is the columns' type: float32, or the
// 16-bit type of --precision fp16 / bf16, rounded to nearest even; In the input's, float32
// or T itself (then copied as it is).
template <class In, class T, int kVec>
__global__ void im2col_nhwc_kernel(Geometry g, const In* __restrict__ x, T* __restrict__ col) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= g.vectors) return;
  const unsigned row_in_launch = g.stride_vectors.div(t);
  const unsigned j = t - row_in_launch * g.stride_vectors.divisor();  // the vector within the row
  const unsigned row = g.first_row + row_in_launch;                   // (image * h_out + oh) * w_out + ow
  auto* const out =
      reinterpret_cast<Vec<T, kVec>*>(col) + static_cast<int64_t>(row) * g.stride_vectors.divisor() + j;
  if (j >= g.row_vectors) {
    *out = Vec<T, kVec>{};
    return;
  }
  const unsigned image_oh = g.w_out.div(row), ow = row - image_oh * g.w_out.divisor();
  const unsigned image_index = g.h_out.div(image_oh), oh = image_oh - image_index * g.h_out.divisor();
  const int64_t image = image_index;
  const unsigned tap = g.channel_vectors.div(j), c = (j - tap * g.channel_vectors.divisor()) * kVec;
  const unsigned kh = g.kernel_w.div(tap), kw = tap - kh * g.kernel_w.divisor();
  const int ih = static_cast<int>(oh) * g.stride_h - g.pad_h + static_cast<int>(kh) * g.dilation_h;
  const int iw = static_cast<int>(ow) * g.stride_w - g.pad_w + static_cast<int>(kw) * g.dilation_w;
  Vec<In, kVec> v{};
  if (ih >= 0 && ih < static_cast<int>(g.h_in) && iw >= 0 && iw < static_cast<int>(g.w_in)) {
    const In* const at = x + image * g.stride_image + ih * g.stride_row + iw * g.stride_pixel;
    if constexpr (kVec > 1)
      v = *reinterpret_cast<const Vec<In, kVec>*>(at + c);  // stride_channel 1
    else
      v.v[0] = at[c * g.stride_channel];
  }
  if constexpr (std::is_same_v<In, T>) {
    *out = v;
  } else {
    Vec<T, kVec> rounded;
#pragma unroll
    for (int k = 0; k < kVec; ++k) rounded.v[k] = round_to<T>(widen(v.v[k]));
    *out = rounded;
  }
}

// The same where the channels are not whole vectors (an RGB image, read in NCHW or NHWC):
// a thread still writes kVec consecutive values of a row, loading them one by one and
// stepping through the channels and taps from one set of divisions. One value a thread,
// with five divisions and a 2-byte store each, took resnet50's stem unfolding at batch 32
// most of a millisecond (bench/results_gpu.md).
template <class In, class T, int kVec>
__global__ void im2col_gather_kernel(Geometry g, const In* __restrict__ x, T* __restrict__ col) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= g.vectors) return;
  const unsigned row_in_launch = g.stride_vectors.div(t);
  const unsigned j = t - row_in_launch * g.stride_vectors.divisor();
  const unsigned row = g.first_row + row_in_launch;
  auto* const out =
      reinterpret_cast<Vec<T, kVec>*>(col) + static_cast<int64_t>(row) * g.stride_vectors.divisor() + j;
  const unsigned first = j * kVec;
  if (first >= g.row_length) {
    *out = Vec<T, kVec>{};
    return;
  }
  const unsigned image_oh = g.w_out.div(row), ow = row - image_oh * g.w_out.divisor();
  const unsigned image_index = g.h_out.div(image_oh), oh = image_oh - image_index * g.h_out.divisor();
  const In* const image = x + static_cast<int64_t>(image_index) * g.stride_image;
  unsigned tap = g.channel_vectors.div(first), c = first - tap * g.channel_vectors.divisor();
  unsigned kh = g.kernel_w.div(tap), kw = tap - kh * g.kernel_w.divisor();
  Vec<T, kVec> r;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const int ih = static_cast<int>(oh) * g.stride_h - g.pad_h + static_cast<int>(kh) * g.dilation_h;
    const int iw = static_cast<int>(ow) * g.stride_w - g.pad_w + static_cast<int>(kw) * g.dilation_w;
    In v{};
    if (first + k < g.row_length && ih >= 0 && ih < static_cast<int>(g.h_in) && iw >= 0 &&
        iw < static_cast<int>(g.w_in))
      v = image[ih * g.stride_row + iw * g.stride_pixel + c * g.stride_channel];
    if constexpr (std::is_same_v<In, T>)
      r.v[k] = v;
    else
      r.v[k] = round_to<T>(widen(v));
    if (++c == g.c_in) {
      c = 0;
      if (++kw == g.kernel_w.divisor()) {
        kw = 0;
        ++kh;
      }
    }
  }
  *out = r;
}

// Launches of up to 2^31 vectors, whole rows each. kGather: im2col_gather_kernel.
template <class In, class T, int kVec, bool kGather = false>
void launch(cudaStream_t stream, const Conv2dParams& p, bool nchw, int64_t row_stride, const In* x, T* col) {
  const int64_t rows = p.n * p.h_out * p.w_out, stride_vectors = row_stride / kVec;
  Geometry g;
  g.stride_image = p.c_in * p.h_in * p.w_in;
  g.stride_row = nchw ? p.w_in : p.w_in * p.c_in;
  g.stride_pixel = nchw ? 1 : p.c_in;
  g.stride_channel = nchw ? p.h_in * p.w_in : 1;
  g.h_in = static_cast<unsigned>(p.h_in);
  g.w_in = static_cast<unsigned>(p.w_in);
  g.w_out = FastDiv(static_cast<uint32_t>(p.w_out));
  g.h_out = FastDiv(static_cast<uint32_t>(p.h_out));
  g.kernel_w = FastDiv(static_cast<uint32_t>(p.kernel_w));
  g.channel_vectors = FastDiv(static_cast<uint32_t>(kGather ? p.c_in : p.c_in / kVec));
  g.stride_vectors = FastDiv(static_cast<uint32_t>(stride_vectors));
  g.stride_h = static_cast<int>(p.stride_h);
  g.stride_w = static_cast<int>(p.stride_w);
  g.pad_h = static_cast<int>(p.pad_h);
  g.pad_w = static_cast<int>(p.pad_w);
  g.dilation_h = static_cast<int>(p.dilation_h);
  g.dilation_w = static_cast<int>(p.dilation_w);
  g.row_vectors = static_cast<unsigned>(p.kernel_h * p.kernel_w * p.c_in / kVec);
  g.row_length = static_cast<unsigned>(p.kernel_h * p.kernel_w * p.c_in);
  g.c_in = static_cast<unsigned>(p.c_in);
  const int64_t rows_per_launch = (int64_t{1} << 31) / stride_vectors;
  for (int64_t first = 0; first < rows; first += rows_per_launch) {
    const int64_t count = rows - first < rows_per_launch ? rows - first : rows_per_launch;
    g.first_row = static_cast<unsigned>(first);
    g.vectors = static_cast<unsigned>(count * stride_vectors);
    if constexpr (kGather) {
      im2col_gather_kernel<In, T, kVec><<<blocks_for(g.vectors), kThreads, 0, stream>>>(g, x, col);
      check_launch("im2col_gather_kernel");
    } else {
      im2col_nhwc_kernel<In, T, kVec><<<blocks_for(g.vectors), kThreads, 0, stream>>>(g, x, col);
      check_launch("im2col_nhwc_kernel");
    }
  }
}

bool aligned_to(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

template <class In, class T>
void im2col_nhwc(cudaStream_t stream, const Conv2dParams& p, bool nchw, int64_t row_stride, const In* x,
                 T* col) {
  const int64_t rows = p.n * p.h_out * p.w_out;
  const int64_t row_length = p.kernel_h * p.kernel_w * p.c_in;
  if (rows <= 0 || row_length <= 0) return;
  if (row_stride < row_length) {
    note_error("im2col_nhwc", "the rows of the columns are shorter than the receptive field");
    return;
  }
  // 32-bit rows, row lengths and coordinates.
  if (rows > INT32_MAX || row_stride > INT32_MAX || p.n * p.h_in > INT32_MAX || p.w_in > INT32_MAX) {
    note_error("im2col_nhwc", "the convolution is too large for the unfolding's index arithmetic");
    return;
  }
  // 16 bytes of input a thread where the channels, the rows and the pointers allow.
  constexpr int kWide = static_cast<int>(16 / sizeof(In)), kWideOut = static_cast<int>(16 / sizeof(T));
  const auto vectors_of = [&](int vec) {
    return !nchw && p.c_in % vec == 0 && row_stride % vec == 0 && aligned_to(x, vec * sizeof(In)) &&
           aligned_to(col, vec * sizeof(T));
  };
  if (vectors_of(kWide))
    launch<In, T, kWide>(stream, p, false, row_stride, x, col);
  else if (kWide > 4 && vectors_of(4))
    launch<In, T, 4>(stream, p, false, row_stride, x, col);
  // Channels not in vectors: 16 bytes of the columns a thread where the rows allow.
  else if (kWideOut > 4 && row_stride % kWideOut == 0 && aligned_to(col, 16))
    launch<In, T, kWideOut, true>(stream, p, nchw, row_stride, x, col);
  else if (row_stride % 4 == 0 && aligned_to(col, 4 * sizeof(T)))
    launch<In, T, 4, true>(stream, p, nchw, row_stride, x, col);
  else
    launch<In, T, 1>(stream, p, nchw, row_stride, x, col);
}

}  // namespace

void im2col_nhwc_f32(cudaStream_t stream, const Conv2dParams& p, bool nchw, int64_t row_stride,
                     const float* x, float* col) {
  im2col_nhwc(stream, p, nchw, row_stride, x, col);
}

void im2col_nhwc_16bit(cudaStream_t stream, const Conv2dParams& p, Precision precision, bool nchw,
                       int64_t row_stride, const float* x, void* col) {
  if (precision == Precision::Fp16)
    im2col_nhwc(stream, p, nchw, row_stride, x, static_cast<__half*>(col));
  else if (precision == Precision::Bf16)
    im2col_nhwc(stream, p, nchw, row_stride, x, static_cast<__nv_bfloat16*>(col));
  else
    note_error("im2col_nhwc_16bit", "16-bit columns need --precision fp16 or bf16");
}

void im2col_nhwc_16bit_input(cudaStream_t stream, const Conv2dParams& p, Precision precision,
                             int64_t row_stride, const void* x, void* col) {
  if (precision == Precision::Fp16)
    im2col_nhwc(stream, p, false, row_stride, static_cast<const __half*>(x), static_cast<__half*>(col));
  else if (precision == Precision::Bf16)
    im2col_nhwc(stream, p, false, row_stride, static_cast<const __nv_bfloat16*>(x),
                static_cast<__nv_bfloat16*>(col));
  else
    note_error("im2col_nhwc_16bit_input", "16-bit columns need --precision fp16 or bf16");
}

}  // namespace aotc::rt::cuda

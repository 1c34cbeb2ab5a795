// cumsum.cu - inclusive prefix sum along the middle axis of outer x axis x inner, in float32
// or int64 (wrapping), as the CPU kernel.
//
// One thread per line (an (outer, inner) pair), walking the axis in the CPU's order, so
// that float32 sums are the CPU's bit for bit; consecutive threads read consecutive inner
// positions. A long axis with few lines (kBlockScanAxis, kBlockScanLines) would leave the
// GPU nearly idle that way: there one block per line scans chunks of 256 x 8 values (each
// thread sums its 8, a scan over the block's threads, then the chunks' carry), which adds
// float32 values in another order (rounding differs from the CPU's; int64 is exact).
#include <aotc/rt/cuda/kernels_cuda.h>

#include <type_traits>

namespace aotc::rt::cuda {
namespace {

constexpr int64_t kBlockScanAxis = 2048;   // a block scan for axes longer than this
constexpr int64_t kBlockScanLines = 4096;  // with fewer lines than this
constexpr int kItems = 8;                  // values per thread and chunk in the block scan

template <class T>
__device__ __forceinline__ T add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b));
  } else {
    return __fadd_rn(a, b);  // never contracted, as the CPU's y[a - 1] + x[a]
  }
}

template <class T>
__global__ void cumsum_line_kernel(int64_t lines, int64_t axis, int64_t inner, const T* __restrict__ x,
                                   T* __restrict__ y) {
  const int64_t l = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (l >= lines) return;
  const int64_t base = (l / inner) * axis * inner + l % inner;
  T acc = x[base];
  y[base] = acc;
  for (int64_t a = 1; a < axis; ++a) {
    acc = add(acc, x[base + a * inner]);
    y[base + a * inner] = acc;
  }
}

template <class T>
__global__ void __launch_bounds__(256)
    cumsum_block_kernel(int64_t axis, int64_t inner, const T* __restrict__ x, T* __restrict__ y) {
  __shared__ T sums[256];
  const int64_t line = blockIdx.x;
  const int t = static_cast<int>(threadIdx.x);
  const T* xl = x + (line / inner) * axis * inner + line % inner;
  T* yl = y + (line / inner) * axis * inner + line % inner;
  T carry{};
  for (int64_t start = 0; start < axis; start += 256 * kItems) {
    const int64_t first = start + static_cast<int64_t>(t) * kItems;
    T v[kItems];
    T sum{};
    for (int q = 0; q < kItems; ++q) {
      const int64_t a = first + q;
      sum = add(sum, a < axis ? xl[a * inner] : T{});
      v[q] = sum;
    }
    sums[t] = sum;
    for (int offset = 1; offset < 256; offset *= 2) {  // inclusive scan of the threads' sums
      __syncthreads();
      const T other = t >= offset ? sums[t - offset] : T{};
      __syncthreads();
      sums[t] = add(sums[t], other);
    }
    __syncthreads();
    const T prefix = add(carry, t > 0 ? sums[t - 1] : T{});
    for (int q = 0; q < kItems; ++q)
      if (first + q < axis) yl[(first + q) * inner] = add(prefix, v[q]);
    carry = add(carry, sums[255]);
    __syncthreads();  // sums is rewritten by the next chunk
  }
}

template <class T>
void launch(cudaStream_t stream, int64_t outer, int64_t axis, int64_t inner, const void* x, void* y) {
  const int64_t lines = outer * inner;
  const auto* xs = static_cast<const T*>(x);
  auto* ys = static_cast<T*>(y);
  if (axis > kBlockScanAxis && lines < kBlockScanLines) {
    cumsum_block_kernel<T><<<static_cast<unsigned>(lines), 256, 0, stream>>>(axis, inner, xs, ys);
    check_launch("cumsum_block_kernel");
  } else {
    cumsum_line_kernel<T><<<blocks_for(lines), kThreads, 0, stream>>>(lines, axis, inner, xs, ys);
    check_launch("cumsum_line_kernel");
  }
}

}  // namespace

void cumsum(cudaStream_t stream, ElemType t, int64_t outer, int64_t axis, int64_t inner, const void* x,
            void* y) {
  if (outer <= 0 || axis <= 0 || inner <= 0) return;
  if (t == ElemType::F32)
    launch<float>(stream, outer, axis, inner, x, y);
  else if (t == ElemType::I64)
    launch<int64_t>(stream, outer, axis, inner, x, y);
  else
    note_error("cumsum", "the element type is not float32 or int64");
}

}  // namespace aotc::rt::cuda

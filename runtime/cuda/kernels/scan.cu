// scan.cu - the CPU's scans besides cumsum (cumprod, logcumsumexp, cummax, cummin; ScanOp)
// with its arithmetic (kernels/scan_step.h): a thread per line (an (outer, inner) pair)
// walking the axis in order, consecutive threads on consecutive inner positions. Products
// and log-sums of float32 accumulate in double, as torch's CPU kernels, so that both
// targets round alike. Rare ops: no block scan for long axes with few lines (cumsum.cu).
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/kernels/scan_step.h>

#include <type_traits>

namespace aotc::rt::cuda {
namespace {

template <class T, class Acc, ScanOp Op>
__global__ void scan_line_kernel(int64_t lines, int64_t axis, int64_t inner, const T* __restrict__ x,
                                 T* __restrict__ y) {
  const int64_t l = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (l >= lines) return;
  const int64_t base = (l / inner) * axis * inner + l % inner;
  Acc acc = static_cast<Acc>(x[base]);
  y[base] = static_cast<T>(acc);
  for (int64_t a = 1; a < axis; ++a) {
    const Acc v = static_cast<Acc>(x[base + a * inner]);
    if constexpr (Op == ScanOp::LogAddExp)
      acc = scan_step::log_add_exp(v, acc);
    else if constexpr (std::is_integral_v<Acc>)
      acc = scan_step::wrapping_mul(acc, v);
    else
      acc = __dmul_rn(acc, v);  // never contracted, as the CPU's acc * v
    y[base + a * inner] = static_cast<T>(acc);
  }
}

template <class T>
__global__ void extremum_line_kernel(bool is_max, int64_t lines, int64_t axis, int64_t inner,
                                     const T* __restrict__ x, T* __restrict__ y,
                                     int64_t* __restrict__ indices) {
  const int64_t l = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (l >= lines) return;
  const int64_t base = (l / inner) * axis * inner + l % inner;
  T kept = x[base];
  int64_t at = 0;
  for (int64_t a = 0; a < axis; ++a) {
    const T v = x[base + a * inner];
    if (scan_step::replaces(is_max, v, kept)) {
      kept = v;
      at = a;
    }
    y[base + a * inner] = kept;
    indices[base + a * inner] = at;
  }
}

}  // namespace

void scan(cudaStream_t stream, ScanOp op, ElemType t, int64_t outer, int64_t axis, int64_t inner,
          const void* x, void* y, int64_t* indices) {
  if (outer <= 0 || axis <= 0 || inner <= 0) return;
  const int64_t lines = outer * inner;
  if (op == ScanOp::Max || op == ScanOp::Min) {
    const bool is_max = op == ScanOp::Max;
    if (t == ElemType::F32)
      extremum_line_kernel<float><<<blocks_for(lines), kThreads, 0, stream>>>(
          is_max, lines, axis, inner, static_cast<const float*>(x), static_cast<float*>(y), indices);
    else if (t == ElemType::I64)
      extremum_line_kernel<int64_t><<<blocks_for(lines), kThreads, 0, stream>>>(
          is_max, lines, axis, inner, static_cast<const int64_t*>(x), static_cast<int64_t*>(y), indices);
    else
      return note_error("scan", "cummax / cummin take float32 or int64");
    check_launch("extremum_line_kernel");
    return;
  }
  if (op == ScanOp::Prod && t == ElemType::I64)
    scan_line_kernel<int64_t, int64_t, ScanOp::Prod><<<blocks_for(lines), kThreads, 0, stream>>>(
        lines, axis, inner, static_cast<const int64_t*>(x), static_cast<int64_t*>(y));
  else if (op == ScanOp::Prod && t == ElemType::F32)
    scan_line_kernel<float, double, ScanOp::Prod><<<blocks_for(lines), kThreads, 0, stream>>>(
        lines, axis, inner, static_cast<const float*>(x), static_cast<float*>(y));
  else if (op == ScanOp::LogAddExp && t == ElemType::F32)
    scan_line_kernel<float, double, ScanOp::LogAddExp><<<blocks_for(lines), kThreads, 0, stream>>>(
        lines, axis, inner, static_cast<const float*>(x), static_cast<float*>(y));
  else
    return note_error("scan", "cumprod takes float32 or int64, logcumsumexp float32");
  check_launch("scan_line_kernel");
}

}  // namespace aotc::rt::cuda

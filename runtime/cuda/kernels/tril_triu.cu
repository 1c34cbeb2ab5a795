// tril_triu.cu - the lower (tril) or upper (triu) triangle of a batch of matrices, the rest
// zero bytes (TriangleParams, as the CPU kernel takes it): one thread per element, of 1, 2,
// 4 or 8 bytes (it moves bytes: any dtype). tril keeps col - row <= diagonal, triu keeps
// col - row >= diagonal; col - row cannot overflow, so any diagonal is exact.
#include <aotc/rt/cuda/kernels_cuda.h>

#include <climits>

namespace aotc::rt::cuda {
namespace {

// Coord is uint32_t where the elements fit in 31 bits: 64-bit divisions cost several times more.
template <class T, class Coord>
__global__ void tril_triu_kernel(TriangleParams p, int64_t total, const T* __restrict__ x,
                                 T* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const Coord br = static_cast<Coord>(i) / static_cast<Coord>(p.cols);
  const int64_t col = static_cast<int64_t>(static_cast<Coord>(i) - br * static_cast<Coord>(p.cols));
  const int64_t row = static_cast<int64_t>(br % static_cast<Coord>(p.rows));
  const bool keep = p.upper ? col - row >= p.diagonal : col - row <= p.diagonal;
  y[i] = keep ? x[i] : T{};
}

template <class T>
void launch(cudaStream_t stream, const TriangleParams& p, int64_t total, const void* x, void* y) {
  const auto* xs = static_cast<const T*>(x);
  auto* ys = static_cast<T*>(y);
  if (total <= INT_MAX)
    tril_triu_kernel<T, uint32_t><<<blocks_for(total), kThreads, 0, stream>>>(p, total, xs, ys);
  else
    tril_triu_kernel<T, int64_t><<<blocks_for(total), kThreads, 0, stream>>>(p, total, xs, ys);
}

}  // namespace

void tril_triu(cudaStream_t stream, const TriangleParams& p, const void* x, void* y) {
  if (p.batch <= 0 || p.rows <= 0 || p.cols <= 0 || p.elem_size <= 0) return;
  const int64_t total = p.batch * p.rows * p.cols;
  switch (p.elem_size) {
    case 1:
      launch<uint8_t>(stream, p, total, x, y);
      break;
    case 2:
      launch<uint16_t>(stream, p, total, x, y);
      break;
    case 4:
      launch<uint32_t>(stream, p, total, x, y);
      break;
    case 8:
      launch<uint64_t>(stream, p, total, x, y);
      break;
    default:
      note_error("tril_triu", "element size is not 1, 2, 4 or 8 bytes");
      return;
  }
  check_launch("tril_triu_kernel");
}

}  // namespace aotc::rt::cuda

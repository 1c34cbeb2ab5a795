// where.cu - y = cond ? a : b with broadcasting (WhereParams, as the CPU kernel takes it),
// one thread per output element, for elements of 1, 2, 4 or 8 bytes (it moves bytes: any
// dtype). masked_fill and the merged masks of nn.MultiheadAttention come here.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

template <class T>
__global__ void where_kernel(int64_t total, WhereParams p, const bool* __restrict__ cond,
                             const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  int64_t rest = i, c = 0, ia = 0, ib = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t k = rest % p.out_dims[d];
    rest /= p.out_dims[d];
    c += k * p.cond_strides[d];
    ia += k * p.a_strides[d];
    ib += k * p.b_strides[d];
  }
  y[i] = cond[c] ? a[ia] : b[ib];
}

template <class T>
void launch(cudaStream_t stream, int64_t total, const WhereParams& p, const bool* cond, const void* a,
            const void* b, void* y) {
  where_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(total, p, cond, static_cast<const T*>(a),
                                                              static_cast<const T*>(b), static_cast<T*>(y));
}

}  // namespace

void where_select(cudaStream_t stream, const WhereParams& p, int64_t elem_size, const bool* cond,
                  const void* a, const void* b, void* y) {
  int64_t total = 1;
  for (int d = 0; d < p.rank; ++d) total *= p.out_dims[d];
  if (total <= 0) return;
  switch (elem_size) {
    case 1:
      launch<uint8_t>(stream, total, p, cond, a, b, y);
      break;
    case 2:
      launch<uint16_t>(stream, total, p, cond, a, b, y);
      break;
    case 4:
      launch<uint32_t>(stream, total, p, cond, a, b, y);
      break;
    case 8:
      launch<uint64_t>(stream, total, p, cond, a, b, y);
      break;
    default:
      note_error("where_select", "element size is not 1, 2, 4 or 8 bytes");
      return;
  }
  check_launch("where_kernel");
}

}  // namespace aotc::rt::cuda

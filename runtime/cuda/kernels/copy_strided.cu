// copy_strided.cu - copies a rank-dim index space between two strided views (permute,
// transpose, expand, slicing, cat), one thread per element, for elements of 1, 2, 4 or
// 8 bytes.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

template <class T>
__global__ void copy_strided_kernel(int64_t total, CopyParams p, const T* __restrict__ src,
                                    T* __restrict__ dst) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  int64_t rest = i, s = 0, d = 0;
  for (int dim = p.rank - 1; dim >= 0; --dim) {
    const int64_t c = rest % p.dims[dim];
    rest /= p.dims[dim];
    s += c * p.src_strides[dim];
    d += c * p.dst_strides[dim];
  }
  dst[d] = src[s];
}

template <class T>
void launch(cudaStream_t stream, int64_t total, const CopyParams& p, const void* src, void* dst) {
  copy_strided_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(total, p, static_cast<const T*>(src),
                                                                     static_cast<T*>(dst));
}

}  // namespace

void copy_strided(cudaStream_t stream, const CopyParams& p, const void* src, void* dst) {
  int64_t total = 1;
  for (int d = 0; d < p.rank; ++d) total *= p.dims[d];
  if (total <= 0) return;
  switch (p.elem_size) {
    case 1:
      launch<uint8_t>(stream, total, p, src, dst);
      break;
    case 2:
      launch<uint16_t>(stream, total, p, src, dst);
      break;
    case 4:
      launch<uint32_t>(stream, total, p, src, dst);
      break;
    case 8:
      launch<uint64_t>(stream, total, p, src, dst);
      break;
    default:
      note_error("copy_strided", "element size is not 1, 2, 4 or 8 bytes");
      return;
  }
  check_launch("copy_strided_kernel");
}

}  // namespace aotc::rt::cuda

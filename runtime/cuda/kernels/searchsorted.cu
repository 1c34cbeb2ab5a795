// searchsorted.cu - the CPU's searchsorted (torch.searchsorted, torch.bucketize): a thread
// per value, the same binary search (kernels/binary_search.h).
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/kernels/binary_search.h>

namespace aotc::rt::cuda {
namespace {

template <class T>
__global__ void searchsorted_kernel(bool right, int64_t total, int64_t length, int64_t count, bool shared,
                                    const T* __restrict__ sorted, const T* __restrict__ values,
                                    int64_t* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const T* row = shared ? sorted : sorted + i / count * length;
  y[i] = binary_search::position(row, length, values[i], right);
}

}  // namespace

void searchsorted(cudaStream_t stream, ElemType t, bool right, int64_t lines, int64_t length, int64_t count,
                  bool shared, const void* sorted, const void* values, int64_t* y) {
  if (lines <= 0 || count <= 0) return;
  const int64_t total = lines * count;
  if (t == ElemType::F32)
    searchsorted_kernel<float><<<blocks_for(total), kThreads, 0, stream>>>(
        right, total, length, count, shared, static_cast<const float*>(sorted),
        static_cast<const float*>(values), y);
  else if (t == ElemType::I64)
    searchsorted_kernel<int64_t><<<blocks_for(total), kThreads, 0, stream>>>(
        right, total, length, count, shared, static_cast<const int64_t*>(sorted),
        static_cast<const int64_t*>(values), y);
  else
    return note_error("searchsorted", "the boundaries and values are not float32 or int64");
  check_launch("searchsorted_kernel");
}

}  // namespace aotc::rt::cuda

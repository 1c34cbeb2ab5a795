// fill.cu - sets count elements of elem_size (1, 2, 4 or 8) bytes to one value
// (FillParams): the first step of IR "assemble" (pad's constant, the *_like factories).
#include <aotc/rt/cuda/kernels_cuda.h>

#include <cstring>

namespace aotc::rt::cuda {
namespace {

template <class T>
__global__ void fill_kernel(int64_t count, T value, T* __restrict__ dst) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) dst[i] = value;
}

template <class T>
void launch(cudaStream_t stream, const FillParams& p, void* dst) {
  T value;
  std::memcpy(&value, p.value, sizeof(T));
  fill_kernel<T><<<blocks_for(p.count), kThreads, 0, stream>>>(p.count, value, static_cast<T*>(dst));
}

}  // namespace

void fill(cudaStream_t stream, const FillParams& p, void* dst) {
  if (p.count <= 0) return;
  switch (p.elem_size) {
    case 1:
      launch<uint8_t>(stream, p, dst);
      break;
    case 2:
      launch<uint16_t>(stream, p, dst);
      break;
    case 4:
      launch<uint32_t>(stream, p, dst);
      break;
    case 8:
      launch<uint64_t>(stream, p, dst);
      break;
    default:
      note_error("fill", "element size is not 1, 2, 4 or 8 bytes");
      return;
  }
  check_launch("fill_kernel");
}

}  // namespace aotc::rt::cuda

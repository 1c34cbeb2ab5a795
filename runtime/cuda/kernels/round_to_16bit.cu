// round_to_16bit.cu - a float32 tensor rounded to the 16-bit type of --precision fp16 /
// bf16, as the operand of a 16-bit GEMM (the input of a 1x1 convolution, whose weights
// are 16-bit since compile time). One element per thread: coalesced, and any alignment.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/lowp.cuh>

namespace aotc::rt::cuda {
namespace {

template <class T>
__global__ void round_kernel(int64_t count, const float* __restrict__ x, T* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) y[i] = round_to<T>(x[i]);
}

}  // namespace

void round_to_16bit(cudaStream_t stream, Precision precision, int64_t count, const float* x, void* y) {
  if (count <= 0) return;
  if (count > (int64_t{1} << 38)) {  // blocks_for stays within 32 bits
    note_error("round_to_16bit", "the tensor is too large");
    return;
  }
  const unsigned blocks = blocks_for(count);
  if (precision == Precision::Fp16)
    round_kernel<<<blocks, kThreads, 0, stream>>>(count, x, static_cast<__half*>(y));
  else
    round_kernel<<<blocks, kThreads, 0, stream>>>(count, x, static_cast<__nv_bfloat16*>(y));
  check_launch("round_to_16bit");
}

}  // namespace aotc::rt::cuda

// round_to_16bit.cu - a float32 tensor rounded to the 16-bit type of --precision fp16 /
// bf16, as the operand of a 16-bit GEMM (a linear layer's activation, the input of a 1x1
// convolution, whose weights are 16-bit since compile time).
//
// Where both tensors are 16-byte aligned, a thread rounds 8 consecutive elements: two
// 16-byte loads and one 16-byte store. One element per thread (4-byte loads, 2-byte stores,
// a 64-bit index) ran well below memory bandwidth, and these passes were the largest cost
// of swin_t at batch 32 in fp16 (bench/results_gpu.md). The elements past the last multiple
// of 8, and tensors that are not aligned, take the element-per-thread kernel.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/lowp.cuh>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

constexpr int kPerThread = 8;

template <class T>
struct alignas(16) Rounded8 {
  T v[kPerThread];
};
static_assert(sizeof(Rounded8<__half>) == 16 && sizeof(Rounded8<__nv_bfloat16>) == 16);

template <class T>
__global__ void round_kernel(int64_t count, const float* __restrict__ x, T* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) y[i] = round_to<T>(x[i]);
}

// groups: count / 8; x and y 16-byte aligned.
template <class T>
__global__ void round8_kernel(int64_t groups, const float4* __restrict__ x, Rounded8<T>* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= groups) return;
  const float4 a = x[2 * i], b = x[2 * i + 1];
  Rounded8<T> r;
  r.v[0] = round_to<T>(a.x);
  r.v[1] = round_to<T>(a.y);
  r.v[2] = round_to<T>(a.z);
  r.v[3] = round_to<T>(a.w);
  r.v[4] = round_to<T>(b.x);
  r.v[5] = round_to<T>(b.y);
  r.v[6] = round_to<T>(b.z);
  r.v[7] = round_to<T>(b.w);
  y[i] = r;
}

template <class T>
void round_as(cudaStream_t stream, int64_t count, const float* x, T* y) {
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  const int64_t groups = aligned ? count / kPerThread : 0, done = groups * kPerThread;
  if (groups > 0) {
    round8_kernel<T><<<blocks_for(groups), kThreads, 0, stream>>>(groups, reinterpret_cast<const float4*>(x),
                                                                  reinterpret_cast<Rounded8<T>*>(y));
    check_launch("round_to_16bit");
  }
  if (done < count) {
    round_kernel<T><<<blocks_for(count - done), kThreads, 0, stream>>>(count - done, x + done, y + done);
    check_launch("round_to_16bit");
  }
}

}  // namespace

void round_to_16bit(cudaStream_t stream, Precision precision, int64_t count, const float* x, void* y) {
  if (count <= 0) return;
  if (count > (int64_t{1} << 38)) {  // blocks_for stays within 32 bits
    note_error("round_to_16bit", "the tensor is too large");
    return;
  }
  if (precision == Precision::Fp16)
    round_as(stream, count, x, static_cast<__half*>(y));
  else
    round_as(stream, count, x, static_cast<__nv_bfloat16*>(y));
}

}  // namespace aotc::rt::cuda

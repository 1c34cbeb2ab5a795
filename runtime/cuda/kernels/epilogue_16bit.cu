// epilogue_16bit.cu - the epilogue of a GEMM that writes its result in the 16-bit type of
// --precision fp16 / bf16 (gemm_16bit_output), for the parts cuBLASLt could not take: adds
// the bias, applies the activation (a linear layer's GELU, which cuBLASLt has in its tanh
// form only), adds the residual, then clamps, on the product already written in place.
// The bias and the residual are of that type too; float32 arithmetic, rounded once.
//
// A transformer MLP's up-projection runs it on every call (the GELU), so where the rows
// are whole groups of 8 and every array is 16-byte aligned a thread takes 8 consecutive
// elements with 16-byte loads and stores; otherwise a thread per element.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/lowp.cuh>
#include <aotc/rt/cuda/pointwise.cuh>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

constexpr int kGroup = 8;

template <class T>
struct alignas(16) Group {
  T v[kGroup];
};

struct Epilogue {
  int64_t m, n, ldc, ldr;
  GemmActivation activation;
  float lo, hi;
};

__device__ __forceinline__ float finish(const Epilogue& e, float v, float bias, float residual) {
  return clamp_apply(activation_apply(e.activation, v + bias) + residual, e.lo, e.hi);
}

template <class T>
__global__ void epilogue_16bit_kernel(Epilogue e, const T* __restrict__ bias, const T* __restrict__ residual,
                                      T* __restrict__ c) {
  const int64_t count = e.m * e.n, step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    const int64_t row = i / e.n, col = i - row * e.n;
    T* const at = c + row * e.ldc + col;
    *at = round_to<T>(finish(e, widen(*at), bias ? widen(bias[col]) : 0.0f,
                             residual ? widen(residual[row * e.ldr + col]) : 0.0f));
  }
}

// e.n, e.ldc and e.ldr multiples of 8, every array 16-byte aligned.
template <class T>
__global__ void epilogue_16bit_group_kernel(Epilogue e, const Group<T>* __restrict__ bias,
                                            const T* __restrict__ residual, T* __restrict__ c) {
  const int64_t groups_per_row = e.n / kGroup, count = e.m * groups_per_row;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    const int64_t row = i / groups_per_row, col = (i - row * groups_per_row) * kGroup;
    auto* const at = reinterpret_cast<Group<T>*>(c + row * e.ldc + col);
    Group<T> v = *at;
    const Group<T> b = bias ? bias[col / kGroup] : Group<T>{};
    const Group<T> r =
        residual ? *reinterpret_cast<const Group<T>*>(residual + row * e.ldr + col) : Group<T>{};
#pragma unroll
    for (int j = 0; j < kGroup; ++j)
      v.v[j] =
          round_to<T>(finish(e, widen(v.v[j]), bias ? widen(b.v[j]) : 0.0f, residual ? widen(r.v[j]) : 0.0f));
    *at = v;
  }
}

bool aligned_16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <class T>
void launch(cudaStream_t stream, const Epilogue& e, const void* bias, const void* residual, void* c) {
  constexpr int64_t kMostBlocks = 65535;
  const bool grouped = e.n % kGroup == 0 && e.ldc % kGroup == 0 && aligned_16(c) &&
                       (!bias || aligned_16(bias)) &&
                       (!residual || (e.ldr % kGroup == 0 && aligned_16(residual)));
  const int64_t blocks = static_cast<int64_t>(blocks_for(grouped ? e.m * (e.n / kGroup) : e.m * e.n));
  const auto grid = static_cast<unsigned>(blocks < kMostBlocks ? blocks : kMostBlocks);
  if (grouped) {
    epilogue_16bit_group_kernel<T><<<grid, kThreads, 0, stream>>>(
        e, static_cast<const Group<T>*>(bias), static_cast<const T*>(residual), static_cast<T*>(c));
    check_launch("epilogue_16bit_group_kernel");
    return;
  }
  epilogue_16bit_kernel<T><<<grid, kThreads, 0, stream>>>(
      e, static_cast<const T*>(bias), static_cast<const T*>(residual), static_cast<T*>(c));
  check_launch("epilogue_16bit_kernel");
}

}  // namespace

void epilogue_16bit(cudaStream_t stream, Precision precision, int64_t m, int64_t n, int64_t ldc,
                    const void* bias, GemmActivation activation, const void* residual, int64_t ldr,
                    float clamp_lo, float clamp_hi, void* c) {
  if (m <= 0 || n <= 0) return;
  const Epilogue e{m, n, ldc, ldr, activation, clamp_lo, clamp_hi};
  if (precision == Precision::Fp16)
    launch<__half>(stream, e, bias, residual, c);
  else if (precision == Precision::Bf16)
    launch<__nv_bfloat16>(stream, e, bias, residual, c);
  else
    note_error("epilogue_16bit", "16-bit outputs need --precision fp16 or bf16");
}

}  // namespace aotc::rt::cuda

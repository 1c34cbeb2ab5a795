// attention_staging.cuh - what the one-launch attention kernels share
// (attention_fused.cu, attention_short.cu, attention_short_tf32.cu): the device limits they
// plan their blocks by, asynchronous 16-byte copies into shared memory, the staging of a
// strided block of rows with zero padding, a mask's additive term, and the output's stores
// (float32 or a 16-bit type).
#pragma once

#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/kernels/sequence.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace aotc::rt::cuda {

constexpr float kAttentionNegInf = -__builtin_inff();

// The current device's limits that the kernels' block layouts are planned by.
struct AttentionDevice {
  int max_block_bytes = 0;  // dynamic shared memory a block may opt in to
  int sm_bytes = 0;         // shared memory per multiprocessor
  int sms = 0;              // multiprocessors
};

// Reads them; false (the CUDA error cleared) where they cannot be read.
inline bool attention_device(AttentionDevice& d) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&d.max_block_bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
          cudaSuccess ||
      cudaDeviceGetAttribute(&d.sm_bytes, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device) !=
          cudaSuccess ||
      cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || d.sms <= 0) {
    cudaGetLastError();
    return false;
  }
  return true;
}

// Raises a kernel's dynamic shared memory limit to the device's maximum; false (the error
// cleared) where that fails. The limit belongs to the function, shared by every context:
// with the size of each call instead, two contexts created at once on two threads could
// lower it between the other's setting and launch. Not a stream operation: allowed while the
// run is being captured.
template <class Kernel>
bool allow_block_bytes(Kernel* kernel, const AttentionDevice& d) {
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, d.max_block_bytes) !=
      cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return true;
}

// v rounded up to a multiple of `to` (the kernels' padded shared-memory layouts).
inline int round_up(int64_t v, int to) { return static_cast<int>((v + to - 1) / to * to); }

// The 16 bytes at src (16-byte aligned) into dst in shared memory, without waiting for
// them (cp.async on sm_80 and newer): a thread's copies are all in flight at once, where
// a load and a store per iteration would wait for each load in turn.
__device__ __forceinline__ void copy16_async(void* dst, const void* src) {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(
                   static_cast<unsigned>(__cvta_generic_to_shared(dst))),
               "l"(src));
#else
  *static_cast<uint4*>(dst) = *static_cast<const uint4*>(src);
#endif
}

// Closes the group of this thread's copies issued since the last one.
__device__ __forceinline__ void commit_copies() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most `pending` of this thread's groups are still in flight (a
// __syncthreads must follow before other threads read what arrived).
template <int pending>
__device__ __forceinline__ void wait_copies() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
#endif
}

// dst (rows_padded x cols4, row stride dst_ld) = src (rows x cols, row stride src_ld),
// with zeros in columns cols .. cols4 (cols4: a multiple of 4, any number of float4s past
// cols) and rows rows .. rows_padded. vec: cols == cols4,
// and src and src_ld allow 16-byte copies (then in flight until waited for). Thread t of
// `threads` takes float4s t, t + threads, ... of the rows_padded x cols4 / 4 grid, stepping its row,
// column and pointers without a division or a 64-bit product per element (those were a
// third of the kernel's instructions).
__device__ __forceinline__ void stage(int threads, float* dst, int dst_ld, const float* src, int64_t src_ld,
                                      int rows, int rows_padded, int cols, int cols4, bool vec) {
  const int c4 = cols4 / 4, dr = threads / c4, dc = threads - dr * c4;
  int r = static_cast<int>(threadIdx.x) / c4, c = static_cast<int>(threadIdx.x) - r * c4;
  float* d = dst + r * dst_ld + 4 * c;
  const float* s = src + r * src_ld + 4 * c;
  const int64_t s_step = dr * src_ld + 4 * dc, s_wrap = src_ld - 4 * c4;
  const int d_step = dr * dst_ld + 4 * dc, d_wrap = dst_ld - 4 * c4;
  while (r < rows_padded) {
    if (r < rows && vec) {
      copy16_async(d, s);
    } else {
      float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (r < rows) {
        x.x = 4 * c < cols ? s[0] : 0.0f;
        x.y = 4 * c + 1 < cols ? s[1] : 0.0f;
        x.z = 4 * c + 2 < cols ? s[2] : 0.0f;
        x.w = 4 * c + 3 < cols ? s[3] : 0.0f;
      }
      *reinterpret_cast<float4*>(d) = x;
    }
    r += dr;
    c += dc;
    s += s_step;
    d += d_step;
    if (c >= c4) {
      c -= c4;
      ++r;
      s += s_wrap;
      d += d_wrap;
    }
  }
}

// The mask as an additive term of a score: 0 where it keeps a key, -inf where it drops it,
// an additive mask's value. (Where a bool mask drops a key the score is set to -inf
// outright, so that a NaN score is dropped too, as with masked_fill.)
__device__ __forceinline__ float mask_term(const AttentionParams& p, const void* mask, int64_t at) {
  switch (p.mask_kind) {
    case AttentionMask::Additive:
      return static_cast<const float*>(mask)[at];
    case AttentionMask::KeepIfTrue:
      return static_cast<const unsigned char*>(mask)[at] ? 0.0f : kAttentionNegInf;
    case AttentionMask::DropIfTrue:
      return static_cast<const unsigned char*>(mask)[at] ? kAttentionNegInf : 0.0f;
    case AttentionMask::DropIfNonzero:
      return static_cast<const float*>(mask)[at] != 0.0f ? kAttentionNegInf : 0.0f;
    case AttentionMask::None:
      break;
  }
  return 0.0f;
}

// out[at] = v in the kernel's output type (a uniform branch: one kernel serves all three).
__device__ __forceinline__ void store_out(void* out, AttentionOut type, int64_t at, float v) {
  if (type == AttentionOut::F32)
    static_cast<float*>(out)[at] = v;
  else if (type == AttentionOut::F16)
    static_cast<__half*>(out)[at] = __float2half_rn(v);
  else
    static_cast<__nv_bfloat16*>(out)[at] = __float2bfloat16_rn(v);
}

// out[at], out[at + 1] = a, b as one store (8 bytes for float32, 4 for the 16-bit types;
// `at` even and out aligned to the pair).
__device__ __forceinline__ void store_out_pair(void* out, AttentionOut type, int64_t at, float a, float b) {
  if (type == AttentionOut::F32)
    *reinterpret_cast<float2*>(static_cast<float*>(out) + at) = make_float2(a, b);
  else if (type == AttentionOut::F16)
    *reinterpret_cast<__half2*>(static_cast<__half*>(out) + at) = __floats2half2_rn(a, b);
  else
    *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(out) + at) = __floats2bfloat162_rn(a, b);
}

inline int out_element_bytes(AttentionOut type) { return type == AttentionOut::F32 ? 4 : 2; }

inline bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

// Stores of (even, odd) column pairs through out's strides (store_out_pair).
inline bool pair_rows(const void* base, AttentionOut type, const int64_t strides[3]) {
  return strides[0] % 2 == 0 && strides[1] % 2 == 0 && strides[2] % 2 == 0 &&
         reinterpret_cast<uintptr_t>(base) % static_cast<uintptr_t>(2 * out_element_bytes(type)) == 0;
}

// 16-byte copies of rows of `cols` floats at `base`, over every (batch, head, row).
inline bool vector_rows(const float* base, const int64_t strides[3], int64_t cols) {
  return cols % 4 == 0 && strides[0] % 4 == 0 && strides[1] % 4 == 0 && strides[2] % 4 == 0 &&
         aligned16(base);
}

// The same for 16-bit elements: 16-byte copies of 8 at a time from every row's start (a
// row's columns past its last multiple of 8 are read one by one).
inline bool vector_rows_16bit(const void* base, const int64_t strides[3]) {
  return strides[0] % 8 == 0 && strides[1] % 8 == 0 && strides[2] % 8 == 0 && aligned16(base);
}

}  // namespace aotc::rt::cuda

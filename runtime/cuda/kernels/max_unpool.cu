// max_unpool.cu - max unpooling: each plane of y is zero but for y[indices[i]] = x[i], the
// last i winning where indices repeat (torch's serial loop, the CPU kernel's), indices
// outside [0, out_volume) skipped. Deterministic in three passes: clear one winner slot per
// output, let every input claim its slot with atomicMax of its position + 1, then write
// each output from its winner (0: none, the output is 0). The slots are y's own 32-bit
// words while positions + 1 fit in 32 bits, else 64-bit slots in the caller's scratch.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

template <class Slot>
__global__ void clear_slots_kernel(int64_t count, Slot* slots) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) slots[i] = 0;
}

template <class Slot>
__global__ void claim_slots_kernel(int64_t total, int64_t in_volume, int64_t out_volume,
                                   const int64_t* __restrict__ indices, Slot* __restrict__ slots) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t at = indices[i];
  if (at < 0 || at >= out_volume) return;
  const int64_t plane = i / in_volume;
  atomicMax(slots + plane * out_volume + at, static_cast<Slot>(i - plane * in_volume + 1));
}

// slots may be y itself: each thread reads its slot before writing its output there.
template <class Slot>
__global__ void place_kernel(int64_t count, int64_t in_volume, int64_t out_volume,
                             const float* __restrict__ x, const Slot* slots, float* y) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= count) return;
  const Slot winner = slots[j];
  y[j] = winner == 0 ? 0.0f : x[(j / out_volume) * in_volume + static_cast<int64_t>(winner) - 1];
}

template <class Slot>
void unpool(cudaStream_t stream, int64_t planes, int64_t in_volume, int64_t out_volume, const float* x,
            const int64_t* indices, float* y, Slot* slots) {
  const int64_t count = planes * out_volume, total = planes * in_volume;
  clear_slots_kernel<<<blocks_for(count), kThreads, 0, stream>>>(count, slots);
  check_launch("max_unpool clear_slots_kernel");
  if (total > 0) {
    claim_slots_kernel<<<blocks_for(total), kThreads, 0, stream>>>(total, in_volume, out_volume, indices,
                                                                   slots);
    check_launch("max_unpool claim_slots_kernel");
  }
  place_kernel<<<blocks_for(count), kThreads, 0, stream>>>(count, in_volume, out_volume, x, slots, y);
  check_launch("max_unpool place_kernel");
}

}  // namespace

void max_unpool_f32(cudaStream_t stream, int64_t planes, int64_t in_volume, int64_t out_volume,
                    const float* x, const int64_t* indices, float* y, void* scratch) {
  if (planes <= 0 || out_volume <= 0) return;
  if (scratch) {
    unpool(stream, planes, in_volume, out_volume, x, indices, y, static_cast<unsigned long long*>(scratch));
  } else if (in_volume <= int64_t{0xFFFFFFFF}) {
    static_assert(sizeof(unsigned) == sizeof(float));
    unpool(stream, planes, in_volume, out_volume, x, indices, y, reinterpret_cast<unsigned*>(y));
  } else {
    note_error("max_unpool_f32",
               "a plane of 2^32 or more inputs needs planes * out_volume * 8 bytes of scratch");
  }
}

}  // namespace aotc::rt::cuda

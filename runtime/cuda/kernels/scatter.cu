// scatter.cu - torch.scatter without reduction (ScatterParams, as the CPU kernel takes it):
// y = self, then y[i with i[dim] = index[i]] = src[i] for every position i of the index.
// Elements of 1, 2, 4 or 8 bytes (it moves bytes: any dtype); indices int64 or int32,
// wrapped when negative and clamped into range as on the CPU (runtime/src/kernels/
// index_util.h): no write outside y. Repeated indices: the last write in index order wins,
// as on the CPU, by one of the two ways scatter_plan.h describes.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/scatter_plan.h>
#include <aotc/rt/cuda/index_nd.cuh>

#include <climits>
#include <cstring>

namespace aotc::rt::cuda {
namespace {

// One thread per line, its positions in order (consecutive threads: consecutive inner
// coordinates).
template <class T, class Index>
__global__ void scatter_lines_kernel(ScatterParams p, ScatterLines lines, const T* __restrict__ src, T value,
                                     const Index* __restrict__ index, T* __restrict__ y) {
  const int64_t l = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (l >= lines.count) return;
  int64_t y_off, s_off;
  scatter_line_offsets(p, l, y_off, s_off);
  for (int64_t k = 0; k < lines.length; ++k) {
    const int64_t j = read_index(index, scatter_index_element(lines, l, k), p.y_dim_size);
    y[y_off + j * p.y_strides[p.dim]] = src ? src[s_off + k * p.src_strides[p.dim]] : value;
  }
}

// Pass 1, one thread per position: slot (line, destination) = max(slot, position in line + 1).
template <class Index, class Slot>
__global__ void scatter_mark_kernel(ScatterParams p, ScatterLines lines, int64_t total,
                                    const Index* __restrict__ index, Slot* __restrict__ slots) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t in = i % lines.inner, ok = i / lines.inner;
  const int64_t k = ok % lines.length, l = ok / lines.length * lines.inner + in;
  const int64_t j = read_index(index, i, p.y_dim_size);
  atomicMax(slots + l * p.y_dim_size + j, static_cast<Slot>(k + 1));
}

// Pass 2, one thread per position: the position its slot names writes.
template <class T, class Index, class Slot>
__global__ void scatter_write_kernel(ScatterParams p, ScatterLines lines, int64_t total,
                                     const T* __restrict__ src, T value, const Index* __restrict__ index,
                                     const Slot* __restrict__ slots, T* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t in = i % lines.inner, ok = i / lines.inner;
  const int64_t k = ok % lines.length, l = ok / lines.length * lines.inner + in;
  const int64_t j = read_index(index, i, p.y_dim_size);
  if (slots[l * p.y_dim_size + j] != static_cast<Slot>(k + 1)) return;
  int64_t y_off, s_off;
  scatter_line_offsets(p, l, y_off, s_off);
  y[y_off + j * p.y_strides[p.dim]] = src ? src[s_off + k * p.src_strides[p.dim]] : value;
}

template <class T, class Index, class Slot>
void launch_marked(cudaStream_t stream, const ScatterParams& p, const ScatterLines& lines, const T* src,
                   T value, const Index* index, T* y, void* scratch) {
  const int64_t total = lines.count * lines.length;
  auto* slots = static_cast<Slot*>(scratch);
  if (!slots) return note_error("scatter", "no scratch for its repeated-index pass (scatter_scratch_bytes)");
  if (cudaError_t e = cudaMemsetAsync(slots, 0, static_cast<size_t>(scatter_scratch_bytes(p)), stream)) {
    note_error("scatter (clearing its scratch)", cudaGetErrorString(e));
    return;
  }
  scatter_mark_kernel<Index, Slot><<<blocks_for(total), kThreads, 0, stream>>>(p, lines, total, index, slots);
  check_launch("scatter_mark_kernel");
  scatter_write_kernel<T, Index, Slot>
      <<<blocks_for(total), kThreads, 0, stream>>>(p, lines, total, src, value, index, slots, y);
  check_launch("scatter_write_kernel");
}

template <class T, class Index>
void launch(cudaStream_t stream, const ScatterParams& p, const ScatterLines& lines, const void* src,
            const unsigned char* value, const void* index, void* y, void* scratch) {
  T v{};
  if (!src) std::memcpy(&v, value, sizeof(T));
  const auto* s = static_cast<const T*>(src);
  const auto* is = static_cast<const Index*>(index);
  auto* ys = static_cast<T*>(y);
  if (scatter_scans_lines(p)) {
    scatter_lines_kernel<T, Index><<<blocks_for(lines.count), kThreads, 0, stream>>>(p, lines, s, v, is, ys);
    check_launch("scatter_lines_kernel");
  } else if (scatter_slot_bytes(p) == 4) {
    launch_marked<T, Index, unsigned>(stream, p, lines, s, v, is, ys, scratch);
  } else {
    launch_marked<T, Index, unsigned long long>(stream, p, lines, s, v, is, ys, scratch);
  }
}

template <class T>
void launch_for_index(cudaStream_t stream, const ScatterParams& p, const ScatterLines& lines, const void* src,
                      const unsigned char* value, const void* index, void* y, void* scratch) {
  if (p.index_elem_size == 4)
    launch<T, int32_t>(stream, p, lines, src, value, index, y, scratch);
  else
    launch<T, int64_t>(stream, p, lines, src, value, index, y, scratch);
}

}  // namespace

void scatter(cudaStream_t stream, const ScatterParams& p, const void* self, int64_t y_bytes, const void* src,
             const unsigned char* value, const void* index, void* y, void* scratch) {
  if (self != y && y_bytes > 0)
    if (cudaError_t e =
            cudaMemcpyAsync(y, self, static_cast<size_t>(y_bytes), cudaMemcpyDeviceToDevice, stream)) {
      note_error("scatter (copying self)", cudaGetErrorString(e));
      return;
    }
  if (p.rank < 1 || p.rank > 8 || p.dim < 0 || p.dim >= p.rank || p.y_dim_size <= 0) return;
  const ScatterLines lines = scatter_lines_of(p);
  if (lines.count <= 0 || lines.length <= 0) return;
  if (!src && !value) return note_error("scatter", "neither src nor a value to scatter");
  switch (p.elem_size) {
    case 1:
      return launch_for_index<uint8_t>(stream, p, lines, src, value, index, y, scratch);
    case 2:
      return launch_for_index<uint16_t>(stream, p, lines, src, value, index, y, scratch);
    case 4:
      return launch_for_index<uint32_t>(stream, p, lines, src, value, index, y, scratch);
    case 8:
      return launch_for_index<uint64_t>(stream, p, lines, src, value, index, y, scratch);
    default:
      note_error("scatter", "element size is not 1, 2, 4 or 8 bytes");
  }
}

}  // namespace aotc::rt::cuda

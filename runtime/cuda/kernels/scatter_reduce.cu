// scatter_reduce.cu - torch.scatter_reduce and its forms (ScatterReduceParams, as the CPU
// kernel takes it): y = self, then each element that an index reaches folds its
// contributions in index order with scatter_reduce_step.h's arithmetic, the CPU's, so the
// two targets give the same bits (float sums included: no atomics, no reordering). Only
// positions of one line can reach the same element: short lines are folded by a thread
// each; longer ones are sorted by index with their positions first (scatter_plan.h).
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/scatter_plan.h>
#include <aotc/rt/kernels/scatter_reduce_step.h>
#include <aotc/rt/cuda/index_nd.cuh>

namespace aotc::rt::cuda {
namespace {

namespace step = scatter_reduce_step;

// Folds the positions that reach y[y_at]: next(t) gives the t-th (along dim, in index
// order), or -1 past the last. Starts from self's value or the identity.
template <class T, class Next>
__device__ __forceinline__ void fold_run(const ScatterReduceParams& p, T* y, int64_t y_at, const T* src,
                                         int64_t s_line, Next next) {
  const int64_t s_stride = p.geometry.src_strides[p.geometry.dim];
  T acc = p.include_self ? y[y_at] : step::identity<T>(p.op);
  int64_t count = 0;
  for (int64_t k = next(0); k >= 0; k = next(++count))
    acc = step::combine(p.op, acc, src[s_line + k * s_stride]);
  if (p.op == ScatterReduceOp::Mean) acc = step::divide(acc, count + (p.include_self ? 1 : 0));
  y[y_at] = acc;
}

// A thread per line: each position that is its index's first in the line folds every
// later position with that index (lines are short: at most kScatterLineScanMax).
template <class T, class Index>
__global__ void scatter_reduce_lines_kernel(ScatterReduceParams p, ScatterLines lines,
                                            const T* __restrict__ src, const Index* __restrict__ index,
                                            T* __restrict__ y) {
  const ScatterParams& g = p.geometry;
  const int64_t l = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (l >= lines.count) return;
  int64_t y_line, s_line, x_line;
  scatter_line_offsets(g, l, y_line, s_line, p.index_strides, &x_line);
  const int64_t x_step = p.index_strides[g.dim];
  const auto at = [&](int64_t k) { return read_index(index, x_line + k * x_step, g.y_dim_size); };
  for (int64_t k = 0; k < lines.length; ++k) {
    const int64_t j = at(k);
    bool first = true;
    for (int64_t e = 0; e < k && first; ++e) first = at(e) != j;
    if (!first) continue;
    int64_t count = 0, positions[kScatterLineScanMax];
    for (int64_t e = k; e < lines.length; ++e)
      if (at(e) == j) positions[count++] = e;
    fold_run(p, y, y_line + j * g.y_strides[g.dim], src, s_line,
             [&](int64_t t) { return t < count ? positions[t] : int64_t{-1}; });
  }
}

// The index's own lines (scatter_reduce_index_lines: a broadcast dim once) wrapped into
// [0, y_dim_size), dense as [outer, length, inner], for the sort; `own` holds the dims
// with 1 along the broadcast ones.
template <class Index, class Wrapped>
__global__ void wrap_indices_kernel(ScatterReduceParams p, ScatterParams own, int64_t total,
                                    const Index* __restrict__ index, Wrapped* __restrict__ wrapped) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t out = i;
  int64_t x = 0;
  for (int d = own.rank - 1; d >= 0; --d) {
    x += (i % own.dims[d]) * p.index_strides[d];
    i /= own.dims[d];
  }
  wrapped[out] = static_cast<Wrapped>(read_index(index, x, p.geometry.y_dim_size));
}

// A thread per sorted slot c of the index's own lines and per copy r along the dims it is
// broadcast over (index_add's features): the first slot of a run of equal indices folds the
// run's positions, which the stable sort left in index order. Consecutive threads take
// consecutive copies of one slot: a warp's lanes fold the same run, one feature each,
// reading src and writing y in one transaction per position. The slot arithmetic is in
// Int (32-bit where the grid allows: a 64-bit division costs several times more), and
// only the first slot of a run works out its line's offsets.
template <class T, class Wrapped, class Int>
__global__ void fold_sorted_runs_kernel(ScatterReduceParams p, ScatterParams own, Int own_inner, Int length,
                                        Int copies, Int total, const T* __restrict__ src,
                                        const Wrapped* __restrict__ sorted,
                                        const int64_t* __restrict__ positions, T* __restrict__ y) {
  const ScatterParams& g = p.geometry;
  const Int i = static_cast<Int>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const Int c = i / copies, s = c / own_inner % length;
  const Wrapped j = sorted[c];
  if (s > 0 && sorted[c - own_inner] == j) return;
  int64_t own_line = c / (own_inner * length) * own_inner + c % own_inner, copy = i % copies;
  int64_t y_line = 0, s_line = 0;  // the line's coordinates: own dims from own_line, broadcast ones from copy
  for (int d = g.rank - 1; d >= 0; --d) {
    if (d == g.dim) continue;
    int64_t coordinate;
    if (own.dims[d] == g.dims[d]) {
      coordinate = own_line % g.dims[d];
      own_line /= g.dims[d];
    } else {
      coordinate = copy % g.dims[d];
      copy /= g.dims[d];
    }
    y_line += coordinate * g.y_strides[d];
    s_line += coordinate * g.src_strides[d];
  }
  fold_run(p, y, y_line + static_cast<int64_t>(j) * g.y_strides[g.dim], src, s_line, [&](int64_t t) {
    const int64_t at = c + t * own_inner;  // the run's end is found as it goes
    return s + t < length && (t == 0 || sorted[at] == j) ? positions[at] : int64_t{-1};
  });
}

template <class T, class Index, class Wrapped>
void launch_sorted(cudaStream_t stream, const ScatterReduceParams& p, const ScatterLines& lines, const T* src,
                   const Index* index, T* y, void* scratch) {
  const ScatterParams& g = p.geometry;
  const ScatterReduceScratch plan = scatter_reduce_scratch_of(p);
  if (!scratch) return note_error("scatter_reduce", "no scratch for its sort (scatter_reduce_scratch_of)");
  auto* base = static_cast<unsigned char*>(scratch);
  auto* wrapped = reinterpret_cast<Wrapped*>(base + plan.wrapped);
  auto* sorted = reinterpret_cast<Wrapped*>(base + plan.sorted);
  auto* positions = reinterpret_cast<int64_t*>(base + plan.positions);
  const ScatterReduceIndexLines own_lines = scatter_reduce_index_lines(p);
  ScatterParams own = g;  // the index's own extents
  for (int d = 0; d < g.rank; ++d)
    if (d != g.dim && p.index_strides[d] == 0) own.dims[d] = 1;
  const int64_t own_total = own_lines.outer * lines.length * own_lines.inner;
  wrap_indices_kernel<Index, Wrapped>
      <<<blocks_for(own_total), kThreads, 0, stream>>>(p, own, own_total, index, wrapped);
  check_launch("wrap_indices_kernel");
  sort_lines(stream, sizeof(Wrapped) == 4 ? ElemType::I32 : ElemType::I64, false, own_lines.outer,
             lines.length, own_lines.inner, lines.length, wrapped, sorted, positions,
             plan.sort < plan.bytes ? base + plan.sort : nullptr);
  const int64_t copies = lines.count / (own_lines.outer * own_lines.inner);
  const int64_t total = own_total * copies;
  if (total < (int64_t{1} << 31)) {
    fold_sorted_runs_kernel<T, Wrapped, uint32_t><<<blocks_for(total), kThreads, 0, stream>>>(
        p, own, static_cast<uint32_t>(own_lines.inner), static_cast<uint32_t>(lines.length),
        static_cast<uint32_t>(copies), static_cast<uint32_t>(total), src, sorted, positions, y);
  } else {
    fold_sorted_runs_kernel<T, Wrapped, uint64_t><<<blocks_for(total), kThreads, 0, stream>>>(
        p, own, static_cast<uint64_t>(own_lines.inner), static_cast<uint64_t>(lines.length),
        static_cast<uint64_t>(copies), static_cast<uint64_t>(total), src, sorted, positions, y);
  }
  check_launch("fold_sorted_runs_kernel");
}

template <class T, class Index>
void launch(cudaStream_t stream, const ScatterReduceParams& p, const ScatterLines& lines, const void* src,
            const void* index, void* y, void* scratch) {
  const auto* s = static_cast<const T*>(src);
  const auto* is = static_cast<const Index*>(index);
  auto* ys = static_cast<T*>(y);
  if (scatter_scans_lines(p.geometry)) {
    scatter_reduce_lines_kernel<T, Index>
        <<<blocks_for(lines.count), kThreads, 0, stream>>>(p, lines, s, is, ys);
    check_launch("scatter_reduce_lines_kernel");
  } else if (scatter_reduce_index_bytes(p.geometry) == 4) {
    launch_sorted<T, Index, int32_t>(stream, p, lines, s, is, ys, scratch);
  } else {
    launch_sorted<T, Index, int64_t>(stream, p, lines, s, is, ys, scratch);
  }
}

template <class T>
void launch_for_index(cudaStream_t stream, const ScatterReduceParams& p, const ScatterLines& lines,
                      const void* src, const void* index, void* y, void* scratch) {
  if (p.geometry.index_elem_size == 4)
    launch<T, int32_t>(stream, p, lines, src, index, y, scratch);
  else
    launch<T, int64_t>(stream, p, lines, src, index, y, scratch);
}

}  // namespace

void scatter_reduce(cudaStream_t stream, const ScatterReduceParams& p, const void* self, int64_t y_bytes,
                    const void* src, const void* index, void* y, void* scratch) {
  if (self != y && y_bytes > 0)
    if (cudaError_t e =
            cudaMemcpyAsync(y, self, static_cast<size_t>(y_bytes), cudaMemcpyDeviceToDevice, stream)) {
      note_error("scatter_reduce (copying self)", cudaGetErrorString(e));
      return;
    }
  const ScatterParams& g = p.geometry;
  if (g.rank < 1 || g.rank > 8 || g.dim < 0 || g.dim >= g.rank || g.y_dim_size <= 0) return;
  const ScatterLines lines = scatter_lines_of(g);
  if (lines.count <= 0 || lines.length <= 0) return;
  switch (p.type) {
    case ElemType::F32:
      return launch_for_index<float>(stream, p, lines, src, index, y, scratch);
    case ElemType::I64:
      return launch_for_index<int64_t>(stream, p, lines, src, index, y, scratch);
    case ElemType::I32:
      return launch_for_index<int32_t>(stream, p, lines, src, index, y, scratch);
    case ElemType::Bool:
      note_error("scatter_reduce", "bool elements are not supported");
  }
}

}  // namespace aotc::rt::cuda

// sort.cu - the first k values of each line along the middle axis of outer x axis x inner in
// sorted order, with their int64 indices (torch.topk, sort, argsort, msort), in the CPU
// kernel's total order: a NaN larger than every number, equal values in index order.
// Short lines (sort_plan.h): a block per line, a thread per value, whose place is its rank,
// the count of the line's values that come before it (the line read through shared memory).
// Longer ones: each value becomes an item, an unsigned order key with its index below it, so
// that one unsigned comparison is the total order; a block sorts a chunk by its keys (a
// stable block radix sort) and keeps the first k, and merge passes pair the runs up, an
// item's place in the merged run being its place in its own run plus its rank in the other
// (a binary search: items are distinct). n log^2 n work a line, not n^2: a vocabulary of
// 50 000 values takes 13 chunks and 4 merges.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/sort_plan.h>

#include <cub/block/block_radix_sort.cuh>

#include <algorithm>
#include <type_traits>

namespace aotc::rt::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kChunkThreads = 512;                      // a chunk's sort: 8 keys a thread (int64: 4)
constexpr int kTile = static_cast<int>(kSortRankAxis);  // the rank kernel's lines fit one tile

// a < b in the sort's order of values: a NaN after every number, NaNs equal.
template <class T>
__device__ __forceinline__ bool value_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return false;
    if (b != b) return true;
  }
  return a < b;
}

// ---- short lines: a block per line, a thread per value, its rank its place
template <class T>
__global__ void __launch_bounds__(kThreads)
    rank_lines_kernel(bool descending, int64_t axis, int64_t inner, int64_t k, const T* __restrict__ x,
                      T* __restrict__ values, int64_t* __restrict__ indices) {
  __shared__ T tile[kTile];
  const int64_t line = blockIdx.x / inner, lane = blockIdx.x % inner;
  const T* in = x + line * axis * inner + lane;
  const int64_t out = line * k * inner + lane;
  for (int64_t a0 = 0; a0 < axis; a0 += kThreads) {  // the same trip count for every thread
    const int64_t a = a0 + threadIdx.x;
    const bool mine = a < axis;
    const T v = mine ? in[a * inner] : T{};
    int64_t rank = 0;
    for (int64_t b0 = 0; b0 < axis; b0 += kTile) {
      const int n = static_cast<int>(min(static_cast<int64_t>(kTile), axis - b0));
      __syncthreads();
      for (int j = threadIdx.x; j < n; j += kThreads) tile[j] = in[(b0 + j) * inner];
      __syncthreads();
      if (!mine) continue;
      for (int j = 0; j < n; ++j) {
        const T b = tile[j];
        const bool first = descending ? value_less(v, b) : value_less(b, v);
        const bool tie = !value_less(v, b) && !value_less(b, v);
        rank += first || (tie && b0 + j < a);
      }
    }
    if (mine && rank < k) {
      if (values) values[out + rank * inner] = v;
      indices[out + rank * inner] = a;
    }
  }
}

// ---- items: an order key over the index, compared as unsigned integers
// The key of a value: ascending unsigned order is the sort's order (descending: its
// complement), NaNs equal and after every number, -0.0 equal to 0.0.
__device__ __forceinline__ uint32_t key_of(float v) {
  uint32_t u = __float_as_uint(v);
  if (v != v) return 0xffffffffu;
  if ((u & 0x7fffffffu) == 0) u = 0;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ uint32_t key_of(int32_t v) { return static_cast<uint32_t>(v) ^ 0x80000000u; }
__device__ __forceinline__ uint32_t key_of(bool v) { return v ? 1u : 0u; }
__device__ __forceinline__ uint64_t key_of(int64_t v) { return static_cast<uint64_t>(v) ^ (1ull << 63); }

// Values of 32 bits or fewer: the key in the high word, the index (< 2^32 - 1) in the low.
struct Narrow {
  using Key = uint32_t;
  using Item = unsigned long long;
  template <class T>
  __device__ static Key key(T v, bool descending) {
    return descending ? ~key_of(v) : key_of(v);
  }
  __device__ static Item item(Key key, int64_t index) {
    return (static_cast<Item>(key) << 32) | static_cast<uint32_t>(index);
  }
  __device__ static int64_t index(Item a) { return static_cast<int64_t>(a & 0xffffffffull); }
  __device__ static bool less(Item a, Item b) { return a < b; }
};
// int64 values: the key and the index in two words.
struct Wide {
  using Key = unsigned long long;
  struct Item {
    unsigned long long key, index;
  };
  template <class T>
  __device__ static Key key(T v, bool descending) {
    return descending ? ~key_of(v) : key_of(v);
  }
  __device__ static Item item(Key key, int64_t index) {
    return {key, static_cast<unsigned long long>(index)};
  }
  __device__ static int64_t index(Item a) { return static_cast<int64_t>(a.index); }
  __device__ static bool less(Item a, Item b) {
    return a.key < b.key || (a.key == b.key && a.index < b.index);
  }
};
template <class T>
using ItemsOf = std::conditional_t<std::is_same_v<T, int64_t>, Wide, Narrow>;

// Where the sort writes: the outputs' position r of a line (values read back through the
// index), or a run in scratch.
template <class T>
struct Line {
  const T* in;  // the line's first value; values inner apart
  int64_t out;  // the line's first output position; positions inner apart
  int64_t inner;
};
template <class T>
__device__ __forceinline__ Line<T> line_of(int64_t line, int64_t axis, int64_t inner, int64_t k, const T* x) {
  const int64_t o = line / inner, lane = line % inner;
  return {x + o * axis * inner + lane, o * k * inner + lane, inner};
}
template <class T>
__device__ __forceinline__ void write_out(const Line<T>& l, int64_t r, int64_t index, T* values,
                                          int64_t* indices) {
  indices[l.out + r * l.inner] = index;
  if (values) values[l.out + r * l.inner] = l.in[index * l.inner];
}

// A block per (line, chunk): the chunk's keys sorted by cub's block radix sort, which is
// stable, so equal keys stay in index order (the padding, keys of all ones, after every
// value); the first min(k, chunk) written as items to the chunk's run (or, for a line of one
// chunk, to the outputs).
template <class T>
__global__ void __launch_bounds__(kChunkThreads)
    sort_chunks_kernel(bool descending, int64_t axis, int64_t inner, int64_t k, int64_t chunks,
                       const T* __restrict__ x, typename ItemsOf<T>::Item* __restrict__ runs, int64_t slots,
                       T* __restrict__ values, int64_t* __restrict__ indices) {
  using I = ItemsOf<T>;
  using Key = typename I::Key;
  constexpr int kChunk = static_cast<int>(kSortChunkBytes / sizeof(typename I::Item));
  constexpr int kPerThread = kChunk / kChunkThreads;
  using Sorter = cub::BlockRadixSort<Key, kChunkThreads, kPerThread, int>;
  __shared__ typename Sorter::TempStorage temp;
  const int64_t line = blockIdx.x / chunks, chunk = blockIdx.x % chunks, a0 = chunk * kChunk;
  const Line<T> l = line_of(line, axis, inner, k, x);
  const int n = static_cast<int>(min(static_cast<int64_t>(kChunk), axis - a0));
  Key keys[kPerThread];
  int at[kPerThread];  // positions in the chunk, blocked: a thread's are consecutive
  for (int i = 0; i < kPerThread; ++i) {
    at[i] = static_cast<int>(threadIdx.x) * kPerThread + i;
    keys[i] = at[i] < n ? I::key(l.in[(a0 + at[i]) * inner], descending) : ~Key{0};
  }
  Sorter(temp).SortBlockedToStriped(keys, at);  // rank r: item r / threads of thread r % threads
  const int keep = static_cast<int>(min(k, static_cast<int64_t>(n)));
  typename I::Item* run = runs + line * slots + chunk * min(k, static_cast<int64_t>(kChunk));
  for (int i = 0; i < kPerThread; ++i) {
    const int r = i * kChunkThreads + static_cast<int>(threadIdx.x);
    if (r >= keep) break;
    if (chunks == 1)
      write_out(l, r, a0 + at[i], values, indices);
    else
      run[r] = I::item(keys[i], a0 + at[i]);
  }
}

// Items of a sorted run before `item` (which is not in it).
template <class I>
__device__ __forceinline__ int64_t rank_in(const typename I::Item* run, int64_t length,
                                           typename I::Item item) {
  int64_t lo = 0, hi = length;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (I::less(run[mid], item))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// One merge pass: runs of `span` values each (run j: at most min(k, span) items, `stride`
// apart in a line's slots) merged in pairs; a thread per item of a pair. The last pass
// (one pair a line) writes the outputs.
template <class T>
__global__ void __launch_bounds__(kThreads)
    merge_runs_kernel(int64_t lines, int64_t axis, int64_t inner, int64_t k, int64_t runs, int64_t span,
                      int64_t stride, const typename ItemsOf<T>::Item* __restrict__ from,
                      typename ItemsOf<T>::Item* __restrict__ to, int64_t slots, const T* __restrict__ x,
                      T* __restrict__ values, int64_t* __restrict__ indices) {
  using I = ItemsOf<T>;
  const int64_t pairs = (runs + 1) / 2, per_pair = 2 * stride;
  const int64_t g = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (g >= lines * pairs * per_pair) return;
  const int64_t t = g % per_pair, pair = g / per_pair % pairs, line = g / per_pair / pairs;
  auto length = [&](int64_t run) {
    return run < runs ? min(k, min(axis, (run + 1) * span) - run * span) : int64_t{0};
  };
  const int64_t len_a = length(2 * pair), len_b = length(2 * pair + 1);
  const typename I::Item* a = from + line * slots + 2 * pair * stride;
  const typename I::Item* b = a + stride;
  const bool in_a = t < stride;
  const int64_t j = in_a ? t : t - stride;
  if (j >= (in_a ? len_a : len_b)) return;
  const typename I::Item item = in_a ? a[j] : b[j];
  const int64_t place = j + (in_a ? rank_in<I>(b, len_b, item) : rank_in<I>(a, len_a, item));
  if (place >= min(k, len_a + len_b)) return;
  if (pairs == 1)
    write_out(line_of(line, axis, inner, k, x), place, I::index(item), values, indices);
  else
    to[line * slots + pair * min(k, 2 * span) + place] = item;
}

template <class T>
void launch(cudaStream_t stream, bool descending, int64_t lines, int64_t axis, int64_t inner, int64_t k,
            const void* x_, void* values_, int64_t* indices, void* scratch) {
  const T* x = static_cast<const T*>(x_);
  T* values = static_cast<T*>(values_);
  if (axis <= kSortRankAxis) {
    rank_lines_kernel<T><<<static_cast<unsigned>(lines), kThreads, 0, stream>>>(descending, axis, inner, k, x,
                                                                                values, indices);
    check_launch("rank_lines_kernel");
    return;
  }
  using Item = typename ItemsOf<T>::Item;
  const int64_t bytes = sizeof(T), chunks = sort_chunks(bytes, axis), chunk = sort_chunk(bytes);
  const int64_t slots = sort_run_slots(bytes, axis, k);
  if (lines * chunks > 0x7fffffff) return note_error("sort_lines", "more chunks than a grid holds");
  if (chunks > 1 && !scratch) return note_error("sort_lines", "a line of several chunks needs scratch");
  Item* from = static_cast<Item*>(scratch);
  Item* to = from + lines * slots;
  sort_chunks_kernel<T><<<static_cast<unsigned>(lines * chunks), kChunkThreads, 0, stream>>>(
      descending, axis, inner, k, chunks, x, from, slots, values, indices);
  check_launch("sort_chunks_kernel");
  for (int64_t runs = chunks, span = chunk; runs > 1; runs = (runs + 1) / 2, span *= 2) {
    const int64_t stride = std::min(k, span), threads = lines * ((runs + 1) / 2) * 2 * stride;
    const int64_t blocks = (threads + kThreads - 1) / kThreads;
    if (blocks > 0x7fffffff) return note_error("sort_lines", "more items than a grid holds");
    merge_runs_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        lines, axis, inner, k, runs, span, stride, from, to, slots, x, values, indices);
    check_launch("merge_runs_kernel");
    std::swap(from, to);
  }
}

}  // namespace

void sort_lines(cudaStream_t stream, ElemType t, bool descending, int64_t outer, int64_t axis, int64_t inner,
                int64_t k, const void* x, void* values, int64_t* indices, void* scratch) {
  if (outer <= 0 || axis <= 0 || inner <= 0 || k <= 0) return;
  if (k > axis) k = axis;
  const int64_t lines = outer * inner;
  if (lines > 0x7fffffff) {
    note_error("sort_lines", "more lines than a grid holds");
    return;
  }
  if (axis >= 0xffffffff) {  // a narrow item's index is 32 bits, below the padding's
    note_error("sort_lines", "a line longer than 2^32 - 2 values");
    return;
  }
  switch (t) {
    case ElemType::F32:
      return launch<float>(stream, descending, lines, axis, inner, k, x, values, indices, scratch);
    case ElemType::I64:
      return launch<int64_t>(stream, descending, lines, axis, inner, k, x, values, indices, scratch);
    case ElemType::I32:
      return launch<int32_t>(stream, descending, lines, axis, inner, k, x, values, indices, scratch);
    case ElemType::Bool:
      return launch<bool>(stream, descending, lines, axis, inner, k, x, values, indices, scratch);
  }
  note_error("sort_lines", "unknown element type");
}

}  // namespace aotc::rt::cuda

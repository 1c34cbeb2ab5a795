// copy_strided.cpp - copies between two strided views of the same index space
// (permute, transpose, expand, slice, cat). Dimensions are simplified first; rows that
// are contiguous on both sides become one memcpy, and a permutation that moves the
// contiguous dimension is copied in square tiles so that both sides stay cache-friendly.
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cstring>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

struct Layout {
  int rank = 0;
  int64_t dims[8] = {};
  int64_t ss[8] = {};  // source strides (elements)
  int64_t ds[8] = {};  // destination strides (elements)
};

// Drops size-1 dims and merges neighbours that both views step through as one.
// Returns false when the index space is empty.
bool simplify(const CopyParams& p, Layout& l) {
  for (int d = 0; d < p.rank; ++d) {
    if (p.dims[d] <= 0) return false;
    if (p.dims[d] == 1) continue;
    if (l.rank > 0) {
      const int last = l.rank - 1;
      if (l.ss[last] == p.src_strides[d] * p.dims[d] && l.ds[last] == p.dst_strides[d] * p.dims[d]) {
        l.dims[last] *= p.dims[d];
        l.ss[last] = p.src_strides[d];
        l.ds[last] = p.dst_strides[d];
        continue;
      }
    }
    l.dims[l.rank] = p.dims[d];
    l.ss[l.rank] = p.src_strides[d];
    l.ds[l.rank] = p.dst_strides[d];
    ++l.rank;
  }
  if (l.rank == 0) {
    l.rank = 1;
    l.dims[0] = 1;
    l.ss[0] = 1;
    l.ds[0] = 1;
  }
  return true;
}

// Element access through memcpy: the bytes may belong to any type.
template <class T>
inline void copy_elem(const unsigned char* src, unsigned char* dst) {
  T v;
  std::memcpy(&v, src, sizeof(T));
  std::memcpy(dst, &v, sizeof(T));
}

// count elements with element strides ss / ds. T is a word of the element's size;
// unsigned char with elem > 1 means an odd size copied with memcpy.
template <class T>
void copy_row(const unsigned char* src, int64_t ss, unsigned char* dst, int64_t ds, int64_t count,
              int64_t elem) {
  if (ss == 1 && ds == 1) {
    std::memcpy(dst, src, static_cast<size_t>(count * elem));
  } else if constexpr (sizeof(T) > 1) {
    for (int64_t i = 0; i < count; ++i) copy_elem<T>(src + i * ss * elem, dst + i * ds * elem);
  } else {
    if (elem == 1) {
      for (int64_t i = 0; i < count; ++i) dst[i * ds] = src[i * ss];
    } else {
      for (int64_t i = 0; i < count; ++i)
        std::memcpy(dst + i * ds * elem, src + i * ss * elem, static_cast<size_t>(elem));
    }
  }
}

// Elements [begin, end) of the index space in row-major order, row piece by row piece.
template <class T>
void copy_range(const Layout& l, int64_t elem, const unsigned char* src, unsigned char* dst, int64_t begin,
                int64_t end) {
  const int inner = l.rank - 1;
  int64_t idx[8];
  int64_t off_s = 0, off_d = 0, rem = begin;
  for (int d = inner; d >= 0; --d) {
    idx[d] = rem % l.dims[d];
    rem /= l.dims[d];
    off_s += idx[d] * l.ss[d];
    off_d += idx[d] * l.ds[d];
  }
  for (int64_t e = begin; e < end;) {
    const int64_t len = detail::min_i64(l.dims[inner] - idx[inner], end - e);
    copy_row<T>(src + off_s * elem, l.ss[inner], dst + off_d * elem, l.ds[inner], len, elem);
    e += len;
    idx[inner] += len;
    off_s += len * l.ss[inner];
    off_d += len * l.ds[inner];
    for (int d = inner; d > 0 && idx[d] == l.dims[d]; --d) {
      off_s += l.ss[d - 1] - l.dims[d] * l.ss[d];
      off_d += l.ds[d - 1] - l.dims[d] * l.ds[d];
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

// Tile of a transpose-like copy: kTileT along the dim contiguous on the other side,
// kTileInner along the inner dim. Narrow inner tiles keep the strided side to a few
// cache lines, which matters when the stride is a power of two (cache-set conflicts).
constexpr int64_t kTileT = 64;
constexpr int64_t kTileInner = 8;

template <class T>
inline T load(const unsigned char* p, int64_t index) {
  T v;
  std::memcpy(&v, p + index * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}
template <class T>
inline void store(unsigned char* p, int64_t index, T v) {
  std::memcpy(p + index * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

// One tile: rows i in [i0, i1) of dim t, columns j in [j0, j1) of the inner dim; the
// inner stride is 1 on the side given by DstInner (the loop over j is contiguous there).
template <class T, bool DstInner>
void copy_tile(const unsigned char* src, int64_t ss_t, int64_t ss_i, unsigned char* dst, int64_t ds_t,
               int64_t ds_i, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t s = i * ss_t, d = i * ds_t;
    if constexpr (DstInner) {
      for (int64_t j = j0; j < j1; ++j) store<T>(dst, d + j, load<T>(src, s + j * ss_i));
    } else {
      for (int64_t j = j0; j < j1; ++j) store<T>(dst, d + j * ds_i, load<T>(src, s + j));
    }
  }
}

// The inner dim is contiguous on one side only and dim t is contiguous on the other:
// copy (t, inner) in tiles. Work items are (outer index, tile row of t).
template <class T>
void copy_tiled(ThreadPool& pool, const Layout& l, int t, const unsigned char* src, unsigned char* dst) {
  constexpr int64_t elem = sizeof(T);
  const int inner = l.rank - 1;
  int outer_dims[8];
  int n_outer = 0;
  int64_t outer_count = 1;
  for (int d = 0; d < inner; ++d) {
    if (d == t) continue;
    outer_dims[n_outer++] = d;
    outer_count *= l.dims[d];
  }
  const int64_t t_tiles = detail::ceil_div(l.dims[t], kTileT);
  const int64_t n_in = l.dims[inner];
  const bool dst_inner = l.ds[inner] == 1;
  pool.parallel_for(outer_count * t_tiles, detail::min_chunk_for(kTileT * n_in), [&](int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      int64_t rem = w / t_tiles;
      int64_t off_s = 0, off_d = 0;
      for (int k = n_outer - 1; k >= 0; --k) {
        const int d = outer_dims[k];
        const int64_t i = rem % l.dims[d];
        rem /= l.dims[d];
        off_s += i * l.ss[d];
        off_d += i * l.ds[d];
      }
      const unsigned char* s = src + off_s * elem;
      unsigned char* d = dst + off_d * elem;
      const int64_t i0 = (w % t_tiles) * kTileT;
      const int64_t i1 = detail::min_i64(l.dims[t], i0 + kTileT);
      for (int64_t j0 = 0; j0 < n_in; j0 += kTileInner) {
        const int64_t j1 = detail::min_i64(n_in, j0 + kTileInner);
        if (dst_inner) {
          copy_tile<T, true>(s, l.ss[t], l.ss[inner], d, l.ds[t], 1, i0, i1, j0, j1);
        } else {
          copy_tile<T, false>(s, l.ss[t], 1, d, l.ds[t], l.ds[inner], i0, i1, j0, j1);
        }
      }
    }
  });
}

template <class T>
void copy_run(ThreadPool& pool, const Layout& l, int64_t elem, const unsigned char* src, unsigned char* dst) {
  const int inner = l.rank - 1;
  // A transpose-like copy: the inner dim is contiguous on exactly one side and another
  // dim is contiguous on the other side. Tiles only pay with rows of some length, and
  // need elements of a word size.
  const bool src_inner = l.ss[inner] == 1, dst_inner = l.ds[inner] == 1;
  if (src_inner != dst_inner && l.dims[inner] >= 8 && elem == static_cast<int64_t>(sizeof(T))) {
    for (int d = 0; d < inner; ++d) {
      const bool other = src_inner ? l.ds[d] == 1 : l.ss[d] == 1;
      if (other && l.dims[d] >= 8) {
        copy_tiled<T>(pool, l, d, src, dst);
        return;
      }
    }
  }
  int64_t total = 1;
  for (int d = 0; d < l.rank; ++d) total *= l.dims[d];
  pool.parallel_for(total, detail::kElementwiseMinChunk,
                    [&](int64_t begin, int64_t end) { copy_range<T>(l, elem, src, dst, begin, end); });
}

}  // namespace

void copy_strided(ThreadPool& pool, const CopyParams& p, const void* src, void* dst) {
  Layout l;
  if (p.rank < 0 || p.rank > 8 || p.elem_size <= 0 || !simplify(p, l)) return;
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  switch (p.elem_size) {
    case 2:
      copy_run<uint16_t>(pool, l, 2, s, d);
      break;
    case 4:
      copy_run<uint32_t>(pool, l, 4, s, d);
      break;
    case 8:
      copy_run<uint64_t>(pool, l, 8, s, d);
      break;
    default:  // 1, or an odd size copied with memcpy
      copy_run<unsigned char>(pool, l, p.elem_size, s, d);
      break;
  }
}

}  // namespace aotc::rt

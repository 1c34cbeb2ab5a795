// copy_strided: permutes, transposes (tiled path), expand, slice, cat into a strided
// destination, every element size, ranks 0..8. Compared byte for byte.
#include <doctest/doctest.h>

#include <numeric>

#include "kernel_reference.h"

namespace {

using aotc::rt::CopyParams;
using aotc::rt::ThreadPool;
using namespace aotc::test;

// Random bytes in both buffers; the destination must end up byte-identical to the
// reference run on an identical copy (untouched bytes included).
void check_copy(ThreadPool& pool, const CopyParams& p, size_t src_elems, size_t dst_elems,
                const std::string& what) {
  const size_t es = static_cast<size_t>(p.elem_size);
  std::vector<unsigned char> src(src_elems * es), dst(dst_elems * es + 64), want;
  std::mt19937 gen(static_cast<uint32_t>(src_elems * 31 + dst_elems + es));
  for (auto& v : src) v = static_cast<unsigned char>(gen());
  for (auto& v : dst) v = static_cast<unsigned char>(gen());
  want = dst;
  ref_copy(p, src.data(), want.data());
  aotc::rt::copy_strided(pool, p, src.data(), dst.data());
  INFO(what << " dims=" << dims_str(p.rank, p.dims) << " elem=" << p.elem_size << " threads=" << pool.size());
  CHECK(dst == want);
}

// dst (dense, out dims) = src permuted: out dim d is src dim perm[d].
CopyParams permute_params(const std::vector<int64_t>& src_dims, const std::vector<int>& perm, int64_t elem) {
  CopyParams p;
  p.rank = static_cast<int32_t>(src_dims.size());
  p.elem_size = elem;
  int64_t src_strides[8];
  dense_strides(p.rank, src_dims.data(), src_strides);
  for (int d = 0; d < p.rank; ++d) {
    p.dims[d] = src_dims[static_cast<size_t>(perm[static_cast<size_t>(d)])];
    p.src_strides[d] = src_strides[perm[static_cast<size_t>(d)]];
  }
  dense_strides(p.rank, p.dims, p.dst_strides);
  return p;
}

size_t numel(const std::vector<int64_t>& dims) {
  return static_cast<size_t>(std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>()));
}

}  // namespace

TEST_CASE("copy_strided: permutations x element sizes") {
  struct Case {
    std::vector<int64_t> dims;
    std::vector<int> perm;
  };
  const Case cases[] = {
      {{2, 3, 4, 5}, {0, 2, 3, 1}},     // NCHW -> NHWC
      {{2, 3, 4, 5}, {3, 2, 1, 0}},     // reverse
      {{2, 5, 7, 3}, {0, 2, 1, 3}},     // swap heads/sequence: rows stay contiguous
      {{33, 65}, {1, 0}},               // transpose (tiled)
      {{300, 257}, {1, 0}},             // large transpose, several tiles per thread
      {{2, 64, 17, 17}, {0, 2, 3, 1}},  // NCHW -> NHWC, tiled
      {{7, 1, 13}, {2, 1, 0}},          // size-1 dims
      {{1}, {0}},
      {{2, 2, 2, 2, 2, 2, 2, 3}, {7, 6, 5, 4, 3, 2, 1, 0}},  // rank 8
  };
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    for (const Case& c : cases)
      for (int64_t elem : {1, 2, 4, 8, 3, 12}) {
        const CopyParams p = permute_params(c.dims, c.perm, elem);
        check_copy(pool, p, numel(c.dims), numel(c.dims), "permute");
      }
  }
}

TEST_CASE("copy_strided: expand, slice, cat, rank 0") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    for (int64_t elem : {1, 2, 4, 8, 6}) {
      {  // expand [1, 33] -> [100, 33] and [5, 1] -> [5, 4000]
        CopyParams p;
        p.rank = 2;
        p.elem_size = elem;
        p.dims[0] = 100;
        p.dims[1] = 33;
        p.src_strides[0] = 0;
        p.src_strides[1] = 1;
        p.dst_strides[0] = 33;
        p.dst_strides[1] = 1;
        check_copy(pool, p, 33, 3300, "expand rows");
        p.dims[0] = 5;
        p.dims[1] = 4000;
        p.src_strides[0] = 1;
        p.src_strides[1] = 0;
        p.dst_strides[0] = 4000;
        check_copy(pool, p, 5, 20000, "expand columns");
      }
      {  // strided source: x[:3, :, 0:14:2] of a dense [4, 6, 20]
        CopyParams p;
        p.rank = 3;
        p.elem_size = elem;
        p.dims[0] = 3;
        p.dims[1] = 6;
        p.dims[2] = 7;
        p.src_strides[0] = 120;
        p.src_strides[1] = 20;
        p.src_strides[2] = 2;
        dense_strides(3, p.dims, p.dst_strides);
        check_copy(pool, p, 4 * 6 * 20, 3 * 6 * 7, "slice");
      }
      {  // cat: copy a dense [3, 5, 7] into channels [2, 7) of a dense [3, 9, 7]
        CopyParams p;
        p.rank = 3;
        p.elem_size = elem;
        p.dims[0] = 3;
        p.dims[1] = 5;
        p.dims[2] = 7;
        dense_strides(3, p.dims, p.src_strides);
        p.dst_strides[0] = 63;
        p.dst_strides[1] = 7;
        p.dst_strides[2] = 1;
        check_copy(pool, p, 105, 3 * 9 * 7, "cat (strided destination)");
      }
      {  // rank 0: one element
        CopyParams p;
        p.rank = 0;
        p.elem_size = elem;
        check_copy(pool, p, 1, 1, "rank 0");
      }
    }
  }
}

TEST_CASE("copy_strided: offsets into larger buffers") {
  // A slice with a base offset and a cat into the middle of a buffer, via pointers.
  ThreadPool pool(3);
  std::vector<float> src = random_floats(4 * 6 * 20, 3);
  Guarded dst(3 * 9 * 7);
  for (size_t i = 0; i < dst.size(); ++i) dst.data()[i] = -1.0f;
  CopyParams p;
  p.rank = 3;
  p.dims[0] = 3;
  p.dims[1] = 5;
  p.dims[2] = 7;
  p.src_strides[0] = 120;
  p.src_strides[1] = 20;
  p.src_strides[2] = 2;
  p.dst_strides[0] = 63;
  p.dst_strides[1] = 7;
  p.dst_strides[2] = 1;
  const float* s = src.data() + 120 + 3;  // x[1:, :5, 3:17:2]
  float* d = dst.data() + 2 * 7;          // channels [2, 7)
  aotc::rt::copy_strided(pool, p, s, d);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t c = 0; c < 9; ++c)
      for (int64_t j = 0; j < 7; ++j) {
        const float got = dst.data()[i * 63 + c * 7 + j];
        const float want = (c >= 2 && c < 7) ? s[i * 120 + (c - 2) * 20 + j * 2] : -1.0f;
        CHECK(got == want);
      }
  CHECK(dst.guards_intact());
}

// The data-movement kernels behind views, indexing and factories: fill,
// tril_triu, index_gather, gather, and copy_strided with negative and zero strides (flip,
// the mirrored pieces of reflect padding). Every element size; outputs compared byte for
// byte with naive references, on odd shapes, with guard bytes after the output.
#include <doctest/doctest.h>

#include <limits>
#include <numeric>

#include "kernel_reference.h"

namespace {

using aotc::rt::ThreadPool;
using namespace aotc::test;

constexpr size_t kGuardBytes = 64;

std::vector<unsigned char> random_bytes(size_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<unsigned char> v(count);
  for (auto& b : v) b = static_cast<unsigned char>(gen());
  return v;
}

// A destination of `bytes` random bytes followed by guard bytes; checks that the guard
// bytes are untouched.
struct Dest {
  explicit Dest(size_t bytes, uint32_t seed) : buf(random_bytes(bytes + kGuardBytes, seed)), size(bytes) {}
  unsigned char* data() { return buf.data(); }
  bool guard_intact(const std::vector<unsigned char>& original) const {
    return std::equal(buf.begin() + static_cast<std::ptrdiff_t>(size), buf.end(),
                      original.begin() + static_cast<std::ptrdiff_t>(size));
  }
  std::vector<unsigned char> payload() const {
    return {buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(size)};
  }
  std::vector<unsigned char> buf;
  size_t size;
};

// Index tensors of elem_size 8 or 4 holding values (some negative, some out of range).
std::vector<unsigned char> index_bytes(const std::vector<int64_t>& values, int64_t elem_size) {
  std::vector<unsigned char> out(values.size() * static_cast<size_t>(elem_size));
  for (size_t i = 0; i < values.size(); ++i) {
    if (elem_size == 8) {
      std::memcpy(out.data() + i * 8, &values[i], 8);
    } else {
      const int32_t v = static_cast<int32_t>(values[i]);
      std::memcpy(out.data() + i * 4, &v, 4);
    }
  }
  return out;
}

// The kernels' documented index rule: negative counts from the end, then clamped.
int64_t ref_index(int64_t v, int64_t size) {
  if (v < 0) v += size;
  return v < 0 ? 0 : (v >= size ? size - 1 : v);
}

}  // namespace

TEST_CASE("fill: every element size, uniform and patterned values") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    for (int64_t elem : {1, 2, 4, 8, 3}) {
      for (int64_t count : {0, 1, 7, 1000, 40001}) {
        for (bool uniform : {true, false}) {
          aotc::rt::FillParams p;
          p.count = count;
          p.elem_size = elem;
          for (int64_t b = 0; b < elem; ++b)
            p.value[b] = static_cast<unsigned char>(uniform ? 0xab : 0x11 * (b + 1));
          const size_t bytes = static_cast<size_t>(count * elem);
          Dest d(bytes, static_cast<uint32_t>(count + elem));
          const auto original = d.buf;
          aotc::rt::fill(pool, p, d.data());
          INFO("elem=" << elem << " count=" << count << " uniform=" << uniform << " threads=" << threads);
          bool ok = true;
          for (size_t i = 0; i < bytes; ++i) ok &= d.buf[i] == p.value[i % static_cast<size_t>(elem)];
          CHECK(ok);
          CHECK(d.guard_intact(original));
        }
      }
    }
  }
}

namespace {
struct Mat {
  int64_t batch, rows, cols;
};
const Mat kMats[] = {{1, 1, 1}, {3, 5, 7}, {2, 9, 4}, {1, 130, 129}};
}  // namespace

TEST_CASE("tril_triu: diagonals inside, on and outside the matrix") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    for (int64_t elem : {1, 4, 8}) {
      for (const Mat& m : kMats) {
        for (int64_t diagonal :
             {std::numeric_limits<int64_t>::min(), int64_t{-200}, int64_t{-3}, int64_t{-1}, int64_t{0},
              int64_t{1}, int64_t{2}, int64_t{6}, int64_t{200}, std::numeric_limits<int64_t>::max()}) {
          for (bool upper : {false, true}) {
            aotc::rt::TriangleParams p;
            const int64_t batch = m.batch, rows = m.rows, cols = m.cols;
            p.batch = batch;
            p.rows = rows;
            p.cols = cols;
            p.diagonal = diagonal;
            p.upper = upper;
            p.elem_size = elem;
            const size_t bytes = static_cast<size_t>(batch * rows * cols * elem);
            const auto x = random_bytes(bytes, 7);
            Dest d(bytes, 9);
            const auto original = d.buf;
            aotc::rt::tril_triu(pool, p, x.data(), d.data());
            std::vector<unsigned char> want(bytes);
            for (int64_t b = 0; b < batch; ++b)
              for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < cols; ++c) {
                  const bool keep = upper ? c - r >= diagonal : c - r <= diagonal;
                  const size_t at = static_cast<size_t>(((b * rows + r) * cols + c) * elem);
                  for (int64_t k = 0; k < elem; ++k)
                    want[at + static_cast<size_t>(k)] = keep ? x[at + static_cast<size_t>(k)] : 0;
                }
            INFO("elem=" << elem << " " << batch << "x" << rows << "x" << cols << " diagonal=" << diagonal
                         << " upper=" << upper);
            CHECK(d.payload() == want);
            CHECK(d.guard_intact(original));
          }
        }
      }
    }
  }
}

TEST_CASE("index_gather: index_select and multi-index advanced indexing") {
  struct Case {
    int64_t outer, inner;
    std::vector<int64_t> sizes;               // indexed dims of x
    std::vector<std::vector<int64_t>> index;  // one list per indexed dim, same length
  };
  const Case cases[] = {
      {1, 1, {5}, {{4, 0, -1, 2, 2}}},                        // 1-d index_select
      {3, 7, {6}, {{5, -6, 3}}},                              // middle dim, negatives
      {2, 13, {4}, {{0, 9, -9, 3}}},                          // out of range: clamped
      {1, 5, {3, 4}, {{0, 2, -1, 1, 2}, {3, 0, 1, -2, 2}}},   // x[i, j]
      {4, 1, {2, 3, 5}, {{1, 0, 1}, {2, 2, 0}, {4, -5, 3}}},  // three index tensors
      {5, 3, {7}, {{}}},                                      // no indices
      {2, 1000, {3}, std::vector<std::vector<int64_t>>{std::vector<int64_t>(40, 1)}},  // threads
  };
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    for (const Case& c : cases)
      for (int64_t elem : {1, 2, 4, 8})
        for (int64_t index_elem : {8, 4}) {
          const int64_t k = static_cast<int64_t>(c.sizes.size());
          const int64_t count = static_cast<int64_t>(c.index[0].size());
          const int64_t blocks =
              std::accumulate(c.sizes.begin(), c.sizes.end(), int64_t{1}, std::multiplies<>());
          aotc::rt::IndexGatherParams p;
          p.outer = c.outer;
          p.count = count;
          p.inner = c.inner;
          p.elem_size = elem;
          p.num_indices = static_cast<int32_t>(k);
          std::vector<std::vector<unsigned char>> idx_bytes;
          std::vector<const void*> idx;
          for (int64_t i = 0; i < k; ++i) {
            p.sizes[i] = c.sizes[static_cast<size_t>(i)];
            p.index_elem_size[i] = index_elem;
            idx_bytes.push_back(index_bytes(c.index[static_cast<size_t>(i)], index_elem));
          }
          for (const auto& b : idx_bytes) idx.push_back(b.data());
          const auto x = random_bytes(static_cast<size_t>(c.outer * blocks * c.inner * elem), 3);
          const size_t bytes = static_cast<size_t>(c.outer * count * c.inner * elem);
          Dest d(bytes, 5);
          const auto original = d.buf;
          aotc::rt::index_gather(pool, p, x.data(), idx.data(), d.data());
          std::vector<unsigned char> want(bytes);
          const size_t block = static_cast<size_t>(c.inner * elem);
          for (int64_t o = 0; o < c.outer; ++o)
            for (int64_t n = 0; n < count; ++n) {
              int64_t b = 0;
              for (int64_t i = 0; i < k; ++i)
                b = b * c.sizes[static_cast<size_t>(i)] +
                    ref_index(c.index[static_cast<size_t>(i)][static_cast<size_t>(n)],
                              c.sizes[static_cast<size_t>(i)]);
              std::memcpy(want.data() + static_cast<size_t>(o * count + n) * block,
                          x.data() + static_cast<size_t>(o * blocks + b) * block, block);
            }
          INFO("outer=" << c.outer << " inner=" << c.inner << " k=" << k << " elem=" << elem
                        << " index_elem=" << index_elem << " threads=" << threads);
          CHECK(d.payload() == want);
          CHECK(d.guard_intact(original));
        }
  }
}

TEST_CASE("gather: along every dim, with broadcast (stride 0) input dims") {
  struct Case {
    std::vector<int64_t> x_dims, index_dims;
    int dim;
    bool broadcast_first;  // x's dim 0 has size 1 and is read with stride 0
  };
  const Case cases[] = {
      {{5}, {9}, 0, false},
      {{4, 7}, {4, 3}, 1, false},
      {{4, 7}, {2, 7}, 0, false},
      {{3, 5, 6}, {2, 4, 9}, 2, false},
      {{1, 5, 6}, {3, 5, 2}, 1, true},
      {{2, 3, 4, 5}, {2, 3, 7, 5}, 2, false},
      {{60, 40}, {60, 300}, 1, false},  // several threads
  };
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    for (const Case& c : cases)
      for (int64_t elem : {1, 4, 8})
        for (int64_t index_elem : {8, 4}) {
          const int rank = static_cast<int>(c.x_dims.size());
          aotc::rt::GatherParams p;
          p.rank = rank;
          p.dim = c.dim;
          p.elem_size = elem;
          p.index_elem_size = index_elem;
          p.x_dim_size = c.x_dims[static_cast<size_t>(c.dim)];
          int64_t x_strides[8];
          dense_strides(rank, c.x_dims.data(), x_strides);
          for (int d = 0; d < rank; ++d) {
            p.dims[d] = c.index_dims[static_cast<size_t>(d)];
            p.x_strides[d] = (c.broadcast_first && d == 0) ? 0 : x_strides[d];
          }
          const int64_t total =
              std::accumulate(c.index_dims.begin(), c.index_dims.end(), int64_t{1}, std::multiplies<>());
          std::mt19937 gen(11);
          std::vector<int64_t> values(static_cast<size_t>(total));
          for (auto& v : values)
            v = static_cast<int64_t>(gen() % static_cast<uint32_t>(3 * p.x_dim_size)) - p.x_dim_size - 2;
          const auto index = index_bytes(values, index_elem);
          const int64_t x_total =
              std::accumulate(c.x_dims.begin(), c.x_dims.end(), int64_t{1}, std::multiplies<>());
          const auto x = random_bytes(static_cast<size_t>(x_total * elem), 13);
          const size_t bytes = static_cast<size_t>(total * elem);
          Dest d(bytes, 17);
          const auto original = d.buf;
          aotc::rt::gather(pool, p, x.data(), index.data(), d.data());
          std::vector<unsigned char> want(bytes);
          for (int64_t i = 0; i < total; ++i) {
            int64_t rem = i, off = 0;
            for (int dd = rank - 1; dd >= 0; --dd) {
              int64_t at = rem % p.dims[dd];
              rem /= p.dims[dd];
              if (dd == c.dim) at = ref_index(values[static_cast<size_t>(i)], p.x_dim_size);
              off += at * p.x_strides[dd];
            }
            std::memcpy(want.data() + i * elem, x.data() + off * elem, static_cast<size_t>(elem));
          }
          INFO("x=" << dims_str(rank, c.x_dims.data()) << " dim=" << c.dim << " elem=" << elem
                    << " index_elem=" << index_elem << " threads=" << threads);
          CHECK(d.payload() == want);
          CHECK(d.guard_intact(original));
        }
  }
}

TEST_CASE("copy_strided: negative and zero source strides (flip, reflect, replicate)") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    for (int64_t elem : {1, 2, 4, 8, 3}) {
      // x: a dense [4, 6, 35]; read x.flip(0, 2) with an edge column repeated, into a
      // dense destination. The source pointer is at the view's first element.
      struct Case {
        int64_t s0, s1, s2;  // source strides of the [4, 6, 35] view
        int64_t offset;      // element offset of the view's first element
      };
      const Case cases[] = {
          {-210, 35, -1, 3 * 210 + 34},  // flip(0, 2)
          {210, -35, 1, 5 * 35},         // flip(1): rows stay contiguous
          {210, 35, 0, 17},              // replicate one column
          {0, -35, -1, 5 * 35 + 34},     // broadcast + flips
      };
      for (const Case& c : cases) {
        aotc::rt::CopyParams p;
        p.rank = 3;
        p.elem_size = elem;
        p.dims[0] = 4;
        p.dims[1] = 6;
        p.dims[2] = 35;
        p.src_strides[0] = c.s0;
        p.src_strides[1] = c.s1;
        p.src_strides[2] = c.s2;
        dense_strides(3, p.dims, p.dst_strides);
        const auto x = random_bytes(static_cast<size_t>(4 * 6 * 35 * elem), 19);
        const size_t bytes = static_cast<size_t>(4 * 6 * 35 * elem);
        Dest d(bytes, 23);
        const auto original = d.buf;
        std::vector<unsigned char> want = d.buf;
        ref_copy(p, x.data() + c.offset * elem, want.data());
        aotc::rt::copy_strided(pool, p, x.data() + c.offset * elem, d.data());
        INFO("strides " << c.s0 << "," << c.s1 << "," << c.s2 << " elem=" << elem << " threads=" << threads);
        CHECK(d.buf == want);
        CHECK(d.guard_intact(original));
      }
    }
  }
}

TEST_CASE("scatter: src and value, every dim, last write wins") {
  struct Case {
    std::vector<int64_t> y_dims, index_dims;
    int dim;
  };
  const Case cases[] = {{{5}, {7}, 0}, {{4, 7}, {3, 5}, 1}, {{4, 7}, {6, 2}, 0}, {{3, 5, 6}, {2, 4, 9}, 2}};
  ThreadPool pool(3);
  for (const Case& c : cases)
    for (int64_t elem : {1, 4, 8})
      for (bool with_src : {true, false}) {
        const int rank = static_cast<int>(c.y_dims.size());
        aotc::rt::ScatterParams p;
        p.rank = rank;
        p.dim = c.dim;
        p.elem_size = elem;
        p.index_elem_size = 8;
        p.y_dim_size = c.y_dims[static_cast<size_t>(c.dim)];
        dense_strides(rank, c.y_dims.data(), p.y_strides);
        int64_t src_strides[8];
        dense_strides(rank, c.index_dims.data(), src_strides);  // src has the index's shape
        for (int d = 0; d < rank; ++d) {
          p.dims[d] = c.index_dims[static_cast<size_t>(d)];
          p.src_strides[d] = with_src ? src_strides[d] : 0;
        }
        const int64_t total =
            std::accumulate(c.index_dims.begin(), c.index_dims.end(), int64_t{1}, std::multiplies<>());
        const int64_t y_total =
            std::accumulate(c.y_dims.begin(), c.y_dims.end(), int64_t{1}, std::multiplies<>());
        std::mt19937 gen(29);
        std::vector<int64_t> values(static_cast<size_t>(total));
        for (auto& v : values)
          v = static_cast<int64_t>(gen() % static_cast<uint32_t>(2 * p.y_dim_size)) - p.y_dim_size;
        const auto index = index_bytes(values, 8);
        const auto src = random_bytes(static_cast<size_t>((with_src ? total : 1) * elem), 31);
        Dest d(static_cast<size_t>(y_total * elem), 37);
        const auto original = d.buf;
        std::vector<unsigned char> want = d.payload();
        for (int64_t i = 0; i < total; ++i) {  // in index order: later writes win
          int64_t rem = i, off = 0, s_off = 0;
          for (int dd = rank - 1; dd >= 0; --dd) {
            int64_t at = rem % p.dims[dd];
            rem /= p.dims[dd];
            s_off += at * p.src_strides[dd];
            if (dd == c.dim) at = ref_index(values[static_cast<size_t>(i)], p.y_dim_size);
            off += at * p.y_strides[dd];
          }
          std::memcpy(want.data() + off * elem, src.data() + s_off * elem, static_cast<size_t>(elem));
        }
        aotc::rt::scatter(pool, p, src.data(), index.data(), d.data());
        INFO("y=" << dims_str(rank, c.y_dims.data()) << " dim=" << c.dim << " elem=" << elem
                  << " src=" << with_src);
        CHECK(d.payload() == want);
        CHECK(d.guard_intact(original));
      }
}

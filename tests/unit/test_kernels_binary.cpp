// binary_f32 with torch-style broadcasting: the output shape comes from right-aligned
// a/b shapes; a broadcast dim has stride 0.
#include <doctest/doctest.h>

#include <algorithm>

#include "kernel_reference.h"

namespace {

using aotc::rt::BinaryOp;
using aotc::rt::BinaryParams;
using aotc::rt::ThreadPool;
using namespace aotc::test;

using Shape = std::vector<int64_t>;

// Strides of an operand of shape s (dense) seen through the broadcast output shape.
void broadcast_strides(const Shape& s, const Shape& out, int64_t* strides) {
  const size_t lead = out.size() - s.size();
  int64_t dense = 1;
  for (size_t d = out.size(); d-- > 0;) {
    if (d < lead || s[d - lead] == 1) {
      strides[d] = 0;
    } else {
      strides[d] = dense;
      dense *= s[d - lead];
    }
  }
}

Shape broadcast_shape(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    out[i] = std::max(da, db);
  }
  return out;
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

struct OpCase {
  BinaryOp op;
  float alpha;
};
const OpCase kOps[] = {{BinaryOp::Add, 1.0f},  {BinaryOp::Add, 2.5f}, {BinaryOp::Sub, 1.0f},
                       {BinaryOp::Sub, -0.5f}, {BinaryOp::Mul, 1.0f}, {BinaryOp::Div, 1.0f}};

void check_binary(ThreadPool& pool, const BinaryParams& p, const std::vector<float>& a,
                  const std::vector<float>& b, const std::string& what) {
  const int64_t total = index_space_size(p.rank, p.out_dims);
  Guarded y(static_cast<size_t>(total));
  aotc::rt::binary_f32(pool, p, a.data(), b.data(), y.data());
  INFO(what << " op=" << int(p.op) << " alpha=" << p.alpha << " threads=" << pool.size());
  CHECK(rel_l2(y.values(), ref_binary(p, a.data(), b.data())) <= kTolerance);
  CHECK(y.guards_intact());
}

}  // namespace

TEST_CASE("binary_f32: broadcasting patterns x ops") {
  struct Case {
    const char* name;
    Shape a, b;
  };
  const Case cases[] = {
      {"same shape", {2, 3, 17, 13}, {2, 3, 17, 13}},
      {"same shape large", {200003}, {200003}},
      {"b scalar 0-d", {5, 7, 33}, {}},
      {"b scalar 1-element", {5, 7, 33}, {1, 1, 1}},
      {"a scalar", {}, {4, 9}},
      {"per-channel NCHW", {2, 16, 9, 9}, {1, 16, 1, 1}},
      {"per-channel CHW", {2, 16, 9, 9}, {16, 1, 1}},
      {"per-channel large", {3, 64, 40, 40}, {64, 1, 1}},
      {"leading dim (bias row)", {8, 33}, {33}},
      {"leading dim large", {1000, 257}, {257}},
      {"middle dim", {4, 5, 6}, {4, 1, 6}},
      {"both sides", {7, 1}, {1, 13}},
      {"both sides 3-d", {3, 1, 5}, {1, 4, 1}},
      {"both sides large", {300, 1}, {1, 301}},
      {"a broadcast over leading", {33}, {8, 33}},
      {"size-1 dims", {1, 17, 1}, {1, 17, 1}},
      {"single element", {1}, {1}},
      {"rank 8", {2, 1, 3, 2, 1, 2, 3, 2}, {1, 2, 3, 1, 2, 2, 1, 2}},
  };
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 61;
    for (const Case& c : cases)
      for (const OpCase& oc : kOps) {
        const Shape out = broadcast_shape(c.a, c.b);
        BinaryParams p;
        p.op = oc.op;
        p.alpha = oc.alpha;
        p.rank = static_cast<int32_t>(out.size());
        for (size_t d = 0; d < out.size(); ++d) p.out_dims[d] = out[d];
        broadcast_strides(c.a, out, p.a_strides);
        broadcast_strides(c.b, out, p.b_strides);
        const auto a = random_floats(static_cast<size_t>(numel(c.a)), ++seed);
        // Divisors away from zero keep the relative error meaningful.
        const auto b = random_floats(static_cast<size_t>(numel(c.b)), ++seed, 0.5f, 1.5f);
        check_binary(pool, p, a, b, c.name);
      }
  }
}

TEST_CASE("binary_f32: permuted (non-contiguous) inputs") {
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    // a is the transpose of a dense 13 x 17 buffer; b a permuted 3-d view; both 17 x 13.
    BinaryParams p;
    p.rank = 2;
    p.out_dims[0] = 17;
    p.out_dims[1] = 13;
    p.a_strides[0] = 1;
    p.a_strides[1] = 17;
    p.b_strides[0] = 13;
    p.b_strides[1] = 1;
    const auto a = random_floats(13 * 17, 1);
    const auto b = random_floats(13 * 17, 2, 0.5f, 1.5f);
    for (const OpCase& oc : kOps) {
      p.op = oc.op;
      p.alpha = oc.alpha;
      check_binary(pool, p, a, b, "transposed a");
    }
    // out [4, 50, 90] from a stored [90, 4, 50] (permute 1, 2, 0) and b stored [50, 90, 4].
    BinaryParams q;
    q.rank = 3;
    q.out_dims[0] = 4;
    q.out_dims[1] = 50;
    q.out_dims[2] = 90;
    q.a_strides[0] = 50;
    q.a_strides[1] = 1;
    q.a_strides[2] = 200;
    q.b_strides[0] = 1;
    q.b_strides[1] = 360;
    q.b_strides[2] = 4;
    const auto a3 = random_floats(18000, 3);
    const auto b3 = random_floats(18000, 4, 0.5f, 1.5f);
    for (const OpCase& oc : kOps) {
      q.op = oc.op;
      q.alpha = oc.alpha;
      check_binary(pool, q, a3, b3, "permuted 3-d");
    }
  }
}

TEST_CASE("binary_f32: in place on a (y == a) with broadcast b") {
  ThreadPool pool(3);
  BinaryParams p;
  p.op = BinaryOp::Add;
  p.rank = 4;
  const int64_t dims[4] = {2, 32, 30, 30};
  for (int d = 0; d < 4; ++d) p.out_dims[d] = dims[d];
  dense_strides(4, dims, p.a_strides);
  p.b_strides[1] = 1;  // per-channel
  const auto a = random_floats(2 * 32 * 900, 9);
  const auto b = random_floats(32, 10);
  const auto want = ref_binary(p, a.data(), b.data());
  Guarded y(a.size(), a);
  aotc::rt::binary_f32(pool, p, y.data(), b.data(), y.data());
  CHECK(rel_l2(y.values(), want) <= kTolerance);
  CHECK(y.guards_intact());
}

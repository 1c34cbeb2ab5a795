// attention_f32 (fused scaled dot-product attention) against a naive double-precision
// reference: odd sizes, strided (packed QKV) operands, every mask kind, causal, broadcast
// masks, fully masked rows, attention weights per head and averaged, with and without the
// planned per-thread scratch.
#include <doctest/doctest.h>

#include "kernel_reference.h"

using aotc::rt::AttentionMask;
using aotc::rt::AttentionParams;
using aotc::rt::AttentionWeights;
using aotc::rt::ThreadPool;
using namespace aotc::test;

namespace {

struct Reference {
  std::vector<double> out, probs;
};

bool masked_out(const AttentionParams& p, const float* mf, const uint8_t* mb, int64_t off, double& add) {
  add = 0.0;
  switch (p.mask_kind) {
    case AttentionMask::None:
      return false;
    case AttentionMask::Additive:
      add = mf[off];
      return std::isinf(add) && add < 0;
    case AttentionMask::KeepIfTrue:
      return mb[off] == 0;
    case AttentionMask::DropIfTrue:
      return mb[off] != 0;
    case AttentionMask::DropIfNonzero:
      return mf[off] != 0.0f;
  }
  return false;
}

// out[b, h, i, :] in the layout of p.out_strides (given as a dense-size buffer); probs dense.
Reference reference(const AttentionParams& p, const float* q, const float* k, const float* v,
                    const void* mask, size_t out_size) {
  Reference r;
  r.out.assign(out_size, std::nan(""));
  const int64_t probs_heads = p.weights == AttentionWeights::HeadMean ? 1 : p.heads;
  r.probs.assign(static_cast<size_t>(p.batch * probs_heads * p.q_len * p.kv_len), 0.0);
  const auto* mf = static_cast<const float*>(mask);
  const auto* mb = static_cast<const uint8_t*>(mask);
  std::vector<double> s(static_cast<size_t>(p.kv_len));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t i = 0; i < p.q_len; ++i) {
        double mx = -INFINITY;
        std::vector<bool> closed(static_cast<size_t>(p.kv_len));
        for (int64_t j = 0; j < p.kv_len; ++j) {
          double dot = 0.0;
          for (int64_t e = 0; e < p.head_dim; ++e)
            dot += double(q[b * p.q_strides[0] + h * p.q_strides[1] + i * p.q_strides[2] + e]) *
                   k[b * p.k_strides[0] + h * p.k_strides[1] + j * p.k_strides[2] + e];
          double add = 0.0;
          const int64_t moff =
              b * p.mask_strides[0] + h * p.mask_strides[1] + i * p.mask_strides[2] + j * p.mask_strides[3];
          bool c = mask && masked_out(p, mf, mb, moff, add);
          c = c || (p.causal && j > i);
          closed[static_cast<size_t>(j)] = c;
          s[static_cast<size_t>(j)] = dot * p.scale + add;
          if (!c) mx = std::max(mx, s[static_cast<size_t>(j)]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < p.kv_len; ++j) {
          double& x = s[static_cast<size_t>(j)];
          x = closed[static_cast<size_t>(j)] || mx == -INFINITY ? 0.0 : std::exp(x - mx);
          sum += x;
        }
        for (int64_t j = 0; j < p.kv_len; ++j)
          s[static_cast<size_t>(j)] = sum > 0 ? s[static_cast<size_t>(j)] / sum : 0.0;
        for (int64_t e = 0; e < p.v_head_dim; ++e) {
          double acc = 0.0;
          for (int64_t j = 0; j < p.kv_len; ++j)
            acc += s[static_cast<size_t>(j)] *
                   v[b * p.v_strides[0] + h * p.v_strides[1] + j * p.v_strides[2] + e];
          r.out[static_cast<size_t>(b * p.out_strides[0] + h * p.out_strides[1] + i * p.out_strides[2] + e)] =
              acc;
        }
        if (p.weights == AttentionWeights::PerHead) {
          for (int64_t j = 0; j < p.kv_len; ++j)
            r.probs[static_cast<size_t>(((b * p.heads + h) * p.q_len + i) * p.kv_len + j)] =
                s[static_cast<size_t>(j)];
        } else if (p.weights == AttentionWeights::HeadMean) {
          for (int64_t j = 0; j < p.kv_len; ++j)
            r.probs[static_cast<size_t>((b * p.q_len + i) * p.kv_len + j)] +=
                s[static_cast<size_t>(j)] / double(p.heads);
        }
      }
  return r;
}

struct Case {
  int64_t batch, heads, q_len, kv_len, head_dim, v_head_dim;
  AttentionMask mask;
  int mask_layout;  // 0: full [B, H, L, S]; 1: [L, S]; 2: [B, S] (key padding); 3: [H, 1, S]
  bool causal;
  AttentionWeights weights;
  bool packed;  // q, k, v interleaved in one [B, L, 3, H, E] projection (L == S, E == Ev)
};

void run_case(ThreadPool& pool, const Case& c, uint32_t seed, bool with_scratch) {
  AttentionParams p;
  p.batch = c.batch;
  p.heads = c.heads;
  p.q_len = c.q_len;
  p.kv_len = c.kv_len;
  p.head_dim = c.head_dim;
  p.v_head_dim = c.v_head_dim;
  p.scale = 1.0f / std::sqrt(float(c.head_dim));
  p.causal = c.causal;
  p.mask_kind = c.mask;
  p.weights = c.weights;
  std::vector<float> qbuf, kbuf, vbuf;
  const float *q, *k, *v;
  if (c.packed) {
    const int64_t E = c.head_dim, H = c.heads, row = 3 * H * E;
    qbuf = random_floats(static_cast<size_t>(c.batch * c.q_len * row), seed);
    const int64_t strides[3] = {c.q_len * row, E, row};
    std::copy(strides, strides + 3, p.q_strides);
    std::copy(strides, strides + 3, p.k_strides);
    std::copy(strides, strides + 3, p.v_strides);
    q = qbuf.data();
    k = qbuf.data() + H * E;
    v = qbuf.data() + 2 * H * E;
  } else {  // [B, H, L, E] with padded rows
    const int64_t qr = c.head_dim + 3, kr = c.head_dim + 1, vr = c.v_head_dim + 2;
    qbuf = random_floats(static_cast<size_t>(c.batch * c.heads * c.q_len * qr), seed, -2.0f, 2.0f);
    kbuf = random_floats(static_cast<size_t>(c.batch * c.heads * c.kv_len * kr), seed + 1, -2.0f, 2.0f);
    vbuf = random_floats(static_cast<size_t>(c.batch * c.heads * c.kv_len * vr), seed + 2);
    const int64_t qs[3] = {c.heads * c.q_len * qr, c.q_len * qr, qr};
    const int64_t ks[3] = {c.heads * c.kv_len * kr, c.kv_len * kr, kr};
    const int64_t vs[3] = {c.heads * c.kv_len * vr, c.kv_len * vr, vr};
    std::copy(qs, qs + 3, p.q_strides);
    std::copy(ks, ks + 3, p.k_strides);
    std::copy(vs, vs + 3, p.v_strides);
    q = qbuf.data();
    k = kbuf.data();
    v = vbuf.data();
  }
  // Output [B, L, H, Ev]: the layout the output projection reads.
  const int64_t os[3] = {c.q_len * c.heads * c.v_head_dim, c.v_head_dim, c.heads * c.v_head_dim};
  std::copy(os, os + 3, p.out_strides);

  // The mask, with a few fully masked rows for the masking kinds.
  std::vector<float> mf;
  std::vector<uint8_t> mb;
  const void* mask = nullptr;
  if (c.mask != AttentionMask::None) {
    int64_t dims[4] = {c.batch, c.heads, c.q_len, c.kv_len};
    if (c.mask_layout == 1) dims[0] = dims[1] = 1;
    if (c.mask_layout == 2) dims[1] = dims[2] = 1;
    if (c.mask_layout == 3) dims[0] = dims[2] = 1;
    const int64_t st[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
    for (int d = 0; d < 4; ++d) p.mask_strides[d] = dims[d] == 1 ? 0 : st[d];
    const size_t n = static_cast<size_t>(dims[0] * dims[1] * dims[2] * dims[3]);
    const auto r = random_floats(n, seed + 3, 0.0f, 1.0f);
    const bool keep_style = c.mask == AttentionMask::KeepIfTrue;
    if (c.mask == AttentionMask::Additive) {
      mf = random_floats(n, seed + 4, -3.0f, 3.0f);
      for (size_t i = 0; i < n; ++i)
        if (r[i] < 0.3f) mf[i] = -INFINITY;
      mask = mf.data();
    } else if (c.mask == AttentionMask::DropIfNonzero) {
      mf.assign(n, 0.0f);
      for (size_t i = 0; i < n; ++i)
        if (r[i] < 0.3f) mf[i] = i % 2 ? -INFINITY : 0.5f;
      mask = mf.data();
    } else {
      mb.resize(n);
      for (size_t i = 0; i < n; ++i) mb[i] = (r[i] < 0.3f) != keep_style;
      mask = mb.data();
    }
    // Close every key of the mask's first row: a fully masked row (all rows of the first
    // batch for a key padding mask, of the first head for a per-head one) must give zeros.
    for (int64_t j = 0; j < c.kv_len; ++j) {
      if (!mf.empty()) mf[static_cast<size_t>(j)] = -INFINITY;
      if (!mb.empty()) mb[static_cast<size_t>(j)] = keep_style ? 0 : 1;
    }
  }

  const size_t out_size = static_cast<size_t>(c.batch * c.q_len * c.heads * c.v_head_dim);
  const size_t probs_size = static_cast<size_t>(
      c.batch * (c.weights == AttentionWeights::HeadMean ? 1 : c.heads) * c.q_len * c.kv_len);
  Guarded out(out_size), probs(probs_size);
  {
    PoolScratch scratch(pool, with_scratch ? aotc::rt::attention_thread_scratch_bytes(p) : 0);
    aotc::rt::attention_f32(pool, p, q, k, v, mask, out.data(),
                            c.weights == AttentionWeights::None ? nullptr : probs.data());
    CHECK(scratch.guard_intact());
  }
  const Reference want = reference(p, q, k, v, mask, out_size);
  INFO("B=" << c.batch << " H=" << c.heads << " L=" << c.q_len << " S=" << c.kv_len << " E=" << c.head_dim
            << " Ev=" << c.v_head_dim << " mask=" << int(c.mask) << "/" << c.mask_layout
            << " causal=" << c.causal << " weights=" << int(c.weights) << " packed=" << c.packed
            << " threads=" << pool.size() << " scratch=" << with_scratch);
  CHECK(rel_l2(out.values(), want.out) <= kTolerance);
  CHECK(out.guards_intact());
  if (c.weights != AttentionWeights::None) {
    CHECK(rel_l2(probs.values(), want.probs) <= kTolerance);
    CHECK(probs.guards_intact());
    // A closed key (masked or causal) weighs exactly 0, on 8 lanes, 16 lanes and scalar.
    size_t nonzero_closed = 0;
    for (size_t i = 0; i < want.probs.size(); ++i)
      nonzero_closed += want.probs[i] == 0.0 && probs.data()[i] != 0.0f;
    CHECK(nonzero_closed == 0);
  }
}

}  // namespace

TEST_CASE("attention_f32: shapes x masks x causal x weights x layouts") {
  using M = AttentionMask;
  using W = AttentionWeights;
  const Case cases[] = {
      {1, 1, 1, 1, 1, 1, M::None, 0, false, W::None, false},
      {2, 3, 7, 5, 4, 6, M::None, 0, false, W::PerHead, false},
      {2, 3, 7, 5, 4, 6, M::Additive, 0, false, W::None, false},
      {1, 4, 33, 33, 16, 16, M::None, 0, true, W::HeadMean, false},       // causal over two row blocks
      {3, 2, 40, 70, 9, 5, M::KeepIfTrue, 0, false, W::PerHead, false},   // SDPA bool mask
      {2, 4, 17, 17, 8, 8, M::DropIfTrue, 2, false, W::HeadMean, true},   // key padding, packed QKV
      {2, 4, 17, 17, 8, 8, M::DropIfNonzero, 0, false, W::None, true},    // the MHA fast path's float mask
      {2, 3, 65, 65, 12, 12, M::DropIfTrue, 1, false, W::None, true},     // [L, S] mask
      {2, 3, 9, 31, 7, 3, M::Additive, 3, false, W::None, false},         // per-head mask over rows
      {1, 12, 128, 128, 64, 64, M::KeepIfTrue, 2, false, W::None, true},  // BERT-base sized head
      {2, 2, 50, 20, 5, 5, M::Additive, 1, true, W::PerHead, false},      // causal with L > S
      {2, 2, 19, 37, 24, 20, M::None, 0, false, W::None, false},          // a whole and a ragged value panel
      // V read in place (head width a multiple of 16): vit_b_16's head (row blocks of 36 and
      // a last one of 17), causal over padded rows with a last block of one row, probabilities
      // returned (normalised in the scores) and not (normalised in the output).
      {1, 3, 197, 197, 64, 64, M::None, 0, false, W::None, true},
      {2, 2, 37, 45, 16, 32, M::Additive, 0, true, W::PerHead, false},
      {1, 2, 73, 73, 8, 16, M::DropIfTrue, 2, false, W::None, false},
  };
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 1000;
    for (const Case& c : cases) {
      run_case(pool, c, seed += 7, true);
      run_case(pool, c, seed += 7, false);
    }
  }
}

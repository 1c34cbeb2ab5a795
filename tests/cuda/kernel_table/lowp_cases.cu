// Activations kept in the 16-bit type of --precision fp16 / bf16
// (store_activations_16bit.cpp):
// - gemm_16bit_output against a sum in double over the same 16-bit operands, on each of
//   its paths (cuBLASLt's fused epilogue; the product and then epilogue_16bit, for a bias
//   that is not 16-byte aligned and with cuBLASLt off), with and without bias, GELU (erf
//   and tanh) and SiLU (cuBLASLt's bias, then the pass), residual and relu, an A rounded from
//   float32 or already 16-bit, odd sizes, rows of whole 8-element groups and k = 0;
// - layer_norm_16bit against the host's float32 layer norm (the warp and block kernels, a
//   row order, an output off its alignment), and layer_norm_16bit_input on 16-bit rows
//   (float32 and 16-bit outputs, an input off its alignment) against it on the widened rows;
// - attention_16bit_output against attention_f32 rounded once, on each of its paths (the
//   three launches may multiply in another order: within an ulp of the type);
// - the 16-bit tensor-core attention past 64 keys (attention_mma_16bit), float32 and 16-bit
//   outputs, against the host's float32 attention: every mask kind, causal rows, fully
//   masked rows, odd head sizes, strides that forbid 16-byte copies, both head sizes of its
//   rows (64, 128), and forced splits of the rows and keys over a block's warps;
// - im2col_nhwc_16bit_input against im2col_nhwc_16bit over the same values in float32
//   (equal, NaN and infinities included), with 16-byte, 8-byte and single-element moves;
// - unfoldings of channel counts that are not whole vectors (NCHW and NHWC, the float32
//   and 16-bit columns) against the host's.
#include <aotc/rt/cuda/attention_plan.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdlib>
#include <numbers>

#include "kernel_table.h"

namespace aotc::test {
namespace {

using rt::cuda::Precision;

void gemm_16bit_output_cases(KernelTable& t) {
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{49, 64, 72}, {197, 100, 40}, {3, 5, 7}, {130, 24, 0}};
  enum class Path { Fused, MisalignedBias, NoLt };
  for (const Precision precision : {Precision::Fp16, Precision::Bf16}) {
    rt::cuda::Exec ex = t.exec();
    ex.precision = precision;
    for (const Shape& s : shapes)
      for (const Path path : {Path::Fused, Path::MisalignedBias, Path::NoLt})
        for (int variant = 0; variant < 9; ++variant) {
          // 0-3: the bias, residual and relu; 4-6: a GELU (erf, tanh, erf) after the bias
          // (none in 6), before a residual (in 5 and 6); 7-8: a SiLU after the bias (none in
          // 8), before a residual (in 8).
          const auto activation = variant >= 7   ? rt::GemmActivation::Silu
                                  : variant == 5 ? rt::GemmActivation::GeluTanh
                                  : variant >= 4 ? rt::GemmActivation::GeluErf
                                                 : rt::GemmActivation::None;
          const bool bias = (variant != 1 && variant != 6 && variant != 8) || path == Path::MisalignedBias,
                     residual = variant >= 2 && variant != 4 && variant != 7,
                     relu = variant % 2 == 0 && variant < 4,
                     a_float = variant == 3 || variant == 5 || variant == 8;
          const size_t m = static_cast<size_t>(s.m), n = static_cast<size_t>(s.n),
                       k = static_cast<size_t>(s.k);
          // The operands as the GPU sees them: 16-bit values (A rounded from float32 where
          // a_float, which the kernel then rounds the same way).
          const std::vector<float> a32 = t.floats(m * k), b32 = t.floats(n * k), bias32 = t.floats(n + 1),
                                   res32 = t.floats(m * n, false, 2.0f);
          const std::vector<uint16_t> a = to_bits(a32, precision), b = to_bits(b32, precision),
                                      bias16 = to_bits(bias32, precision), res16 = to_bits(res32, precision);
          const int shift = path == Path::MisalignedBias ? 1 : 0;
          std::vector<float> want(m * n);
          for (size_t i = 0; i < m; ++i)
            for (size_t j = 0; j < n; ++j) {
              double sum = 0.0;
              for (size_t l = 0; l < k; ++l)
                sum += static_cast<double>(value_of(a[i * k + l], precision)) *
                       value_of(b[j * k + l], precision);
              if (bias) sum += value_of(bias16[j + static_cast<size_t>(shift)], precision);
              if (activation == rt::GemmActivation::GeluErf)
                sum = 0.5 * sum * (1.0 + std::erf(sum / std::sqrt(2.0)));
              if (activation == rt::GemmActivation::Silu) sum = sum / (1.0 + std::exp(-sum));
              if (activation == rt::GemmActivation::GeluTanh)
                sum =
                    0.5 * sum *
                    (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (sum + 0.044715 * sum * sum * sum)));
              if (residual) sum += value_of(res16[i * n + j], precision);
              if (relu && sum < 0.0) sum = 0.0;
              want[i * n + j] = static_cast<float>(sum);
            }
          rt::GemmParams p;
          p.m = s.m, p.n = s.n, p.k = s.k;
          p.trans_b = true;
          p.lda = s.k, p.ldb = s.k, p.ldc = s.n, p.ldr = s.n;
          p.bias_kind = bias ? rt::BiasKind::PerColumn : rt::BiasKind::None;
          if (relu) p.clamp_lo = 0.0f;
          p.activation = activation;
          const void* da = a_float ? static_cast<const void*>(t.upload(a32)) : t.upload(a);
          const uint16_t* dbias = t.upload(bias16) + shift;
          uint16_t* c = t.device<uint16_t>(m * n);
          void* scratch = t.device<unsigned char>(
              static_cast<size_t>(rt::cuda::gemm_16bit_scratch_bytes(p, !a_float, true)) + 1);
          if (path == Path::NoLt) setenv("AOTC_CUDA_NO_LT", "1", 1);
          rt::cuda::gemm_16bit_output(ex, p, da, !a_float, t.upload(b), true, bias ? dbias : nullptr,
                                      residual ? t.upload(res16) : nullptr, c, scratch);
          const std::vector<float> got = to_floats(t.download(c, m * n), precision);
          if (path == Path::NoLt) unsetenv("AOTC_CUDA_NO_LT");
          const char* how = path == Path::Fused            ? "cuBLASLt epilogue"
                            : path == Path::MisalignedBias ? "bias off 16 bytes"
                                                           : "AOTC_CUDA_NO_LT";
          const std::string what = dims_str({s.m, s.n, s.k}) + ", " + how + (bias ? ", bias" : "") +
                                   (activation == rt::GemmActivation::GeluErf    ? ", GELU (erf)"
                                    : activation == rt::GemmActivation::GeluTanh ? ", GELU (tanh)"
                                    : activation == rt::GemmActivation::Silu     ? ", SiLU"
                                                                                 : "") +
                                   (residual ? ", residual" : "") + (relu ? ", relu" : "") +
                                   (a_float ? ", A float32" : "");
          // One rounding of the result, two where the epilogue adds to a rounded product.
          t.expect_close(std::string("gemm_16bit_output (") + name_of(precision) + ")", what, want, got,
                         precision == Precision::Fp16 ? 2e-3 : 1.6e-2);
        }
  }
}

// The host's float32 layer norm of p.rows rows, row r reading x's row r or, with a row
// order (RowGather: blocks of order.size() rows, each from src_period source rows), row
// (r / period) * src_period + order[r % period].
std::vector<float> layer_norm_reference(KernelTable& t, const rt::LayerNormParams& p,
                                        const std::vector<float>& x, const std::vector<int32_t>& order,
                                        size_t src_period, const std::vector<float>& gamma,
                                        const std::vector<float>& beta) {
  const size_t cols = static_cast<size_t>(p.cols), period = order.size();
  std::vector<float> rows(static_cast<size_t>(p.rows) * cols);
  for (size_t r = 0; r < static_cast<size_t>(p.rows); ++r) {
    const size_t from = period ? r / period * src_period + static_cast<size_t>(order[r % period]) : r;
    for (size_t j = 0; j < cols; ++j) rows[r * cols + j] = x[from * cols + j];
  }
  std::vector<float> y(rows.size()), mean(static_cast<size_t>(p.rows)), rstd(static_cast<size_t>(p.rows));
  rt::layer_norm_f32(t.pool(), p, rows.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data());
  return y;
}

void layer_norm_16bit_cases(KernelTable& t) {
  struct Case {
    int64_t rows, cols;
    bool ordered;  // rows read through a row order (3 blocks of rows / 3, from 5 source rows each)
    int offset;    // elements the output starts past an aligned address
  };
  // Warp kernels (768: 6 vectors a lane; 96; 1024), the block kernel (1025, 33, 1, and 768
  // written 2 bytes past an 8-byte boundary), a row order on both.
  const Case cases[] = {{197, 768, false, 0}, {7, 96, false, 0}, {2, 1024, false, 0},
                        {3, 1025, false, 0},  {5, 33, false, 0}, {4, 1, false, 0},
                        {9, 768, true, 0},    {9, 33, true, 0},  {6, 768, false, 1}};
  for (const Precision precision : {Precision::Fp16, Precision::Bf16})
    for (const Case& c : cases) {
      rt::LayerNormParams p;
      p.rows = c.rows, p.cols = c.cols;
      const size_t cols = static_cast<size_t>(c.cols), n = static_cast<size_t>(c.rows) * cols;
      std::vector<int32_t> order;
      if (c.ordered)
        for (int64_t r = 0; r < c.rows / 3; ++r) order.push_back(static_cast<int32_t>(t.rng()() % 5));
      const size_t source_rows = c.ordered ? 15 : static_cast<size_t>(c.rows);
      const std::vector<float> x = t.floats(source_rows * cols, false, 4.0f), gamma = t.floats(cols),
                               beta = t.floats(cols);
      const std::vector<float> cpu = layer_norm_reference(t, p, x, order, 5, gamma, beta);
      uint16_t* y = t.device<uint16_t>(n + 1);
      const rt::cuda::RowGather gather =
          c.ordered ? rt::cuda::RowGather{t.upload(order), c.rows / 3, 5} : rt::cuda::RowGather{};
      rt::cuda::layer_norm_16bit(t.stream(), precision, p, t.upload(x), t.upload(gamma), t.upload(beta),
                                 y + c.offset, gather);
      const std::string what = dims_str({c.rows, c.cols}) + (c.ordered ? ", row order" : "") +
                               (c.offset ? ", output 2 bytes off" : "");
      // The float32 result rounded once: half an ulp of the type, relative to the largest.
      t.expect_close(std::string("layer_norm_16bit (") + name_of(precision) + ")", what, cpu,
                     to_floats(t.download(y + c.offset, n), precision),
                     precision == Precision::Fp16 ? 1e-3 : 8e-3);
    }
}

// layer_norm_16bit_input: rows in the 16-bit type, the output float32 or in that type, on
// the warp kernels (96: ConvNeXt's first stage, 768), the block kernel (33, 1025, and 768
// read 2 bytes past an 8-byte boundary), a row order; against the host's float32 layer norm
// of the widened rows (float32 outputs: within float32 rounding; 16-bit: half an ulp).
void layer_norm_16bit_input_cases(KernelTable& t) {
  struct Case {
    int64_t rows, cols;
    bool ordered;  // rows read through a row order (3 blocks of rows / 3, from 5 source rows each)
    int offset;    // elements the input starts past an aligned address
  };
  const Case cases[] = {{31, 96, false, 0},  {197, 768, false, 0}, {5, 33, false, 0},
                        {3, 1025, false, 0}, {9, 96, true, 0},     {6, 768, false, 1}};
  for (const Precision precision : {Precision::Fp16, Precision::Bf16})
    for (const bool out_16bit : {false, true})
      for (const Case& c : cases) {
        rt::LayerNormParams p;
        p.rows = c.rows, p.cols = c.cols;
        const size_t cols = static_cast<size_t>(c.cols), n = static_cast<size_t>(c.rows) * cols;
        std::vector<int32_t> order;
        if (c.ordered)
          for (int64_t r = 0; r < c.rows / 3; ++r) order.push_back(static_cast<int32_t>(t.rng()() % 5));
        const size_t source_rows = c.ordered ? 15 : static_cast<size_t>(c.rows);
        std::vector<uint16_t> x = to_bits(t.floats(source_rows * cols, false, 4.0f), precision);
        const std::vector<float> gamma = t.floats(cols), beta = t.floats(cols);
        const std::vector<float> cpu =
            layer_norm_reference(t, p, to_floats(x, precision), order, 5, gamma, beta);
        x.insert(x.begin(), static_cast<size_t>(c.offset), uint16_t{0});
        const rt::cuda::RowGather gather =
            c.ordered ? rt::cuda::RowGather{t.upload(order), c.rows / 3, 5} : rt::cuda::RowGather{};
        const std::string what = dims_str({c.rows, c.cols}) + (c.ordered ? ", row order" : "") +
                                 (c.offset ? ", input 2 bytes off" : "") +
                                 (out_16bit ? ", 16-bit output" : ", float32 output");
        const std::string op = std::string("layer_norm_16bit_input (") + name_of(precision) + ")";
        const uint16_t* rows = t.upload(x) + c.offset;
        if (out_16bit) {
          uint16_t* y = t.device<uint16_t>(n);
          rt::cuda::layer_norm_16bit_input(t.stream(), precision, p, rows, t.upload(gamma), t.upload(beta), y,
                                           true, gather);
          t.expect_close(op, what, cpu, to_floats(t.download(y, n), precision),
                         precision == Precision::Fp16 ? 1e-3 : 8e-3);
        } else {
          float* y = t.device<float>(n);
          rt::cuda::layer_norm_16bit_input(t.stream(), precision, p, rows, t.upload(gamma), t.upload(beta), y,
                                           false, gather);
          t.expect_close(op, what, cpu, t.download(y, n), 1e-5);
        }
      }
}

// attention_16bit_output against attention_f32 on the same inputs, rounded once (within an
// ulp of the type: the three launches' GEMMs may sum in another order): each path
// (the encoder kernel, the short-window tf32 kernel, the three launches past shared memory,
// no keys), masks and causal rows, odd sizes.
void attention_16bit_output_cases(KernelTable& t) {
  struct Case {
    const char* name;
    int64_t batch, heads, q_len, kv_len, e, ev;
    bool masked, causal;
  };
  const Case cases[] = {{"encoder kernel, vit_b_16's size", 1, 4, 197, 197, 64, 64, false, false},
                        {"encoder kernel, odd, causal", 2, 3, 37, 53, 20, 12, true, true},
                        {"short windows (tf32 kernel)", 64, 3, 49, 49, 32, 32, true, false},
                        {"three launches (2000 keys)", 1, 2, 10, 2000, 64, 64, true, false},
                        {"no keys", 2, 2, 5, 0, 8, 8, false, false}};
  for (const Precision precision : {Precision::Fp16, Precision::Bf16})
    for (const Case& c : cases) {
      rt::cuda::Exec ex = t.exec();
      ex.precision = precision;
      rt::AttentionParams p;
      p.batch = c.batch, p.heads = c.heads, p.q_len = c.q_len, p.kv_len = c.kv_len;
      p.head_dim = c.e, p.v_head_dim = c.ev;
      p.scale = 0.3f;
      p.causal = c.causal;
      const auto dense = [&](int64_t* strides, int64_t len, int64_t cols) {
        strides[2] = cols;
        strides[1] = len * cols;
        strides[0] = c.heads * len * cols;
        return static_cast<size_t>(c.batch * strides[0]);
      };
      const size_t qn = dense(p.q_strides, c.q_len, c.e), kn = dense(p.k_strides, c.kv_len, c.e),
                   vn = dense(p.v_strides, c.kv_len, c.ev);
      // out as [batch, q_len, heads, ev], where a projection reads it.
      p.out_strides[2] = c.heads * c.ev;
      p.out_strides[1] = c.ev;
      p.out_strides[0] = c.q_len * c.heads * c.ev;
      const size_t on = static_cast<size_t>(c.batch * c.q_len * c.heads * c.ev);
      std::vector<float> mask;
      if (c.masked) {  // an additive [q_len, kv_len] mask, some keys dropped
        p.mask_kind = rt::AttentionMask::Additive;
        p.mask_strides[2] = c.kv_len;
        p.mask_strides[3] = 1;
        mask = t.floats(static_cast<size_t>(c.q_len * c.kv_len));
        for (size_t i = 0; i < mask.size(); i += 7) mask[i] = -INFINITY;
      }
      const float *q = t.upload(t.floats(qn + 1, false, 2.0f)), *k = t.upload(t.floats(kn + 1, false, 2.0f)),
                  *v = t.upload(t.floats(vn + 1));
      const float* dmask = c.masked ? t.upload(mask) : nullptr;
      float* want = t.device<float>(on);
      float* scratch =
          t.device<float>(static_cast<size_t>(rt::cuda::attention_scratch_bytes(p, true) / 4) + 1);
      rt::cuda::attention_f32(ex, p, q, k, v, dmask, want, nullptr, scratch);
      uint16_t* got = t.device<uint16_t>(on);
      rt::cuda::attention_16bit_output(ex, p, q, k, v, dmask, got, nullptr, scratch);
      const std::vector<float> cpu = t.download(want, on);
      t.expect_close(std::string("attention_16bit_output (") + name_of(precision) + ")", c.name,
                     to_floats(to_bits(cpu, precision), precision), to_floats(t.download(got, on), precision),
                     precision == Precision::Fp16 ? 1e-3 : 8e-3);
    }
}

// attention_mma_16bit (through attention_f32 at --precision fp16 / bf16, float32 output,
// and through attention_16bit_output) against the host's float32 attention on the same
// float32 inputs: within the 16-bit type's rounding of Q, K, V and P (scores of unit
// scale). `forced`: AOTC_CUDA_ATTENTION_MMA's groups and splits, else the kernel's choice.
void attention_mma_16bit_cases(KernelTable& t) {
  struct Case {
    const char* name;
    int64_t batch, heads, q_len, kv_len, e, ev;
    rt::AttentionMask mask;
    int mask_layout;  // 0: key padding [batch, kv_len]; 1: [q_len, kv_len]; 2: [batch, heads, q_len, kv_len]
    bool causal;
    int64_t row_pad;  // extra floats per row of q, k and v (odd: no 16-byte copies)
    const char* forced;
    bool qkv_only = false;  // a grid too small for the float32-input kernel: only 16-bit q, k, v
  };
  using M = rt::AttentionMask;
  const Case cases[] = {
      // (the kernel's own choice: grids of 64-row blocks that fill the GPU, or for 16-bit q, k
      // and v blocks of 16 rows and up to 4 splits on smaller ones)
      {"vit_b_16 b4", 4, 12, 197, 197, 64, 64, M::None, 0, false, 0, nullptr},
      {"vit_b_16 b1", 1, 12, 197, 197, 64, 64, M::None, 0, false, 0, nullptr, true},
      {"BERT-base b1, key padding", 1, 12, 128, 128, 64, 64, M::DropIfTrue, 0, false, 0, nullptr, true},
      {"32 keys, odd rows", 1, 2, 7, 32, 64, 64, M::None, 0, false, 5, nullptr, true},
      {"BERT-base b8, key padding", 8, 12, 128, 128, 64, 64, M::DropIfTrue, 0, false, 0, nullptr},
      // (forced block shapes: groups of 16 rows, splits of the keys)
      {"odd head sizes, causal, additive", 2, 3, 37, 100, 20, 36, M::Additive, 1, true, 1, "2,2"},
      {"head 128, 100 keys, masked rows", 1, 4, 50, 100, 128, 100, M::KeepIfTrue, 1, false, 0, "2,2"},
      {"head 80, 5 rows, nonzero mask", 2, 2, 5, 65, 80, 80, M::DropIfNonzero, 1, false, 3, "1,2"},
      {"one group, one split", 1, 2, 40, 197, 64, 64, M::None, 0, false, 0, "1,1"},
      {"2 groups, 3 splits, per-head mask", 1, 3, 70, 250, 32, 48, M::Additive, 2, false, 0, "2,3"},
      {"4 groups, 2 splits, causal", 1, 2, 100, 150, 64, 64, M::None, 0, true, 0, "4,2"},
  };
  for (const Case& c : cases) {
    rt::AttentionParams p;
    p.batch = c.batch, p.heads = c.heads, p.q_len = c.q_len, p.kv_len = c.kv_len;
    p.head_dim = c.e, p.v_head_dim = c.ev;
    p.scale = 1.0f / std::sqrt(static_cast<float>(c.e));
    p.causal = c.causal;
    p.mask_kind = c.mask;
    const auto strided = [&](int64_t* strides, int64_t len, int64_t cols) {
      strides[2] = cols + c.row_pad;
      strides[1] = len * strides[2];
      strides[0] = c.heads * strides[1];
      return static_cast<size_t>(c.batch * strides[0]);
    };
    const size_t qn = strided(p.q_strides, c.q_len, c.e), kn = strided(p.k_strides, c.kv_len, c.e),
                 vn = strided(p.v_strides, c.kv_len, c.ev);
    p.out_strides[2] = c.heads * c.ev;  // [batch, q_len, heads, ev]
    p.out_strides[1] = c.ev;
    p.out_strides[0] = c.q_len * c.heads * c.ev;
    const size_t on = static_cast<size_t>(c.batch * c.q_len * c.heads * c.ev);
    size_t mask_n = 0;
    if (c.mask != M::None) {
      p.mask_strides[3] = 1;
      if (c.mask_layout == 0) {
        p.mask_strides[0] = c.kv_len;
        mask_n = static_cast<size_t>(c.batch * c.kv_len);
      } else if (c.mask_layout == 1) {
        p.mask_strides[2] = c.kv_len;
        mask_n = static_cast<size_t>(c.q_len * c.kv_len);
      } else {
        p.mask_strides[2] = c.kv_len;
        p.mask_strides[1] = c.q_len * c.kv_len;
        p.mask_strides[0] = c.heads * p.mask_strides[1];
        mask_n = static_cast<size_t>(c.batch * p.mask_strides[0]);
      }
    }
    std::vector<float> mask_f = t.floats(mask_n);
    std::vector<unsigned char> mask_b(mask_n);
    const std::vector<int64_t> coin = t.ints(mask_n, 0, 3);
    for (size_t i = 0; i < mask_n; ++i) {
      mask_b[i] = c.mask == M::KeepIfTrue ? coin[i] != 0 : coin[i] == 0;  // a quarter of the keys dropped
      if (c.mask == M::DropIfNonzero) mask_f[i] = coin[i] == 0 ? 1.0f : 0.0f;
      if (c.mask == M::Additive && coin[i] == 0) mask_f[i] = -INFINITY;
    }
    if (c.mask == M::KeepIfTrue)  // rows 2 and 5 see no key
      for (int64_t j = 0; j < c.kv_len; ++j)
        mask_b[static_cast<size_t>(2 * c.kv_len + j)] = mask_b[static_cast<size_t>(5 * c.kv_len + j)] = 0;
    const bool bool_mask = c.mask == M::KeepIfTrue || c.mask == M::DropIfTrue;
    const std::vector<float> q = t.floats(qn), k = t.floats(kn), v = t.floats(vn);
    std::vector<float> want(on);
    rt::attention_f32(t.pool(), p, q.data(), k.data(), v.data(),
                      c.mask == M::None ? nullptr
                      : bool_mask       ? static_cast<const void*>(mask_b.data())
                                        : static_cast<const void*>(mask_f.data()),
                      want.data(), nullptr);
    const float *dq = t.upload(q), *dk = t.upload(k), *dv = t.upload(v);
    const void* dmask = c.mask == M::None ? nullptr
                        : bool_mask       ? static_cast<const void*>(t.upload(mask_b))
                                          : static_cast<const void*>(t.upload(mask_f));
    if (c.forced) setenv("AOTC_CUDA_ATTENTION_MMA", c.forced, 1);
    for (const Precision precision : {Precision::Fp16, Precision::Bf16}) {
      rt::cuda::Exec ex = t.exec();
      ex.precision = precision;
      const double tol = precision == Precision::Fp16 ? 3e-3 : 2.5e-2;
      const std::string op = std::string("attention_mma_16bit (") + name_of(precision) + ")";
      // q, k and v given in the 16-bit type (attention_16bit_qkv): the same rounding.
      {
        const uint16_t *hq = t.upload(to_bits(q, precision)), *hk = t.upload(to_bits(k, precision)),
                       *hv = t.upload(to_bits(v, precision));
        float* got = t.device<float>(on);
        rt::cuda::attention_16bit_qkv(ex, p, hq, hk, hv, dmask, got, false);
        t.expect_close(op, std::string(c.name) + ", 16-bit q, k, v", want, t.download(got, on), tol);
        uint16_t* got16 = t.device<uint16_t>(on);
        rt::cuda::attention_16bit_qkv(ex, p, hq, hk, hv, dmask, got16, true);
        t.expect_close(op, std::string(c.name) + ", 16-bit q, k, v and out", want,
                       to_floats(t.download(got16, on), precision), tol);
      }
      if (c.qkv_only) continue;
      float* got = t.device<float>(on);
      const bool applied = rt::cuda::attention_mma_16bit(ex, p, dq, dk, dv, dmask, got);
      t.expect_equal(op, std::string(c.name) + ": the kernel applies", std::vector<int>{1},
                     std::vector<int>{applied ? 1 : 0});
      if (!applied) continue;
      t.expect_close(op, std::string(c.name) + ", float32 out", want, t.download(got, on), tol);
      uint16_t* got16 = t.device<uint16_t>(on);
      float* scratch =
          t.device<float>(static_cast<size_t>(rt::cuda::attention_scratch_bytes(p, true) / 4) + 1);
      rt::cuda::attention_16bit_output(ex, p, dq, dk, dv, dmask, got16, nullptr, scratch);
      t.expect_close(op, std::string(c.name) + ", 16-bit out", want,
                     to_floats(t.download(got16, on), precision), tol);
    }
    unsetenv("AOTC_CUDA_ATTENTION_MMA");
  }
}

void im2col_16bit_input_cases(KernelTable& t) {
  struct Shape {
    int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, row_stride;
    int shift;  // elements the input starts past a 16-byte boundary
  };
  const Shape shapes[] = {
      {1, 64, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, 576, 0},  // 16-byte moves
      {2, 8, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, 72, 0},
      {1, 12, 8, 9, 3, 3, 1, 1, 2, 2, 2, 2, 108, 0},  // 8-byte moves (12 channels), dilated
      {1, 16, 7, 7, 1, 1, 2, 2, 0, 0, 1, 1, 16, 0},   // a 1x1 stride-2 downsampling
      {1, 8, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 76, 0},    // rows padded past the taps
      {1, 5, 6, 7, 3, 2, 1, 2, 1, 0, 1, 1, 32, 0},    // one element a thread
      {1, 16, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1, 144, 1},  // input off 16 bytes
  };
  for (const Precision precision : {Precision::Fp16, Precision::Bf16})
    for (const Shape& s : shapes) {
      rt::Conv2dParams p;
      p.n = s.n, p.c_in = s.c, p.h_in = s.h, p.w_in = s.w, p.c_out = 1;
      p.kernel_h = s.kh, p.kernel_w = s.kw, p.stride_h = s.sh, p.stride_w = s.sw;
      p.pad_h = s.ph, p.pad_w = s.pw, p.dilation_h = s.dh, p.dilation_w = s.dw;
      p.h_out = (s.h + 2 * s.ph - s.dh * (s.kh - 1) - 1) / s.sh + 1;
      p.w_out = (s.w + 2 * s.pw - s.dw * (s.kw - 1) - 1) / s.sw + 1;
      const size_t in = static_cast<size_t>(s.n * s.h * s.w * s.c);
      const size_t out = static_cast<size_t>(s.n * p.h_out * p.w_out * s.row_stride);
      const std::vector<uint16_t> x = to_bits(t.floats(in + 1, true), precision);
      const std::vector<float> x32 = to_floats(x, precision);
      uint16_t* want = t.device<uint16_t>(out);
      rt::cuda::im2col_nhwc_16bit(t.stream(), p, precision, false, s.row_stride, t.upload(x32) + s.shift,
                                  want);
      uint16_t* got = t.device<uint16_t>(out);
      rt::cuda::im2col_nhwc_16bit_input(t.stream(), p, precision, s.row_stride, t.upload(x) + s.shift, got);
      // Equal values, non-finite ones at the same places (a NaN's payload may differ).
      t.expect_close(
          std::string("im2col_nhwc_16bit_input (") + name_of(precision) + ")",
          dims_str({s.n, s.h, s.w, s.c}) + " " + dims_str({s.kh, s.kw}) + " stride " + std::to_string(s.sh) +
              ", rows of " + std::to_string(s.row_stride) + (s.shift ? ", input off 16 bytes" : ""),
          to_floats(t.download(want, out), precision), to_floats(t.download(got, out), precision), 0.0);
    }
}

// The NHWC unfolding on the host: rows (image, oh, ow), taps (kh, kw, c), zeros in the
// padding and past the taps; x in NCHW where nchw, else NHWC.
std::vector<float> unfold_reference(const rt::Conv2dParams& p, bool nchw, int64_t row_stride,
                                    const std::vector<float>& x) {
  std::vector<float> col(static_cast<size_t>(p.n * p.h_out * p.w_out * row_stride), 0.0f);
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t oh = 0; oh < p.h_out; ++oh)
      for (int64_t ow = 0; ow < p.w_out; ++ow)
        for (int64_t kh = 0; kh < p.kernel_h; ++kh)
          for (int64_t kw = 0; kw < p.kernel_w; ++kw)
            for (int64_t c = 0; c < p.c_in; ++c) {
              const int64_t ih = oh * p.stride_h - p.pad_h + kh * p.dilation_h;
              const int64_t iw = ow * p.stride_w - p.pad_w + kw * p.dilation_w;
              if (ih < 0 || ih >= p.h_in || iw < 0 || iw >= p.w_in) continue;
              const int64_t at = nchw ? ((i * p.c_in + c) * p.h_in + ih) * p.w_in + iw
                                      : ((i * p.h_in + ih) * p.w_in + iw) * p.c_in + c;
              col[static_cast<size_t>(((i * p.h_out + oh) * p.w_out + ow) * row_stride +
                                      (kh * p.kernel_w + kw) * p.c_in + c)] = x[static_cast<size_t>(at)];
            }
  return col;
}

// Channel counts that are not whole vectors (an RGB stem read in NCHW or NHWC, 5 channels):
// im2col_gather_kernel, eight 16-bit values or four values a thread, or one where the rows are
// not whole vectors.
void im2col_gather_cases(KernelTable& t) {
  struct Shape {
    int64_t n, c, h, w, k, stride, pad, row_stride;
    bool nchw;
  };
  const Shape shapes[] = {
      {2, 3, 23, 21, 7, 2, 3, 148, true},  // resnet's stem, rows padded from 147
      {2, 3, 23, 21, 7, 2, 3, 152, true},  // and to 16 bytes of 16-bit values (eight a thread)
      {1, 3, 9, 10, 3, 1, 1, 28, false},  {1, 5, 8, 7, 3, 2, 1, 48, false},
      {1, 3, 6, 6, 3, 1, 1, 27, true},  // rows not whole vectors: a value a thread
  };
  for (const Shape& s : shapes) {
    rt::Conv2dParams p;
    p.n = s.n, p.c_in = s.c, p.h_in = s.h, p.w_in = s.w, p.c_out = 1;
    p.kernel_h = p.kernel_w = s.k, p.stride_h = p.stride_w = s.stride, p.pad_h = p.pad_w = s.pad;
    p.h_out = (s.h + 2 * s.pad - s.k) / s.stride + 1;
    p.w_out = (s.w + 2 * s.pad - s.k) / s.stride + 1;
    const std::vector<float> x = t.floats(static_cast<size_t>(s.n * s.c * s.h * s.w), true);
    const std::vector<float> want = unfold_reference(p, s.nchw, s.row_stride, x);
    const std::string what = dims_str({s.n, s.c, s.h, s.w}) + (s.nchw ? " NCHW" : " NHWC") + ", " +
                             std::to_string(s.k) + "x" + std::to_string(s.k) + " stride " +
                             std::to_string(s.stride) + ", rows of " + std::to_string(s.row_stride);
    float* col = t.device<float>(want.size());
    rt::cuda::im2col_nhwc_f32(t.stream(), p, s.nchw, s.row_stride, t.upload(x), col);
    t.expect_equal("im2col_nhwc (float32)", what, want, t.download(col, want.size()));
    for (const Precision precision : {Precision::Fp16, Precision::Bf16}) {
      uint16_t* col16 = t.device<uint16_t>(want.size());
      rt::cuda::im2col_nhwc_16bit(t.stream(), p, precision, s.nchw, s.row_stride, t.upload(x), col16);
      t.expect_close(std::string("im2col_nhwc_16bit (") + name_of(precision) + ")", what,
                     to_floats(to_bits(want, precision), precision),
                     to_floats(t.download(col16, want.size()), precision), 0.0);
    }
  }
}

}  // namespace

void lowp_cases(KernelTable& t) {
  gemm_16bit_output_cases(t);
  layer_norm_16bit_cases(t);
  layer_norm_16bit_input_cases(t);
  attention_16bit_output_cases(t);
  attention_mma_16bit_cases(t);
  im2col_16bit_input_cases(t);
  im2col_gather_cases(t);
}

}  // namespace aotc::test

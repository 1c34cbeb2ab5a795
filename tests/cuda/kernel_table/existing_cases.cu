// The kernels the CUDA target had before the kernel table: 2-d pooling (NCHW and NHWC),
// softmax, reductions, layer norm, channel affine, embedding, embedding bags, strided copies,
// fill, where.
#include "kernel_table.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace aotc::test {
namespace {

using rt::Pool2dParams;

int64_t pooled(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
  const int64_t span = in + 2 * pad - dil * (k - 1) - 1;
  int64_t out = (ceil_mode ? span + stride - 1 : span) / stride + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

void pool2d_cases(KernelTable& t) {
  struct Shape {
    int64_t n, c, h, w, k, stride, pad, dil;
    bool ceil_mode, include_pad;
  };
  for (const Shape s :
       {Shape{1, 3, 7, 9, 3, 2, 1, 1, true, true}, Shape{2, 5, 13, 11, 2, 2, 0, 1, false, false},
        Shape{1, 1, 1, 1, 1, 1, 0, 1, false, true}, Shape{3, 7, 17, 5, 3, 1, 1, 2, false, false}}) {
    Pool2dParams p;
    p.n = s.n, p.c = s.c, p.h_in = s.h, p.w_in = s.w;
    p.kernel_h = p.kernel_w = s.k;
    p.stride_h = p.stride_w = s.stride;
    p.pad_h = p.pad_w = s.pad;
    p.dilation_h = p.dilation_w = s.dil;
    p.count_include_pad = s.include_pad;
    p.h_out = pooled(s.h, s.k, s.pad, s.stride, s.dil, s.ceil_mode);
    p.w_out = pooled(s.w, s.k, s.pad, s.stride, s.dil, s.ceil_mode);
    const std::string what = dims_str({s.n, s.c, s.h, s.w}) + " k" + std::to_string(s.k) + " s" +
                             std::to_string(s.stride) + " p" + std::to_string(s.pad) + " d" +
                             std::to_string(s.dil);
    const size_t out = static_cast<size_t>(p.n * p.c * p.h_out * p.w_out);
    const std::vector<float> x = t.floats(static_cast<size_t>(s.n * s.c * s.h * s.w), true);
    std::vector<float> cpu(out);
    rt::max_pool2d_f32(t.pool(), p, x.data(), cpu.data());
    float* y = t.device<float>(out);
    rt::cuda::max_pool2d_f32(t.stream(), p, t.upload(x), y);
    t.expect_equal("max_pool2d", what, cpu, t.download(y, out));
    y = t.device<float>(out);
    rt::cuda::max_pool2d_nhwc_f32(t.stream(), p, t.upload(to_nhwc(x, p.n, p.c, p.h_in, p.w_in)), y);
    t.expect_equal("max_pool2d (nhwc)", what, cpu, to_nchw(t.download(y, out), p.n, p.c, p.h_out, p.w_out));
    if (s.dil == 1) {
      rt::avg_pool2d_f32(t.pool(), p, x.data(), cpu.data());
      y = t.device<float>(out);
      rt::cuda::avg_pool2d_f32(t.stream(), p, t.upload(x), y);
      t.expect_close("avg_pool2d", what, cpu, t.download(y, out));
    }
  }
  for (const auto& s : std::vector<std::vector<int64_t>>{{2, 3, 7, 9, 3, 4},
                                                         {1, 5, 1, 1, 1, 1},
                                                         {1, 4, 13, 6, 5, 7},
                                                         // bins of 128 values and more: a block per output
                                                         {1, 3, 112, 112, 1, 1},
                                                         {2, 5, 70, 90, 2, 3},
                                                         {1, 3, 32, 32, 1, 1},
                                                         {1, 2, 33, 41, 1, 1},
                                                         {1, 2, 200, 7, 1, 1},
                                                         {2, 3, 28, 28, 1, 1},
                                                         {1, 3, 23, 37, 2, 3},
                                                         // NHWC blocks: channel groups of 8 and a part one
                                                         {1, 32, 112, 112, 1, 1},
                                                         {2, 37, 29, 31, 2, 1},
                                                         // global pooling in lanes of 4 (float32)
                                                         // or 8 (16-bit) channels, a part group
                                                         {2, 264, 7, 7, 1, 1},
                                                         {3, 12, 5, 5, 1, 1},
                                                         {1, 40, 100, 100, 1, 1},
                                                         {2, 1280, 7, 7, 1, 1}}) {
    const int64_t n = s[0], c = s[1], h = s[2], w = s[3], ho = s[4], wo = s[5];
    // NaN, infinities and -0 among the values, but not float32's largest: the GPU adds a bin
    // in rows of threads, and whether a sum overflows to an infinity (NaN beside the other
    // infinity) depends on the order of the adds.
    std::vector<float> x = t.floats(static_cast<size_t>(n * c * h * w), true);
    for (float& v : x)
      if (std::fabs(v) == std::numeric_limits<float>::max()) v = 1.0f;
    const size_t out = static_cast<size_t>(n * c * ho * wo);
    std::vector<float> cpu(out);
    rt::adaptive_avg_pool2d_f32(t.pool(), n, c, h, w, ho, wo, x.data(), cpu.data());
    float* y = t.device<float>(out);
    rt::cuda::adaptive_avg_pool2d_f32(t.stream(), n, c, h, w, ho, wo, t.upload(x), y);
    const std::string what = dims_str({n, c, h, w}) + " -> " + dims_str({ho, wo});
    t.expect_close("adaptive_avg_pool2d", what, cpu, t.download(y, out));
    y = t.device<float>(out);
    rt::cuda::adaptive_avg_pool2d_nhwc_f32(t.stream(), n, c, h, w, ho, wo, t.upload(to_nhwc(x, n, c, h, w)),
                                           y);
    t.expect_close("adaptive_avg_pool2d (nhwc)", what, cpu, to_nchw(t.download(y, out), n, c, ho, wo));
    if (const int64_t bytes = rt::cuda::adaptive_avg_pool2d_nhwc_scratch_bytes(n, c, h, w, ho, wo);
        bytes > 0) {
      y = t.device<float>(out);  // global pooling in two steps
      rt::cuda::adaptive_avg_pool2d_nhwc_f32(t.stream(), n, c, h, w, ho, wo, t.upload(to_nhwc(x, n, c, h, w)),
                                             y, t.device<float>(static_cast<size_t>(bytes) / sizeof(float)));
      t.expect_close("adaptive_avg_pool2d (nhwc, in chunks)", what, cpu,
                     to_nchw(t.download(y, out), n, c, ho, wo));
    }
    // An input kept 16-bit (store_activations_16bit.cpp): the CPU's pooling of the same
    // rounded values, every path (the scratch where it takes one).
    for (const rt::cuda::Precision precision : {rt::cuda::Precision::Fp16, rt::cuda::Precision::Bf16}) {
      const std::vector<uint16_t> x16 = to_bits(to_nhwc(x, n, c, h, w), precision);
      const std::vector<float> rounded = to_nchw(to_floats(x16, precision), n, c, h, w);
      std::vector<float> want(out);
      rt::adaptive_avg_pool2d_f32(t.pool(), n, c, h, w, ho, wo, rounded.data(), want.data());
      const int64_t bytes = rt::cuda::adaptive_avg_pool2d_nhwc_scratch_bytes(n, c, h, w, ho, wo);
      y = t.device<float>(out);
      rt::cuda::adaptive_avg_pool2d_nhwc(
          t.stream(), precision, n, c, h, w, ho, wo, t.upload(x16), y,
          bytes > 0 ? t.device<float>(static_cast<size_t>(bytes) / sizeof(float)) : nullptr);
      t.expect_close(std::string("adaptive_avg_pool2d (nhwc, ") + name_of(precision) + ")", what, want,
                     to_nchw(t.download(y, out), n, c, ho, wo));
    }
  }
}

void softmax_cases(KernelTable& t) {
  for (const auto& s : std::vector<std::vector<int64_t>>{{3, 17, 5}, {1, 1000, 1}, {7, 1, 3}, {2, 33, 1}}) {
    for (const bool log : {false, true}) {
      const size_t n = static_cast<size_t>(s[0] * s[1] * s[2]);
      const std::vector<float> x = t.floats(n, s[1] == 33, 3.0f);
      std::vector<float> cpu(n);
      rt::softmax_f32(t.pool(), s[0], s[1], s[2], log, x.data(), cpu.data());
      float* y = t.device<float>(n);
      rt::cuda::softmax_f32(t.stream(), s[0], s[1], s[2], log, t.upload(x), y);
      t.expect_close(log ? "softmax (log)" : "softmax", dims_str({s[0], s[1], s[2]}), cpu, t.download(y, n));
    }
  }
}

// Every fold the kernel picks: a thread (count <= 16), a warp, a block of 256 (many outputs)
// or of 1024 (few outputs, a whole-tensor reduction among them), on merged and strided dims.
void reduce_cases(KernelTable& t) {
  const std::vector<std::vector<int64_t>> shapes = {{5, 37, 3},   {4, 3, 2},      {3, 5000, 2},
                                                    {2, 300, 70}, {300, 4100, 1}, {1, 1, 2000003}};
  for (const auto& s : shapes)
    for (const rt::ReduceOp op :
         {rt::ReduceOp::Sum, rt::ReduceOp::Mean, rt::ReduceOp::Max, rt::ReduceOp::Min}) {
      rt::ReduceParams p;
      p.op = op;
      p.rank = 3;
      p.dims[0] = s[0], p.dims[1] = s[1], p.dims[2] = s[2];
      const size_t n = static_cast<size_t>(s[0] * s[1] * s[2]);
      for (int mask = 1; mask < 8; ++mask) {
        size_t out = 1;
        for (int d = 0; d < 3; ++d) {
          p.reduce_mask[d] = (mask >> d) & 1;
          if (!p.reduce_mask[d]) out *= static_cast<size_t>(p.dims[d]);
        }
        const bool specials = op == rt::ReduceOp::Max || op == rt::ReduceOp::Min;
        const std::vector<float> x = t.floats(n, specials && mask == 2);
        std::vector<float> cpu(out);
        rt::reduce_f32(t.pool(), p, x.data(), cpu.data());
        float* y = t.device<float>(out);
        rt::cuda::reduce_f32(t.stream(), p, t.upload(x), y);
        // A sum's rounding scales with the sum of its terms' magnitudes, not with the result
        // (which cancellation can make small): sums and means against the same fold of |x|.
        double scale = 0.0;
        if (!specials) {
          std::vector<float> abs_x(n), abs_fold(out);
          for (size_t i = 0; i < n; ++i) abs_x[i] = std::fabs(x[i]);
          rt::reduce_f32(t.pool(), p, abs_x.data(), abs_fold.data());
          for (float v : abs_fold) scale = std::max(scale, static_cast<double>(v));
        }
        const char* names[] = {"reduce (sum)", "reduce (mean)", "reduce (max)", "reduce (min)"};
        t.expect_close_to_scale(names[static_cast<int>(op)],
                                dims_str({s[0], s[1], s[2]}) + " mask " + std::to_string(mask), cpu,
                                t.download(y, out), 1e-5, scale);
      }
    }
}

void layer_norm_cases(KernelTable& t) {
  for (const auto& s : std::vector<std::vector<int64_t>>{{7, 33}, {1, 768}, {3, 1}, {2, 1025}}) {
    rt::LayerNormParams p;
    p.rows = s[0], p.cols = s[1];
    const size_t n = static_cast<size_t>(p.rows * p.cols);
    const std::vector<float> x = t.floats(n, false, 4.0f), g = t.floats(static_cast<size_t>(p.cols)),
                             b = t.floats(static_cast<size_t>(p.cols));
    std::vector<float> cpu(n), mean(static_cast<size_t>(p.rows)), rstd(static_cast<size_t>(p.rows));
    rt::layer_norm_f32(t.pool(), p, x.data(), g.data(), b.data(), cpu.data(), mean.data(), rstd.data());
    float* y = t.device<float>(n);
    float* dm = t.device<float>(static_cast<size_t>(p.rows));
    float* dr = t.device<float>(static_cast<size_t>(p.rows));
    rt::cuda::layer_norm_f32(t.stream(), p, t.upload(x), t.upload(g), t.upload(b), y, dm, dr);
    const std::string what = dims_str({p.rows, p.cols});
    t.expect_close("layer_norm", what, cpu, t.download(y, n));
    t.expect_close("layer_norm (mean)", what, mean, t.download(dm, mean.size()));
    t.expect_close("layer_norm (rstd)", what, rstd, t.download(dr, rstd.size()));
  }
}

// A row order (RowGather) as fuse_row_gathers.cpp makes one: 3 repeats of `period` output
// rows, each reading one of src_period source rows (some read twice, some never).
struct RowOrderCase {
  int64_t period, src_period, cols;
  std::vector<int32_t> index;
};

// The rows of src (src_period * 3 rows of cols) that the order picks, densely.
std::vector<float> gathered(const RowOrderCase& c, const std::vector<float>& src) {
  std::vector<float> out;
  for (int64_t block = 0; block < 3; ++block)
    for (int32_t i : c.index) {
      const auto from = static_cast<std::ptrdiff_t>((block * c.src_period + i) * c.cols);
      out.insert(out.end(), src.begin() + from, src.begin() + from + c.cols);
    }
  return out;
}

void row_order_cases(KernelTable& t) {
  // cols: 16-byte vectors (96, 768), scalars (33, 1), the block kernel of layer_norm (1025).
  for (const int64_t cols : {96, 768, 33, 1, 1025}) {
    RowOrderCase c{7, 9, cols, {}};
    for (int64_t r = 0; r < c.period; ++r) c.index.push_back(static_cast<int32_t>(t.rng()() % 9));
    const size_t n = static_cast<size_t>(3 * c.period * cols);
    // One float more than the source: the shifted copy's rows start off 16 bytes.
    const std::vector<float> src = t.floats(static_cast<size_t>(3 * c.src_period * cols) + 1, true, 4.0f),
                             add = t.floats(n, true);
    const std::vector<float> dense(src.begin(), src.end() - 1), shifted(src.begin() + 1, src.end());
    const int32_t* index = t.upload(c.index);
    const rt::cuda::RowGather order{index, c.period, c.src_period};
    const std::string what = "cols " + std::to_string(cols);

    rt::LayerNormParams p;
    p.rows = 3 * c.period, p.cols = cols;
    const std::vector<float> g = t.floats(static_cast<size_t>(cols)), b = t.floats(static_cast<size_t>(cols));
    std::vector<float> cpu(n), mean(static_cast<size_t>(p.rows)), rstd(static_cast<size_t>(p.rows));
    const std::vector<float> x = t.floats(static_cast<size_t>(3 * c.src_period * cols), false, 4.0f);
    rt::layer_norm_f32(t.pool(), p, gathered(c, x).data(), g.data(), b.data(), cpu.data(), mean.data(),
                       rstd.data());
    float* y = t.device<float>(n);
    float* dm = t.device<float>(static_cast<size_t>(p.rows));
    rt::cuda::layer_norm_f32(t.stream(), p, t.upload(x), t.upload(g), t.upload(b), y, dm, nullptr, order);
    t.expect_close("layer_norm (row order)", what, cpu, t.download(y, n));
    t.expect_close("layer_norm (row order, mean)", what, mean, t.download(dm, mean.size()));

    const float* d_src = t.upload(src);
    for (const int shift : {0, 1}) {
      const std::vector<float> want = gathered(c, shift ? shifted : dense);
      std::vector<float> sum(n);
      for (size_t i = 0; i < n; ++i) sum[i] = want[i] + add[i];
      float* out = t.device<float>(n);
      const std::string how = what + (shift ? ", rows off 16 bytes" : "");
      rt::cuda::gather_rows_f32(t.stream(), p.rows, cols, order, d_src + shift, nullptr, out);
      t.expect_equal("gather_rows", how, want, t.download(out, n));
      rt::cuda::gather_rows_f32(t.stream(), p.rows, cols, order, d_src + shift, t.upload(add), out);
      t.expect_close("gather_rows (+ addend)", how, sum, t.download(out, n));
    }
  }
}

// A 16-bit type's bits as the float they hold (host side).
float float_of(uint16_t bits, rt::cuda::Precision precision) {
  if (precision == rt::cuda::Precision::Fp16) {
    __half h;
    std::memcpy(&h, &bits, sizeof(bits));
    return __half2float(h);
  }
  __nv_bfloat16 h;
  std::memcpy(&h, &bits, sizeof(bits));
  return __bfloat162float(h);
}

void round_to_16bit_cases(KernelTable& t) {
  // Counts: below, at and past the 8-element groups of the 16-byte kernel, and a large odd one;
  // a source off 16 bytes takes the element-per-thread kernel throughout.
  for (const rt::cuda::Precision precision : {rt::cuda::Precision::Fp16, rt::cuda::Precision::Bf16})
    for (const int64_t count : {1, 7, 8, 9, 4099, 100003})
      for (const int shift : {0, 1}) {
        const size_t n = static_cast<size_t>(count);
        const std::vector<float> x = t.floats(n + 1, true, 300.0f);
        std::vector<float> want(n);
        for (size_t i = 0; i < n; ++i) {
          const float v = x[i + static_cast<size_t>(shift)];
          want[i] = precision == rt::cuda::Precision::Fp16 ? __half2float(__float2half_rn(v))
                                                           : __bfloat162float(__float2bfloat16_rn(v));
        }
        uint16_t* y = t.device<uint16_t>(n);
        rt::cuda::round_to_16bit(t.stream(), precision, count, t.upload(x) + shift, y);
        const std::vector<uint16_t> bits = t.download(y, n);
        std::vector<float> got(n);
        for (size_t i = 0; i < n; ++i) got[i] = float_of(bits[i], precision);
        t.expect_close(
            precision == rt::cuda::Precision::Fp16 ? "round_to_16bit (fp16)" : "round_to_16bit (bf16)",
            std::to_string(count) + (shift ? ", source off 16 bytes" : ""), want, got, 0.0);
      }
}

void channel_affine_cases(KernelTable& t) {
  const int64_t n = 2, c = 5, s = 13;
  const std::vector<float> x = t.floats(static_cast<size_t>(n * c * s), true), scale = t.floats(c),
                           shift = t.floats(c);
  std::vector<float> cpu(x.size());
  rt::channel_affine_f32(t.pool(), n, c, s, scale.data(), shift.data(), 0.0f, 6.0f, x.data(), cpu.data());
  float* y = t.device<float>(x.size());
  rt::cuda::channel_affine_f32(t.stream(), n, c, s, t.upload(scale), t.upload(shift), 0.0f, 6.0f, t.upload(x),
                               y);
  t.expect_close("channel_affine (relu6)", dims_str({n, c, s}), cpu, t.download(y, x.size()));
}

void embedding_cases(KernelTable& t) {
  rt::EmbeddingParams p;
  p.count = 29, p.dim = 17, p.vocab = 11;
  const std::vector<float> w = t.floats(static_cast<size_t>(p.vocab * p.dim), true);
  const std::vector<int64_t> ids = t.ints(static_cast<size_t>(p.count), -13, 13);  // some out of range
  const size_t n = static_cast<size_t>(p.count * p.dim);
  std::vector<float> cpu(n);
  rt::embedding_f32(t.pool(), p, ids.data(), w.data(), cpu.data());
  float* y = t.device<float>(n);
  rt::cuda::embedding_f32(t.stream(), p, t.upload(ids), t.upload(w), y);
  t.expect_equal("embedding (int64 ids)", "29 ids, 11x17, out of range ones", cpu, t.download(y, n));
}

// Bags of rows in each mode: padding and out-of-range ids skipped, an empty bag, offsets out
// of order and past the ids (clamped), per-sample weights, include_last_offset, int32 ids and
// offsets, NaN and infinities in the table (a maximum's NaN wins).
void embedding_bag_cases(KernelTable& t) {
  using Mode = rt::EmbeddingBagMode;
  struct Case {
    const char* what;
    Mode mode;
    bool weights, last_offset, int32;
    int64_t padding_idx;
  };
  const Case cases[] = {{"sum, weights, padding 3", Mode::Sum, true, false, false, 3},
                        {"mean, padding 0, int32", Mode::Mean, false, false, true, 0},
                        {"max, include_last_offset", Mode::Max, false, true, false, -1},
                        {"sum, include_last_offset, int32", Mode::Sum, false, true, true, -1}};
  for (const Case& c : cases) {
    rt::EmbeddingBagParams p;
    p.count = 41, p.dim = 150, p.vocab = 13, p.mode = c.mode, p.padding_idx = c.padding_idx;
    p.ids_int32 = p.offsets_int32 = c.int32;
    const std::vector<int64_t> offsets64 = {0, 5,  5,  12,
                                            9, 30, 60, 33};  // an empty bag, one out of order, one past
    p.offsets_count = static_cast<int64_t>(offsets64.size());
    p.bags = p.offsets_count - (c.last_offset ? 1 : 0);
    const std::vector<float> w = t.floats(static_cast<size_t>(p.vocab * p.dim), true);
    const std::vector<float> psw = t.floats(static_cast<size_t>(p.count));
    const std::vector<int64_t> ids64 = t.ints(static_cast<size_t>(p.count), -2, 14);  // some out of range
    const std::vector<int32_t> ids32(ids64.begin(), ids64.end()),
        offsets32(offsets64.begin(), offsets64.end());
    const void* ids = c.int32 ? static_cast<const void*>(ids32.data()) : ids64.data();
    const void* offsets = c.int32 ? static_cast<const void*>(offsets32.data()) : offsets64.data();
    const size_t n = static_cast<size_t>(p.bags * p.dim);
    std::vector<float> cpu(n);
    rt::embedding_bag_f32(t.pool(), p, ids, offsets, w.data(), c.weights ? psw.data() : nullptr, cpu.data());
    float* y = t.device<float>(n);
    const void* d_ids = c.int32 ? static_cast<const void*>(t.upload(ids32)) : t.upload(ids64);
    const void* d_offsets = c.int32 ? static_cast<const void*>(t.upload(offsets32)) : t.upload(offsets64);
    rt::cuda::embedding_bag_f32(t.stream(), p, d_ids, d_offsets, t.upload(w),
                                c.weights ? t.upload(psw) : nullptr, y);
    t.expect_close("embedding_bag", c.what, cpu, t.download(y, n), 1e-6);
  }
}

void copy_fill_where_cases(KernelTable& t) {
  // A permuting copy of a 3x5x7 view with a gap, of 8-byte elements.
  rt::CopyParams c;
  c.rank = 3;
  c.elem_size = 8;
  c.dims[0] = 3, c.dims[1] = 5, c.dims[2] = 7;
  c.src_strides[0] = 1, c.src_strides[1] = 3 * 8, c.src_strides[2] = 3;  // src: 8 x 5 x 3 buffer
  c.dst_strides[0] = 35, c.dst_strides[1] = 7, c.dst_strides[2] = 1;
  const std::vector<int64_t> src = t.ints(8 * 5 * 3 + 8, -1000, 1000);
  std::vector<int64_t> cpu(105, -1);
  rt::copy_strided(t.pool(), c, src.data(), cpu.data());
  int64_t* y = t.device<int64_t>(105);
  rt::cuda::copy_strided(t.stream(), c, t.upload(src), y);
  t.expect_equal("copy (strided, 8-byte)", "3x5x7 permuted", cpu, t.download(y, 105));

  rt::FillParams f;
  f.count = 1001;
  f.elem_size = 4;
  const float v = -2.5f;
  std::memcpy(f.value, &v, 4);
  std::vector<float> filled(1001);
  rt::fill(t.pool(), f, filled.data());
  float* fy = t.device<float>(1001);
  rt::cuda::fill(t.stream(), f, fy);
  t.expect_equal("assemble (fill)", "1001 floats", filled, t.download(fy, 1001));

  rt::WhereParams w;  // cond [4, 1, 6], a [4, 5, 6], b scalar
  w.rank = 3;
  w.out_dims[0] = 4, w.out_dims[1] = 5, w.out_dims[2] = 6;
  w.cond_strides[0] = 6, w.cond_strides[2] = 1;
  w.a_strides[0] = 30, w.a_strides[1] = 6, w.a_strides[2] = 1;
  std::vector<unsigned char> cond(24);
  for (auto& b : cond) b = static_cast<unsigned char>(t.ints(1, 0, 1)[0]);
  const std::vector<float> a = t.floats(120, true), b = t.floats(1);
  std::vector<float> cpu_w(120);
  rt::where(t.pool(), w, 4, reinterpret_cast<const bool*>(cond.data()), a.data(), b.data(), cpu_w.data());
  float* wy = t.device<float>(120);
  rt::cuda::where_select(t.stream(), w, 4, reinterpret_cast<const bool*>(t.upload(cond)), t.upload(a),
                         t.upload(b), wy);
  t.expect_equal("where", "4x5x6, cond 4x1x6, b scalar", cpu_w, t.download(wy, 120));
}

}  // namespace

void existing_cases(KernelTable& t) {
  pool2d_cases(t);
  softmax_cases(t);
  reduce_cases(t);
  layer_norm_cases(t);
  row_order_cases(t);
  round_to_16bit_cases(t);
  channel_affine_cases(t);
  embedding_cases(t);
  embedding_bag_cases(t);
  copy_fill_where_cases(t);
}

}  // namespace aotc::test

// kernel_reference.h - helpers for the kernel unit tests: seeded random data, guarded
// output buffers (sentinel words that catch out-of-bounds writes), relative L2 error,
// and the naive double-precision reference implementations the kernels are checked
// against.
#pragma once

#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

namespace aotc::test {

// Thread counts every multi-threaded kernel is tested with.
inline const int kThreadCounts[] = {1, 3};

constexpr double kTolerance = 1e-5;

inline std::vector<float> random_floats(size_t count, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& x : v) x = dist(gen);
  return v;
}

// sqrt(sum (got - want)^2 / sum want^2); NaN anywhere in got gives NaN (fails checks).
// An all-zero reference compares absolutely.
inline double rel_l2(const float* got, const double* want, size_t count) {
  double err = 0.0, norm = 0.0;
  for (size_t i = 0; i < count; ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    err += d * d;
    norm += want[i] * want[i];
  }
  if (norm == 0.0) return std::sqrt(err);
  return std::sqrt(err / norm);
}
inline double rel_l2(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  return rel_l2(got.data(), want.data(), got.size());
}

// Per-thread scratch for a pool (ThreadPool::set_thread_scratch), exactly as a context
// gives it: bytes_per_thread (a *_thread_scratch_bytes() result) rounded up to 64 for
// each thread, 64-byte aligned, followed by a guard that must stay untouched.
class PoolScratch {
 public:
  static constexpr size_t kGuard = 256;
  PoolScratch(aotc::rt::ThreadPool& pool, int64_t bytes_per_thread) : pool_(pool) {
    stride_ = (static_cast<size_t>(bytes_per_thread) + 63) / 64 * 64;
    storage_.assign(stride_ * static_cast<size_t>(pool.size()) + 64 + kGuard, 0xa5);
    const auto address = reinterpret_cast<uintptr_t>(storage_.data());
    base_ = storage_.data() + (64 - address % 64) % 64;
    // The scratch itself starts as NaNs (0xff bytes): a kernel that reads a scratch float it
    // did not write carries a NaN into its outputs instead of a tiny number (0xa5a5a5a5 is
    // -2.9e-16) that the tolerance would hide.
    const size_t scratch_bytes = stride_ * static_cast<size_t>(pool.size());
    if (scratch_bytes > 0 && scratch_bytes < storage_.size()) std::memset(base_, 0xff, scratch_bytes);
    pool.set_thread_scratch(stride_ ? base_ : nullptr, stride_);
  }
  ~PoolScratch() { pool_.set_thread_scratch(nullptr, 0); }
  PoolScratch(const PoolScratch&) = delete;
  PoolScratch& operator=(const PoolScratch&) = delete;
  bool guard_intact() const {
    const unsigned char* guard = base_ + stride_ * static_cast<size_t>(pool_.size());
    for (size_t i = 0; i < kGuard; ++i)
      if (guard[i] != 0xa5) return false;
    return true;
  }

 private:
  aotc::rt::ThreadPool& pool_;
  size_t stride_ = 0;
  std::vector<unsigned char> storage_;
  unsigned char* base_ = nullptr;
};

// A float buffer with sentinel words before and after it. The payload starts out
// filled with a NaN pattern too, so an output element the kernel forgets is a NaN.
class Guarded {
 public:
  static constexpr size_t kGuard = 16;
  static constexpr uint32_t kSentinel = 0x7fc0deadu;  // a quiet NaN

  explicit Guarded(size_t count) : count_(count), storage_(count + 2 * kGuard) {
    for (float& x : storage_) x = sentinel();
  }
  Guarded(size_t count, const std::vector<float>& init) : Guarded(count) {
    if (!init.empty())
      std::memcpy(data(), init.data(), sizeof(float) * (init.size() < count ? init.size() : count));
  }

  static float sentinel() {
    float f;
    std::memcpy(&f, &kSentinel, sizeof f);
    return f;
  }
  static bool is_sentinel(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u == kSentinel;
  }

  float* data() { return storage_.data() + kGuard; }
  const float* data() const { return storage_.data() + kGuard; }
  size_t size() const { return count_; }
  std::vector<float> values() const { return {data(), data() + count_}; }

  // True when no word outside [0, count) was touched.
  bool guards_intact() const {
    for (size_t i = 0; i < kGuard; ++i)
      if (!is_sentinel(storage_[i]) || !is_sentinel(storage_[kGuard + count_ + i])) return false;
    return true;
  }

 private:
  size_t count_;
  std::vector<float> storage_;
};

// ------------------------------------------------------------------ references

inline std::vector<double> ref_gemm(const rt::GemmParams& p, const float* a, const float* b,
                                    const float* bias) {
  std::vector<double> c(static_cast<size_t>(p.m * p.n));
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < p.k; ++k) {
        const double av = p.trans_a ? a[k * p.lda + i] : a[i * p.lda + k];
        const double bv = p.trans_b ? b[j * p.ldb + k] : b[k * p.ldb + j];
        acc += av * bv;
      }
      double v = p.alpha * acc;
      if (p.beta != 0.0f) {
        switch (p.bias_kind) {
          case rt::BiasKind::None:
            break;
          case rt::BiasKind::PerColumn:
            v += double(p.beta) * bias[j];
            break;
          case rt::BiasKind::PerRow:
            v += double(p.beta) * bias[i];
            break;
          case rt::BiasKind::Full:
            v += double(p.beta) * bias[i * p.n + j];
            break;
        }
      }
      v = std::fmin(std::fmax(v, double(p.clamp_lo)), double(p.clamp_hi));
      c[static_cast<size_t>(i * p.n + j)] = v;
    }
  }
  return c;
}

// residual (y's shape, or null) is added before the clamp, as the kernels' epilogue does.
inline std::vector<double> ref_conv2d(const rt::Conv2dParams& p, const float* x, const float* w,
                                      const float* bias, const float* residual = nullptr) {
  const int64_t cin_g = p.c_in / p.groups, cout_g = p.c_out / p.groups;
  std::vector<double> y(static_cast<size_t>(p.n * p.c_out * p.h_out * p.w_out));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t co = 0; co < p.c_out; ++co) {
      const int64_t g = co / cout_g;
      for (int64_t oh = 0; oh < p.h_out; ++oh)
        for (int64_t ow = 0; ow < p.w_out; ++ow) {
          double acc = p.has_bias ? bias[co] : 0.0;
          for (int64_t ci = 0; ci < cin_g; ++ci)
            for (int64_t i = 0; i < p.kernel_h; ++i)
              for (int64_t j = 0; j < p.kernel_w; ++j) {
                const int64_t ih = oh * p.stride_h - p.pad_h + i * p.dilation_h;
                const int64_t iw = ow * p.stride_w - p.pad_w + j * p.dilation_w;
                if (ih < 0 || ih >= p.h_in || iw < 0 || iw >= p.w_in) continue;
                const double xv = x[((n * p.c_in + g * cin_g + ci) * p.h_in + ih) * p.w_in + iw];
                const double wv = w[((co * cin_g + ci) * p.kernel_h + i) * p.kernel_w + j];
                acc += xv * wv;
              }
          const size_t at = static_cast<size_t>(((n * p.c_out + co) * p.h_out + oh) * p.w_out + ow);
          if (residual) acc += residual[at];
          y[at] = std::fmin(std::fmax(acc, double(p.clamp_lo)), double(p.clamp_hi));
        }
    }
  return y;
}

// torch's pooling_output_shape.
inline int64_t pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation,
                             bool ceil_mode) {
  const int64_t num = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = num / stride + 1;  // num >= 0 in every test
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

inline std::vector<double> ref_max_pool2d(const rt::Pool2dParams& p, const float* x) {
  std::vector<double> y(static_cast<size_t>(p.n * p.c * p.h_out * p.w_out));
  for (int64_t q = 0; q < p.n * p.c; ++q)
    for (int64_t oh = 0; oh < p.h_out; ++oh)
      for (int64_t ow = 0; ow < p.w_out; ++ow) {
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < p.kernel_h; ++i)
          for (int64_t j = 0; j < p.kernel_w; ++j) {
            const int64_t ih = oh * p.stride_h - p.pad_h + i * p.dilation_h;
            const int64_t iw = ow * p.stride_w - p.pad_w + j * p.dilation_w;
            if (ih < 0 || ih >= p.h_in || iw < 0 || iw >= p.w_in) continue;
            const double v = x[(q * p.h_in + ih) * p.w_in + iw];
            if (v > m || std::isnan(v)) m = v;
          }
        y[static_cast<size_t>((q * p.h_out + oh) * p.w_out + ow)] = m;
      }
  return y;
}

// torch's avg_pool2d divisor: cells inside the padded input count when
// count_include_pad, cells past the padded border (ceil_mode) never do.
inline std::vector<double> ref_avg_pool2d(const rt::Pool2dParams& p, const float* x) {
  std::vector<double> y(static_cast<size_t>(p.n * p.c * p.h_out * p.w_out));
  for (int64_t q = 0; q < p.n * p.c; ++q)
    for (int64_t oh = 0; oh < p.h_out; ++oh)
      for (int64_t ow = 0; ow < p.w_out; ++ow) {
        double sum = 0.0;
        int64_t inside = 0, padded = 0;
        for (int64_t i = 0; i < p.kernel_h; ++i)
          for (int64_t j = 0; j < p.kernel_w; ++j) {
            const int64_t ih = oh * p.stride_h - p.pad_h + i;
            const int64_t iw = ow * p.stride_w - p.pad_w + j;
            const bool in_padded =
                ih >= -p.pad_h && ih < p.h_in + p.pad_h && iw >= -p.pad_w && iw < p.w_in + p.pad_w;
            if (in_padded) ++padded;
            if (ih < 0 || ih >= p.h_in || iw < 0 || iw >= p.w_in) continue;
            ++inside;
            sum += x[(q * p.h_in + ih) * p.w_in + iw];
          }
        const int64_t divisor =
            p.divisor_override ? p.divisor_override : (p.count_include_pad ? padded : inside);
        y[static_cast<size_t>((q * p.h_out + oh) * p.w_out + ow)] = inside ? sum / divisor : 0.0;
      }
  return y;
}

inline std::vector<double> ref_adaptive_avg_pool2d(int64_t n, int64_t c, int64_t h_in, int64_t w_in,
                                                   int64_t h_out, int64_t w_out, const float* x) {
  std::vector<double> y(static_cast<size_t>(n * c * h_out * w_out));
  for (int64_t q = 0; q < n * c; ++q)
    for (int64_t oh = 0; oh < h_out; ++oh)
      for (int64_t ow = 0; ow < w_out; ++ow) {
        const int64_t h0 = static_cast<int64_t>(std::floor(double(oh) * h_in / h_out));
        const int64_t h1 = static_cast<int64_t>(std::ceil(double(oh + 1) * h_in / h_out));
        const int64_t w0 = static_cast<int64_t>(std::floor(double(ow) * w_in / w_out));
        const int64_t w1 = static_cast<int64_t>(std::ceil(double(ow + 1) * w_in / w_out));
        double sum = 0.0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) sum += x[(q * h_in + ih) * w_in + iw];
        y[static_cast<size_t>((q * h_out + oh) * w_out + ow)] = sum / double((h1 - h0) * (w1 - w0));
      }
  return y;
}

inline double ref_unary(rt::UnaryOp op, double a, double b, double x) {
  using rt::UnaryOp;
  switch (op) {
    case UnaryOp::Identity:
      return x;
    case UnaryOp::Relu:
      return x < 0 ? 0 : x;
    case UnaryOp::Clamp:
      return std::fmin(std::fmax(x, a), b);
    case UnaryOp::LeakyRelu:
      return x >= 0 ? x : a * x;
    case UnaryOp::Sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case UnaryOp::Tanh:
      return std::tanh(x);
    case UnaryOp::GeluErf:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case UnaryOp::GeluTanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
    case UnaryOp::Silu:
      return x / (1.0 + std::exp(-x));
    case UnaryOp::Hardswish:
      return x * std::fmin(std::fmax(x + 3.0, 0.0), 6.0) / 6.0;
    case UnaryOp::Hardsigmoid:
      return std::fmin(std::fmax(x + 3.0, 0.0), 6.0) / 6.0;
    default:  // the pointwise family's ops: test_kernels_pointwise.cpp has their references
      break;
  }
  return std::nan("");
}

inline int64_t index_space_size(int32_t rank, const int64_t* dims) {
  int64_t total = 1;
  for (int32_t d = 0; d < rank; ++d) total *= dims[d];
  return total;
}

// Offset of the linear (row-major) index `linear` of dims through strides.
inline int64_t strided_offset(int32_t rank, const int64_t* dims, const int64_t* strides, int64_t linear) {
  int64_t off = 0;
  for (int32_t d = rank - 1; d >= 0; --d) {
    off += (linear % dims[d]) * strides[d];
    linear /= dims[d];
  }
  return off;
}

inline std::vector<double> ref_binary(const rt::BinaryParams& p, const float* a, const float* b) {
  const int64_t total = index_space_size(p.rank, p.out_dims);
  std::vector<double> y(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) {
    const double av = a[strided_offset(p.rank, p.out_dims, p.a_strides, i)];
    const double bv = b[strided_offset(p.rank, p.out_dims, p.b_strides, i)];
    double v = 0.0;
    switch (p.op) {
      case rt::BinaryOp::Add:
        v = av + double(p.alpha) * bv;
        break;
      case rt::BinaryOp::Sub:
        v = av - double(p.alpha) * bv;
        break;
      case rt::BinaryOp::Mul:
        v = av * bv;
        break;
      case rt::BinaryOp::Div:
        v = av / bv;
        break;
      default:  // the rest: test_kernels_pointwise.cpp
        v = std::nan("");
        break;
    }
    y[static_cast<size_t>(i)] = v;
  }
  return y;
}

// Byte-exact reference for copy_strided.
inline void ref_copy(const rt::CopyParams& p, const unsigned char* src, unsigned char* dst) {
  const int64_t total = index_space_size(p.rank, p.dims);
  for (int64_t i = 0; i < total; ++i) {
    const int64_t so = strided_offset(p.rank, p.dims, p.src_strides, i);
    const int64_t d = strided_offset(p.rank, p.dims, p.dst_strides, i);
    std::memcpy(dst + d * p.elem_size, src + so * p.elem_size, static_cast<size_t>(p.elem_size));
  }
}

inline std::vector<double> ref_softmax(int64_t outer, int64_t axis, int64_t inner, bool log, const float* x) {
  std::vector<double> y(static_cast<size_t>(outer * axis * inner));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t a) { return static_cast<size_t>((o * axis + a) * inner + j); };
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t a = 0; a < axis; ++a) m = std::fmax(m, double(x[at(a)]));
      double sum = 0.0;
      for (int64_t a = 0; a < axis; ++a) sum += std::exp(double(x[at(a)]) - m);
      for (int64_t a = 0; a < axis; ++a) {
        const double s = double(x[at(a)]) - m;
        y[at(a)] = log ? s - std::log(sum) : std::exp(s) / sum;
      }
    }
  return y;
}

inline std::vector<double> ref_reduce(const rt::ReduceParams& p, const float* x) {
  // Outputs are dense over the kept dims, in order.
  int64_t out_total = 1;
  int64_t out_strides[8];
  for (int32_t d = p.rank - 1; d >= 0; --d) {
    out_strides[d] = p.reduce_mask[d] ? 0 : out_total;
    if (!p.reduce_mask[d]) out_total *= p.dims[d];
  }
  const double init = p.op == rt::ReduceOp::Max    ? -std::numeric_limits<double>::infinity()
                      : p.op == rt::ReduceOp::Min  ? std::numeric_limits<double>::infinity()
                      : p.op == rt::ReduceOp::Prod ? 1.0
                                                   : 0.0;
  std::vector<double> y(static_cast<size_t>(out_total), init);
  std::vector<int64_t> counts(static_cast<size_t>(out_total), 0);
  const int64_t total = index_space_size(p.rank, p.dims);
  for (int64_t i = 0; i < total; ++i) {
    const size_t o = static_cast<size_t>(strided_offset(p.rank, p.dims, out_strides, i));
    const double v = x[i];
    ++counts[o];
    switch (p.op) {
      case rt::ReduceOp::Sum:
      case rt::ReduceOp::Mean:
        y[o] += v;
        break;
      case rt::ReduceOp::Max:
        y[o] = std::fmax(y[o], v);
        break;
      case rt::ReduceOp::Min:
        y[o] = std::fmin(y[o], v);
        break;
      case rt::ReduceOp::Prod:
        y[o] *= v;
        break;
    }
  }
  if (p.op == rt::ReduceOp::Mean)
    for (size_t o = 0; o < y.size(); ++o) y[o] /= double(counts[o]);
  return y;
}

// Dense row-major strides of dims.
inline void dense_strides(int32_t rank, const int64_t* dims, int64_t* strides) {
  int64_t s = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    strides[d] = s;
    s *= dims[d];
  }
}

inline std::string dims_str(int32_t rank, const int64_t* dims) {
  std::string s = "[";
  for (int32_t d = 0; d < rank; ++d) {
    if (d > 0) s += ',';
    s += std::to_string(dims[d]);
  }
  return s + "]";
}

}  // namespace aotc::test

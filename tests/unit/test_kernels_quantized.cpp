// The int8 kernels (kernels/quantized.h) against naive references written from the
// header's formulas, bit for bit: qconv2d_u8 (the product on rows read in place or
// gathered, grouped, depthwise, with and without thread scratch), qlinear_u8, quantize /
// dequantize (NaN and infinities as torch 2.11 gives them), qadd_u8, clamp_u8, max_pool2d_u8
// and adaptive_avg_pool2d_u8 in both layouts. Every output buffer has sentinels after it.
// Under unit_avx2 (AOTC_CPU_AVX512=0) the same tests check the AVX2 forms; on aarch64 (qemu)
// -cpu max checks the DotProd forms, -cpu cortex-a53 or AOTC_CPU_DOTPROD=0 the plain NEON ones.
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernel_reference.h"

namespace {

using aotc::rt::QConv2dParams;
using aotc::rt::QLinearParams;
using aotc::rt::QRequant;
using aotc::rt::ThreadPool;
using aotc::test::PoolScratch;

// A small deterministic generator (xorshift32).
struct Rng {
  uint32_t s;
  uint32_t next() {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    return s;
  }
  int32_t range(int32_t lo, int32_t hi) {
    return lo + static_cast<int32_t>(next() % static_cast<uint32_t>(hi - lo + 1));
  }
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(next() >> 8) * (1.0f / 16777216.0f);
  }
};

constexpr size_t kGuard = 64;
constexpr uint8_t kSentinel = 0xA5;

// A byte buffer with sentinels after `count` bytes; the payload starts as 0xCD.
struct Bytes {
  std::vector<uint8_t> v;
  size_t count;
  explicit Bytes(size_t n) : v(n, 0xCD), count(n) { v.resize(n + kGuard, kSentinel); }
  uint8_t* data() { return v.data(); }
  bool guard_intact() const {
    for (size_t i = count; i < v.size(); ++i)
      if (v[i] != kSentinel) return false;
    return true;
  }
};

// Input bytes that end right where an inaccessible page starts: a kernel that reads past
// its input (a row's last dword, a vector over the last pixel) faults.
struct EdgeBytes {
  unsigned char* map = nullptr;
  size_t map_bytes = 0;
  uint8_t* p = nullptr;
  explicit EdgeBytes(size_t n) {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t data = (n + page - 1) / page * page;
    map_bytes = data + page;
    void* m = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(m != MAP_FAILED);
    map = static_cast<unsigned char*>(m);
    REQUIRE(mprotect(map + data, page, PROT_NONE) == 0);
    p = map + data - n;
  }
  ~EdgeBytes() { munmap(map, map_bytes); }
  EdgeBytes(const EdgeBytes&) = delete;
  EdgeBytes& operator=(const EdgeBytes&) = delete;
  uint8_t* data() { return p; }
  uint8_t& operator[](size_t i) { return p[i]; }
  uint8_t* begin() { return p; }
  uint8_t* end() { return map + map_bytes - static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
};

// 64-byte aligned int8 storage (the weights blob aligns each constant).
struct Aligned {
  std::vector<int8_t> v;
  int8_t* p = nullptr;
  explicit Aligned(int64_t n) : v(static_cast<size_t>(n) + 64 + kGuard, static_cast<int8_t>(kSentinel)) {
    const auto address = reinterpret_cast<uintptr_t>(v.data());
    p = v.data() + (64 - address % 64) % 64;
  }
};

// x86's cvtps2dq in the current rounding mode, as the header's nearbyint ends in an int32.
int64_t cvt(float v) {
  const double r = std::nearbyint(static_cast<double>(v));
  return (r >= -2147483648.0 && r < 2147483648.0) ? static_cast<int64_t>(r)
                                                  : std::numeric_limits<int32_t>::min();
}

// The header's requantization of one int32 sum.
uint8_t ref_requant(int64_t sum, int64_t sum_a, const QRequant& rq, int64_t j) {
  auto acc = static_cast<int32_t>(
      static_cast<uint32_t>(sum + rq.acc_offset[j] - (rq.w_zero ? rq.w_zero[j] * sum_a : 0)));
  if (rq.acc_scale) {
    // The oneDNN form: two fused multiply-adds, each rounded once.
    double g = std::fma(std::fma(static_cast<float>(acc), rq.acc_scale[j], rq.bias_over_scale[j]),
                        rq.multiplier[j], static_cast<float>(rq.out_zero));
    g = g > rq.lo ? g : rq.lo;  // NaN: lo
    g = g < rq.hi ? g : rq.hi;
    return static_cast<uint8_t>(cvt(static_cast<float>(g)));
  }
  float f = static_cast<float>(acc);
  f = f + rq.bias_over_scale[j];
  f = f * rq.multiplier[j];
  int64_t v = rq.out_zero + cvt(f);
  v = v < rq.lo ? rq.lo : v;
  v = v > rq.hi ? rq.hi : v;
  return static_cast<uint8_t>(v);
}

// QRequant's arrays for n channels, chosen from the raw sums' spread so that the outputs
// cover the whole range (and saturate at both ends).
struct Requant {
  std::vector<int32_t> off, wz;
  std::vector<float> bias, mult, scale;
  QRequant rq;
};
enum class RqMode {
  PerChannel,
  PerTensorRelu,
  WeightZeroRelu,
  ZeroPoint255,
  BoundedRelu6,
  Extremes,         // channels from 1 on cycle through kExtremes (weight zero points)
  ExtremesClamped,  // the same with lo 30, hi 250 (no weight zero points)
  OneDnnRelu,       // QRequant's oneDNN form (acc_scale), an odd zero point, a fused relu
  OneDnnExtremes,   // that form with acc_scale 1 and kExtremes' pairs as (bias, multiplier)
};
// (bias_over_scale, multiplier) pairs whose products are NaN, infinite, beyond the int32
// range either way (x86's conversion gives INT32_MIN: lo, never hi), at 2^31 itself, halves
// (round to even), negative, zero and subnormal: every vector epilogue must give the bytes
// that the header's scalar formula gives.
const float kInf = std::numeric_limits<float>::infinity(), kNaN = std::numeric_limits<float>::quiet_NaN();
const float kExtremes[][2] = {
    {kNaN, 1.0f},   {0.0f, kNaN},          {kInf, 0.5f},           {-kInf, 0.5f},          {0.0f, kInf},
    {0.0f, -kInf},  {kInf, 0.0f},          {1e30f, 1.0f},          {-1e30f, 1.0f},         {0.0f, 1e6f},
    {0.0f, -1e6f},  {2147483520.0f, 1.0f}, {-2147483648.0f, 1.0f}, {2147483648.0f, -1.0f}, {0.5f, 1.0f},
    {-0.5f, 1.0f},  {0.5f, 0.5f},          {0.0f, -0.25f},         {0.0f, 0.0f},           {0.0f, 1e-45f},
    {3e38f, 10.0f}, {1.5f, 2.0f},          {0.0f, 2.0e4f},         {-1.0f, 1e-3f},
};
Requant make_requant(int64_t n, RqMode mode, double spread, Rng& rng) {
  Requant r;
  r.off.resize(static_cast<size_t>(n));
  r.bias.resize(static_cast<size_t>(n));
  r.mult.resize(static_cast<size_t>(n));
  const bool per_tensor = mode == RqMode::PerTensorRelu;
  const bool weight_zero =
      mode == RqMode::WeightZeroRelu || mode == RqMode::PerChannel || mode == RqMode::Extremes;
  const auto span = static_cast<int32_t>(spread < 1.0 ? 1.0 : spread);
  const float base = static_cast<float>(200.0 / (spread + 1.0));
  for (int64_t j = 0; j < n; ++j) {
    r.off[j] = rng.range(-span / 4, span / 4);
    r.bias[j] = rng.uniform(-0.25f, 0.25f) * static_cast<float>(span);
    r.mult[j] = per_tensor ? base : base * rng.uniform(0.25f, 2.0f);
  }
  if (weight_zero) {
    r.wz.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) r.wz[j] = rng.range(-128, 127);
    r.wz[0] = 0;
  }
  if (mode == RqMode::Extremes || mode == RqMode::ExtremesClamped || mode == RqMode::OneDnnExtremes)
    for (int64_t j = 1; j < n; ++j) {
      const float* e = kExtremes[static_cast<size_t>(j - 1) % std::size(kExtremes)];
      r.bias[j] = e[0];
      r.mult[j] = e[1];
    }
  r.rq.acc_offset = r.off.data();
  r.rq.bias_over_scale = r.bias.data();
  r.rq.multiplier = r.mult.data();
  r.rq.w_zero = weight_zero ? r.wz.data() : nullptr;
  if (mode == RqMode::OneDnnRelu) {
    // acc_scale * multiplier as fbgemm's multiplier, the bias in output units.
    r.scale.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      r.scale[j] = r.mult[j] * 8.0f * rng.uniform(0.5f, 1.5f);
      r.bias[j] *= r.scale[j];
      r.mult[j] = 0.125f;
    }
    r.rq.acc_scale = r.scale.data();
  }
  if (mode == RqMode::OneDnnExtremes) {
    r.scale.assign(static_cast<size_t>(n), 1.0f);
    r.rq.acc_scale = r.scale.data();
  }
  switch (mode) {
    case RqMode::PerChannel:
      r.rq.out_zero = rng.range(1, 254);
      break;
    case RqMode::PerTensorRelu:
      r.rq.out_zero = 0;
      r.rq.lo = 0;
      break;
    case RqMode::WeightZeroRelu:
      r.rq.out_zero = 128;
      r.rq.lo = 128;
      break;
    case RqMode::ZeroPoint255:
      r.rq.out_zero = 255;
      break;
    case RqMode::BoundedRelu6:
      r.rq.out_zero = 100;
      r.rq.lo = 100;
      r.rq.hi = 180;
      break;
    case RqMode::Extremes:
      r.rq.out_zero = 77;
      break;
    case RqMode::ExtremesClamped:
      r.rq.out_zero = 128;
      r.rq.lo = 30;
      r.rq.hi = 250;
      break;
    case RqMode::OneDnnRelu:
      r.rq.out_zero = 37;
      r.rq.lo = 37;
      break;
    case RqMode::OneDnnExtremes:
      r.rq.out_zero = 93;
      r.rq.lo = 20;
      r.rq.hi = 240;
      break;
  }
  return r;
}
const RqMode kModes[] = {RqMode::PerChannel,   RqMode::PerTensorRelu, RqMode::WeightZeroRelu,
                         RqMode::ZeroPoint255, RqMode::BoundedRelu6,  RqMode::OneDnnRelu};
const int32_t kInZeros[] = {0, 128, 255, 37, 200};

// ---------------------------------------------------------------- convolution
struct QConvCase {
  const char* name;
  int64_t n, c_in, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw, groups;
};

const QConvCase kConvCases[] = {
    {"pointwise 3 -> 7 (depth < 4)", 1, 3, 5, 5, 7, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"pointwise 5 -> 33", 1, 5, 13, 13, 33, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"pointwise 17 -> 100, two images", 2, 17, 7, 9, 100, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"pointwise 67 -> 1", 1, 67, 3, 3, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"pointwise 64 -> 64", 1, 64, 8, 8, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"pointwise 1x1 image 67 -> 100", 1, 67, 1, 1, 100, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"pointwise 40 -> 130, 3 blocks", 1, 40, 11, 12, 130, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"pointwise groups 2 (5 -> 7 each)", 1, 10, 6, 7, 14, 1, 1, 1, 1, 0, 0, 1, 1, 2},
    {"1x1 stride 2", 1, 17, 13, 13, 33, 1, 1, 2, 2, 0, 0, 1, 1, 1},
    {"1x1 pad 1", 1, 5, 4, 3, 7, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {"3x3 pad 1, 3 -> 33", 1, 3, 13, 11, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"3x3 stride 2 pad 1, 67 -> 100", 1, 67, 9, 9, 100, 3, 3, 2, 2, 1, 1, 1, 1, 1},
    {"5x5 pad 2", 2, 5, 12, 10, 7, 5, 5, 1, 1, 2, 2, 1, 1, 1},
    {"7x7 stride 2 pad 3 stem", 1, 3, 13, 13, 64, 7, 7, 2, 2, 3, 3, 1, 1, 1},
    {"dilation 2", 1, 17, 11, 11, 33, 3, 3, 1, 1, 2, 2, 2, 2, 1},
    {"dilation (1, 2) stride 2", 1, 5, 10, 13, 7, 3, 3, 2, 2, 1, 2, 1, 2, 1},
    {"pad 3 on a 1x1 image", 1, 5, 1, 1, 7, 3, 3, 1, 1, 3, 3, 1, 1, 1},
    {"1x1 image padded 3x3", 1, 67, 1, 1, 100, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"groups 2 3x3", 1, 6, 7, 8, 66, 3, 3, 1, 1, 1, 1, 1, 1, 2},
    {"groups 2 stride 2 pad 0", 2, 34, 9, 9, 14, 3, 3, 2, 2, 0, 0, 1, 1, 2},
    {"3x1 stride (2, 1) pad (1, 0)", 2, 5, 9, 7, 7, 3, 1, 2, 1, 1, 0, 1, 1, 1},
    {"1x3 stride (1, 2)", 1, 17, 5, 12, 33, 1, 3, 1, 2, 0, 1, 1, 1, 1},
    {"3x3 64 -> 128, several strips", 1, 64, 17, 17, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"3x3 17 -> 130, ragged block", 1, 17, 6, 5, 130, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    // AMX: pairs and single tiles of 16 rows, the rows left over, depths past whole tiles of 64.
    {"pointwise 200 -> 130 on 9x9 (tile rows and depth tails)", 1, 200, 9, 9, 130, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"3x3 64 -> 80 on 7x7 (depth in whole tiles)", 1, 64, 7, 7, 80, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"pointwise 48 -> 16, 33 rows", 1, 48, 3, 11, 16, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"channel multiplier 2", 1, 4, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 4},
    {"depthwise 3x3, 7 channels", 1, 7, 9, 9, 7, 3, 3, 1, 1, 1, 1, 1, 1, 7},
    {"depthwise 3x3 stride 2, 100 channels", 1, 100, 13, 13, 100, 3, 3, 2, 2, 1, 1, 1, 1, 100},
    {"depthwise 5x5 dilation 2 pad 4, 33 channels", 1, 33, 11, 10, 33, 5, 5, 1, 1, 4, 4, 2, 2, 33},
    {"depthwise 7x7 pad 3, 17 channels", 2, 17, 8, 7, 17, 7, 7, 1, 1, 3, 3, 1, 1, 17},
    {"depthwise 1x1, 5 channels", 1, 5, 3, 4, 5, 1, 1, 1, 1, 0, 0, 1, 1, 5},
    {"depthwise 3x3, 144 channels", 2, 144, 6, 6, 144, 3, 3, 1, 1, 1, 1, 1, 1, 144},
    {"depthwise pad 3 > kernel", 1, 24, 2, 3, 24, 3, 3, 1, 2, 3, 3, 1, 1, 24},
};

int64_t out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation) {
  return (in + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
}

QConv2dParams make_params(const QConvCase& c, int32_t in_zero) {
  QConv2dParams p;
  p.n = c.n;
  p.c_in = c.c_in;
  p.h_in = c.h;
  p.w_in = c.w;
  p.c_out = c.c_out;
  p.kernel_h = c.kh;
  p.kernel_w = c.kw;
  p.stride_h = c.sh;
  p.stride_w = c.sw;
  p.pad_h = c.ph;
  p.pad_w = c.pw;
  p.dilation_h = c.dh;
  p.dilation_w = c.dw;
  p.groups = c.groups;
  p.in_zero = in_zero;
  p.h_out = out_size(c.h, c.kh, c.ph, c.sh, c.dh);
  p.w_out = out_size(c.w, c.kw, c.pw, c.sw, c.dw);
  return p;
}

// The raw sums sum_k a * w and sum_k a of every output (NHWC order), padding read as in_zero.
void ref_conv_sums(const QConv2dParams& p, const uint8_t* x, const int8_t* w, std::vector<int64_t>& sums,
                   std::vector<int64_t>& sums_a) {
  const int64_t cig = p.c_in / p.groups, cog = p.c_out / p.groups;
  const int64_t count = p.n * p.h_out * p.w_out * p.c_out;
  sums.assign(static_cast<size_t>(count), 0);
  sums_a.assign(static_cast<size_t>(count), 0);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t oh = 0; oh < p.h_out; ++oh)
      for (int64_t ow = 0; ow < p.w_out; ++ow)
        for (int64_t co = 0; co < p.c_out; ++co) {
          const int64_t g = co / cog;
          int64_t s = 0, sa = 0;
          for (int64_t ci = 0; ci < cig; ++ci)
            for (int64_t i = 0; i < p.kernel_h; ++i)
              for (int64_t j = 0; j < p.kernel_w; ++j) {
                const int64_t ih = oh * p.stride_h - p.pad_h + i * p.dilation_h;
                const int64_t iw = ow * p.stride_w - p.pad_w + j * p.dilation_w;
                const bool in = ih >= 0 && ih < p.h_in && iw >= 0 && iw < p.w_in;
                const int64_t a =
                    in ? x[((n * p.h_in + ih) * p.w_in + iw) * p.c_in + g * cig + ci] : p.in_zero;
                s += a * w[((co * cig + ci) * p.kernel_h + i) * p.kernel_w + j];
                sa += a;
              }
          const int64_t at = ((n * p.h_out + oh) * p.w_out + ow) * p.c_out + co;
          sums[at] = s;
          sums_a[at] = sa;
        }
}

double spread_of(const std::vector<int64_t>& sums) {
  double m = 0.0;
  for (int64_t s : sums) m = std::fmax(m, std::fabs(static_cast<double>(s)));
  return m;
}

void check_conv(const QConvCase& c, RqMode mode, int32_t in_zero, ThreadPool& pool, bool scratch_given,
                Rng& rng) {
  const QConv2dParams p = make_params(c, in_zero);
  const int64_t x_count = p.n * p.h_in * p.w_in * p.c_in;
  const int64_t w_count = p.c_out * (p.c_in / p.groups) * p.kernel_h * p.kernel_w;
  const int64_t y_count = p.n * p.h_out * p.w_out * p.c_out;
  EdgeBytes x(static_cast<size_t>(x_count));
  for (int64_t i = 0; i < x_count; ++i) x.data()[i] = static_cast<uint8_t>(rng.next() >> 24);
  std::vector<int8_t> w(static_cast<size_t>(w_count));
  for (auto& v : w) v = static_cast<int8_t>(rng.next() >> 24);
  if (w_count > 1) {
    w[0] = -128;
    w[1] = 127;
  }
  std::vector<int64_t> sums, sums_a;
  ref_conv_sums(p, x.data(), w.data(), sums, sums_a);
  Requant r = make_requant(p.c_out, mode, spread_of(sums), rng);

  const int64_t packed_bytes = aotc::rt::qconv2d_packed_weight_bytes(p);
  Aligned packed(packed_bytes);
  aotc::rt::qconv2d_pack_weights(p, w.data(), packed.p);
  bool packed_guard = true;
  for (int64_t i = packed_bytes; i < packed_bytes + static_cast<int64_t>(kGuard); ++i)
    packed_guard = packed_guard && packed.p[i] == static_cast<int8_t>(kSentinel);
  CHECK(packed_guard);

  Bytes y(static_cast<size_t>(y_count));
  {
    PoolScratch scratch(pool, scratch_given ? aotc::rt::qconv2d_thread_scratch_bytes(p) : 0);
    aotc::rt::qconv2d_u8(pool, p, x.data(), packed.p, r.rq, y.data());
    CHECK(scratch.guard_intact());
  }
  CHECK(y.guard_intact());
  // The outputs spread over the range (the test would not see a wrong sum otherwise).
  if (mode == RqMode::PerChannel && y_count >= 256) {
    bool seen[256] = {};
    int distinct = 0;
    for (int64_t i = 0; i < y_count; ++i) distinct += !seen[y.data()[i]] ? (seen[y.data()[i]] = true, 1) : 0;
    INFO(std::string(c.name) << " in_zero " << in_zero);
    CHECK(distinct >= 12);
  }
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < y_count; ++i) {
    const uint8_t want = ref_requant(sums[i], sums_a[i], r.rq, i % p.c_out);
    if (y.data()[i] != want) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  INFO(std::string(c.name) << " mode " << static_cast<int>(mode) << " in_zero " << in_zero << " threads "
                           << pool.size() << " scratch " << scratch_given << " first bad " << first << " got "
                           << (first >= 0 ? int(y.data()[first]) : -1) << " want "
                           << (first >= 0
                                   ? int(ref_requant(sums[first], sums_a[first], r.rq, first % p.c_out))
                                   : -1));
  CHECK(bad == 0);
}

// ---------------------------------------------------------------- linear
void check_linear(int64_t m, int64_t n, int64_t k, RqMode mode, ThreadPool& pool, bool scratch_given,
                  Rng& rng) {
  const QLinearParams p{m, n, k};
  EdgeBytes x(static_cast<size_t>(m * k));
  for (int64_t i = 0; i < m * k; ++i) x.data()[i] = static_cast<uint8_t>(rng.next() >> 24);
  std::vector<int8_t> w(static_cast<size_t>(n * k));
  for (auto& v : w) v = static_cast<int8_t>(rng.next() >> 24);
  std::vector<int64_t> sums(static_cast<size_t>(m * n)), sums_a(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t s = 0, sa = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        s += static_cast<int64_t>(x.data()[i * k + kk]) * w[j * k + kk];
        sa += x.data()[i * k + kk];
      }
      sums[i * n + j] = s;
      sums_a[i * n + j] = sa;
    }
  Requant r = make_requant(n, mode, spread_of(sums), rng);
  const int64_t packed_bytes = aotc::rt::qlinear_packed_weight_bytes(p);
  Aligned packed(packed_bytes);
  aotc::rt::qlinear_pack_weights(p, w.data(), packed.p);
  Bytes y(static_cast<size_t>(m * n));
  {
    PoolScratch scratch(pool, scratch_given ? aotc::rt::qlinear_thread_scratch_bytes(p) : 0);
    aotc::rt::qlinear_u8(pool, p, x.data(), packed.p, r.rq, y.data());
    CHECK(scratch.guard_intact());
  }
  CHECK(y.guard_intact());
  int64_t bad = 0;
  for (int64_t i = 0; i < m * n; ++i) bad += y.data()[i] != ref_requant(sums[i], sums_a[i], r.rq, i % n);
  INFO("linear m " << m << " n " << n << " k " << k << " mode " << static_cast<int>(mode) << " threads "
                   << pool.size());
  CHECK(bad == 0);
}

// torch's quantization of t = x * inv_scale (fbgemm's QuantizeAvx2, measured on torch 2.11).
uint8_t ref_quantize(float t, int32_t zero) {
  if (!(t < 2147483520.0f)) t = 2147483520.0f;  // minps: NaN takes the clip value
  const auto r = static_cast<int32_t>(static_cast<uint32_t>(cvt(t)) + static_cast<uint32_t>(zero));
  return static_cast<uint8_t>(r < 0 ? 0 : r > 255 ? 255 : r);
}

}  // namespace

TEST_CASE("qconv2d_u8: every path against the reference, bit for bit") {
  Rng rng{12345};
  ThreadPool one(1), two(2);
  int case_index = 0;
  for (const QConvCase& c : kConvCases) {
    for (size_t mi = 0; mi < std::size(kModes); ++mi) {
      const int32_t in_zero = kInZeros[(mi + static_cast<size_t>(case_index)) % std::size(kInZeros)];
      check_conv(c, kModes[mi], in_zero, mi % 2 ? two : one, true, rng);
    }
    check_conv(c, RqMode::PerChannel, 128, two, false, rng);  // the stack block instead of scratch
    ++case_index;
  }
}

TEST_CASE("qconv2d_u8: deep layers without thread scratch, and threads splitting channel blocks") {
  Rng rng{777};
  ThreadPool one(1), two(2);
  // Depth 5400: a few rows of the stack block at a time; depth 33300: no room even for one
  // row (the direct path).
  const QConvCase deep[] = {
      {"deep 3x3", 1, 600, 5, 5, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {"very deep 3x3", 1, 3700, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {"7x7 plane, 512 channels (strip split over blocks)", 1, 96, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {"depthwise 9x9 192 channels", 1, 192, 9, 9, 192, 9, 9, 1, 1, 4, 4, 1, 1, 192},
  };
  for (const QConvCase& c : deep) {
    check_conv(c, RqMode::PerChannel, 77, one, false, rng);
    check_conv(c, RqMode::PerTensorRelu, 0, two, true, rng);
    check_conv(c, RqMode::WeightZeroRelu, 255, two, false, rng);
  }
}

TEST_CASE("qlinear_u8: one row to many, depths not a multiple of 4") {
  Rng rng{99};
  ThreadPool one(1), two(2);
  const int64_t ms[] = {1, 2, 5, 13, 64};
  const int64_t ns[] = {1, 7, 33, 100, 130, 1000};
  const int64_t ks[] = {1, 3, 5, 17, 67, 128, 1001};
  int i = 0;
  for (int64_t m : ms)
    for (int64_t n : ns)
      for (int64_t k : ks) {
        if (m * n * k > 4000000) continue;
        check_linear(m, n, k, kModes[i % std::size(kModes)], i % 2 ? two : one, i % 3 != 0, rng);
        ++i;
      }
}

TEST_CASE("qconv2d_u8 and qlinear_u8: requantizing NaN, infinities and huge values as x86") {
  Rng rng{8086};
  ThreadPool one(1), two(2);
  // Every path's epilogue: rows in place and gathered, strips one tile high (m = 1) or more,
  // depthwise, full and partial vectors of channels.
  const QConvCase cases[] = {
      {"pointwise 19 -> 53", 1, 19, 6, 7, 53, 1, 1, 1, 1, 0, 0, 1, 1, 1},
      {"3x3 pad 1, 8 -> 70", 1, 8, 7, 6, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {"1x1 image padded 3x3, 5 -> 40", 1, 5, 1, 1, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {"depthwise 3x3, 61 channels", 1, 61, 6, 5, 61, 3, 3, 1, 1, 1, 1, 1, 1, 61},
      {"depthwise 3x3, 24 channels", 2, 24, 4, 4, 24, 3, 3, 2, 2, 1, 1, 1, 1, 24},
  };
  for (const QConvCase& c : cases)
    for (RqMode mode : {RqMode::Extremes, RqMode::ExtremesClamped, RqMode::OneDnnExtremes}) {
      check_conv(c, mode, 37, one, true, rng);
      check_conv(c, mode, 200, two, false, rng);
    }
  for (int64_t m : {1, 3, 7, 30})
    for (RqMode mode : {RqMode::Extremes, RqMode::ExtremesClamped, RqMode::OneDnnExtremes}) {
      check_linear(m, 50, 37, mode, one, true, rng);
      check_linear(m, 25, 64, mode, two, false, rng);
    }
}

TEST_CASE("quantize_u8 and dequantize_u8: rounding, NaN and infinities as torch") {
  ThreadPool one(1), two(2);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // Measured with torch 2.11 (quantize_per_tensor, scale 1): NaN and +inf give 255 below zero
  // point 128 and 0 from 128 on (fbgemm clips at 2147483520 and adds the zero point in
  // int32); -inf gives 0; halves round to even.
  std::vector<float> special = {nan,   inf,  -inf, 1e10f, 3e9f,  2.2e9f, 2.1e9f,
                                -3e9f, 0.5f, 1.5f, 2.5f,  -0.5f, 254.5f, 255.5f};
  const int32_t zeros[] = {0, 5, 127, 128, 255};
  const uint8_t torch_nan[] = {255, 255, 255, 0, 0};
  const uint8_t torch_half[][6] = {{0, 2, 2, 0, 254, 255},
                                   {5, 7, 7, 5, 255, 255},
                                   {127, 129, 129, 127, 255, 255},
                                   {128, 130, 130, 128, 255, 255},
                                   {255, 255, 255, 255, 255, 255}};
  for (size_t zi = 0; zi < std::size(zeros); ++zi) {
    for (int64_t count : {1, 7, 8, 9, 14, 33}) {
      std::vector<float> x(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) x[i] = special[static_cast<size_t>(i) % special.size()];
      Bytes q(static_cast<size_t>(count));
      aotc::rt::quantize_u8(one, count, 1.0f, zeros[zi], x.data(), q.data());
      CHECK(q.guard_intact());
      for (int64_t i = 0; i < count; ++i) CHECK(q.data()[i] == ref_quantize(x[i], zeros[zi]));
      CHECK(q.data()[0] == torch_nan[zi]);
      if (count >= 14)
        for (int h = 0; h < 6; ++h) CHECK(q.data()[8 + h] == torch_half[zi][h]);
    }
  }
  Rng rng{4242};
  for (int64_t count : {5, 100, 40001}) {
    for (int32_t zero : {0, 128, 255, 61}) {
      const float scale = rng.uniform(0.001f, 0.1f), inv = 1.0f / scale;
      std::vector<float> x(static_cast<size_t>(count));
      for (auto& v : x) v = rng.uniform(-20.0f, 20.0f);
      for (int64_t i = 0; i < count; i += 17) x[i] = static_cast<float>(rng.range(-300, 300)) * 0.5f * scale;
      Bytes q(static_cast<size_t>(count));
      aotc::rt::quantize_u8(two, count, inv, zero, x.data(), q.data());
      CHECK(q.guard_intact());
      int64_t bad = 0;
      for (int64_t i = 0; i < count; ++i) bad += q.data()[i] != ref_quantize(x[i] * inv, zero);
      CHECK(bad == 0);
      std::vector<float> back(static_cast<size_t>(count) + 4, -7.0f);
      aotc::rt::dequantize_u8(two, count, scale, zero, q.data(), back.data());
      bad = 0;
      for (int64_t i = 0; i < count; ++i) {
        const float want = static_cast<float>(static_cast<int32_t>(q.data()[i]) - zero) * scale;
        bad += std::memcmp(&want, &back[static_cast<size_t>(i)], sizeof want) != 0;
      }
      CHECK(bad == 0);
      CHECK(back[static_cast<size_t>(count)] == -7.0f);
    }
  }
}

TEST_CASE("qadd_u8 and clamp_u8") {
  Rng rng{5150};
  ThreadPool one(1), two(2);
  for (int64_t count : {1, 9, 31, 64, 1000, 50003}) {
    for (int variant = 0; variant < 4; ++variant) {
      aotc::rt::QAddParams p;
      const float sa = rng.uniform(0.005f, 0.1f), sb = rng.uniform(0.005f, 0.1f),
                  so = rng.uniform(0.01f, 0.2f);
      const int32_t za = variant == 0 ? 0 : rng.range(0, 255), zb = variant == 1 ? 255 : rng.range(0, 255);
      p.a_scale = sa;
      p.a_premul = sa * static_cast<float>(-za);
      p.b_scale = sb;
      p.b_premul = sb * static_cast<float>(-zb);
      p.out_inv_scale = 1.0f / so;
      p.out_zero = variant == 2 ? 0 : rng.range(0, 255);
      p.relu = variant % 2 == 1;
      EdgeBytes a(static_cast<size_t>(count)), b(static_cast<size_t>(count));
      for (auto& v : a) v = static_cast<uint8_t>(rng.next() >> 24);
      for (auto& v : b) v = static_cast<uint8_t>(rng.next() >> 24);
      Bytes y(static_cast<size_t>(count));
      aotc::rt::qadd_u8(variant % 2 ? two : one, count, p, a.data(), b.data(), y.data());
      CHECK(y.guard_intact());
      int64_t bad = 0;
      for (int64_t i = 0; i < count; ++i) {
        float s = std::fma(p.a_scale, static_cast<float>(a[i]), p.a_premul) +
                  std::fma(p.b_scale, static_cast<float>(b[i]), p.b_premul);
        if (p.relu) s = std::fmax(s, 0.0f);
        bad += y.data()[i] != ref_quantize(s * p.out_inv_scale, p.out_zero);
      }
      CHECK(bad == 0);

      const auto lo = static_cast<uint8_t>(rng.range(0, 200)), hi = static_cast<uint8_t>(rng.range(lo, 255));
      Bytes c(static_cast<size_t>(count));
      aotc::rt::clamp_u8(two, count, lo, hi, a.data(), c.data());
      CHECK(c.guard_intact());
      bad = 0;
      for (int64_t i = 0; i < count; ++i) bad += c.data()[i] != (a[i] < lo ? lo : a[i] > hi ? hi : a[i]);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("max_pool2d_u8: NHWC and NCHW, padding never wins") {
  struct Case {
    int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
    bool ceil_mode;
  };
  const Case cases[] = {
      {1, 64, 12, 12, 3, 3, 2, 2, 1, 1, 1, 1, false},  // resnet's stem pool
      {2, 3, 7, 7, 2, 2, 2, 2, 0, 0, 1, 1, true},     {1, 17, 13, 11, 3, 3, 1, 1, 1, 1, 1, 1, false},
      {1, 33, 9, 9, 3, 3, 2, 2, 1, 1, 2, 2, true},    {1, 100, 5, 6, 2, 3, 1, 2, 1, 1, 1, 1, true},
      {1, 5, 1, 1, 3, 3, 2, 2, 1, 1, 1, 1, true},     {1, 2, 6, 70, 3, 3, 2, 2, 1, 1, 1, 1, false},
      {1, 48, 8, 8, 1, 1, 1, 1, 0, 0, 1, 1, false},
  };
  Rng rng{31337};
  ThreadPool two(2);
  for (const Case& c : cases)
    for (bool nhwc : {true, false}) {
      aotc::rt::Pool2dParams p;
      p.n = c.n;
      p.c = c.c;
      p.h_in = c.h;
      p.w_in = c.w;
      p.kernel_h = c.kh;
      p.kernel_w = c.kw;
      p.stride_h = c.sh;
      p.stride_w = c.sw;
      p.pad_h = c.ph;
      p.pad_w = c.pw;
      p.dilation_h = c.dh;
      p.dilation_w = c.dw;
      p.h_out = aotc::test::pool_out_size(c.h, c.kh, c.ph, c.sh, c.dh, c.ceil_mode);
      p.w_out = aotc::test::pool_out_size(c.w, c.kw, c.pw, c.sw, c.dw, c.ceil_mode);
      EdgeBytes x(static_cast<size_t>(c.n * c.c * c.h * c.w));
      for (auto& v : x) v = static_cast<uint8_t>(rng.next() >> 24);
      const int64_t count = p.n * p.c * p.h_out * p.w_out;
      Bytes y(static_cast<size_t>(count));
      aotc::rt::max_pool2d_u8(two, p, nhwc, x.data(), y.data());
      CHECK(y.guard_intact());
      int64_t bad = 0;
      for (int64_t n = 0; n < p.n; ++n)
        for (int64_t ch = 0; ch < p.c; ++ch)
          for (int64_t oh = 0; oh < p.h_out; ++oh)
            for (int64_t ow = 0; ow < p.w_out; ++ow) {
              uint8_t m = 0;
              for (int64_t i = 0; i < p.kernel_h; ++i)
                for (int64_t j = 0; j < p.kernel_w; ++j) {
                  const int64_t ih = oh * p.stride_h - p.pad_h + i * p.dilation_h;
                  const int64_t iw = ow * p.stride_w - p.pad_w + j * p.dilation_w;
                  if (ih < 0 || ih >= p.h_in || iw < 0 || iw >= p.w_in) continue;
                  const uint8_t v = nhwc ? x[((n * p.h_in + ih) * p.w_in + iw) * p.c + ch]
                                         : x[((n * p.c + ch) * p.h_in + ih) * p.w_in + iw];
                  m = v > m ? v : m;
                }
              const int64_t at = nhwc ? ((n * p.h_out + oh) * p.w_out + ow) * p.c + ch
                                      : ((n * p.c + ch) * p.h_out + oh) * p.w_out + ow;
              bad += y.data()[at] != m;
            }
      INFO("max pool " << c.c << "x" << c.h << "x" << c.w << " nhwc " << nhwc);
      CHECK(bad == 0);
    }
}

TEST_CASE("adaptive_avg_pool2d_u8: torch's NHWC and NCHW roundings") {
  struct Case {
    int64_t n, c, h, w, ho, wo;
  };
  const Case cases[] = {{1, 512, 7, 7, 1, 1},  {2, 33, 13, 11, 3, 5}, {1, 17, 5, 5, 7, 7},
                        {1, 64, 56, 56, 1, 1}, {1, 3, 6, 9, 4, 2},    {1, 100, 1, 1, 1, 1}};
  Rng rng{2718};
  ThreadPool two(2);
  for (const Case& c : cases)
    for (bool nhwc : {true, false})
      for (int32_t zero : {0, 128, 255, 93}) {
        EdgeBytes x(static_cast<size_t>(c.n * c.c * c.h * c.w));
        for (auto& v : x) v = static_cast<uint8_t>(rng.next() >> 24);
        const int64_t count = c.n * c.c * c.ho * c.wo;
        Bytes y(static_cast<size_t>(count));
        aotc::rt::adaptive_avg_pool2d_u8(two, c.n, c.c, c.h, c.w, c.ho, c.wo, nhwc, zero, x.data(), y.data());
        CHECK(y.guard_intact());
        int64_t bad = 0;
        for (int64_t n = 0; n < c.n; ++n)
          for (int64_t ch = 0; ch < c.c; ++ch)
            for (int64_t oh = 0; oh < c.ho; ++oh)
              for (int64_t ow = 0; ow < c.wo; ++ow) {
                const int64_t h0 = oh * c.h / c.ho, h1 = ((oh + 1) * c.h + c.ho - 1) / c.ho;
                const int64_t w0 = ow * c.w / c.wo, w1 = ((ow + 1) * c.w + c.wo - 1) / c.wo;
                int32_t sum = 0;
                for (int64_t ih = h0; ih < h1; ++ih)
                  for (int64_t iw = w0; iw < w1; ++iw)
                    sum += nhwc ? x[((n * c.h + ih) * c.w + iw) * c.c + ch]
                                : x[((n * c.c + ch) * c.h + ih) * c.w + iw];
                const auto size = static_cast<int32_t>((h1 - h0) * (w1 - w0));
                int64_t v = nhwc ? zero + cvt(static_cast<float>(sum - size * zero) *
                                              (1.0f / static_cast<float>(size)))
                                 : cvt(static_cast<float>(sum) * (1.0f / static_cast<float>(size)));
                v = v < 0 ? 0 : v > 255 ? 255 : v;
                const int64_t at = nhwc ? ((n * c.ho + oh) * c.wo + ow) * c.c + ch
                                        : ((n * c.c + ch) * c.ho + oh) * c.wo + ow;
                bad += y.data()[at] != v;
              }
        INFO("adaptive avg " << c.c << "x" << c.h << "x" << c.w << " -> " << c.ho << "x" << c.wo << " nhwc "
                             << nhwc << " zero " << zero);
        CHECK(bad == 0);
      }
}

TEST_CASE("lookup_u8: every byte through the table, any length") {
  Rng rng{4242};
  ThreadPool one(1), two(2);
  std::vector<uint8_t> table(256);
  for (auto& t : table) t = static_cast<uint8_t>(rng.next() >> 24);
  for (int64_t count : {1, 63, 64, 65, 200, 4099, 70001}) {
    EdgeBytes x(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) x[static_cast<size_t>(i)] = static_cast<uint8_t>(i * 37 + count);
    Bytes y(static_cast<size_t>(count));
    aotc::rt::lookup_u8(count % 2 ? one : two, count, table.data(), x.data(), y.data());
    CHECK(y.guard_intact());
    int64_t bad = 0;
    for (int64_t i = 0; i < count; ++i) bad += y.data()[i] != table[x[static_cast<size_t>(i)]];
    CHECK(bad == 0);
  }
}

TEST_CASE("qmul_u8: the header's formula, broadcasting by stride, mul_relu") {
  Rng rng{777};
  ThreadPool one(1), two(2);
  struct Shape {
    int64_t d[4];
    bool b_row;  // b broadcast along the last dim (squeeze-excitation's per-channel scale) or dense
  };
  for (const Shape& s : {Shape{{1, 1, 1, 1}, false}, Shape{{2, 3, 5, 37}, false}, Shape{{1, 7, 7, 96}, true},
                         Shape{{2, 1, 9, 13}, true}, Shape{{1, 4, 4, 8}, false}}) {
    for (int variant = 0; variant < 3; ++variant) {
      aotc::rt::QMulParams p;
      for (int i = 0; i < 4; ++i) p.dims[i] = s.d[i];
      const int64_t count = s.d[0] * s.d[1] * s.d[2] * s.d[3];
      // a dense; b either dense too, or one row of d[3] values per image (strides 0 elsewhere)
      p.a_strides[3] = 1;
      p.a_strides[2] = s.d[3];
      p.a_strides[1] = s.d[3] * s.d[2];
      p.a_strides[0] = s.d[3] * s.d[2] * s.d[1];
      const int64_t b_count = s.b_row ? s.d[0] * s.d[3] : count;
      if (s.b_row) {
        p.b_strides[3] = 1;
        p.b_strides[0] = s.d[3];
      } else {
        for (int i = 0; i < 4; ++i) p.b_strides[i] = p.a_strides[i];
      }
      p.a_zero = variant == 0 ? 0 : rng.range(0, 255);
      p.b_zero = rng.range(0, 255);
      p.out_zero = variant == 1 ? 255 : rng.range(0, 255);
      p.multiplier = rng.uniform(1e-5f, 2e-2f);
      p.lo = variant == 2 ? p.out_zero : 0;
      EdgeBytes a(static_cast<size_t>(count)), b(static_cast<size_t>(b_count));
      for (auto& v : a) v = static_cast<uint8_t>(rng.next() >> 24);
      for (auto& v : b) v = static_cast<uint8_t>(rng.next() >> 24);
      Bytes y(static_cast<size_t>(count));
      aotc::rt::qmul_u8(variant == 1 ? one : two, p, a.data(), b.data(), y.data());
      CHECK(y.guard_intact());
      int64_t bad = 0;
      for (int64_t i0 = 0; i0 < s.d[0]; ++i0)
        for (int64_t i1 = 0; i1 < s.d[1]; ++i1)
          for (int64_t i2 = 0; i2 < s.d[2]; ++i2)
            for (int64_t i3 = 0; i3 < s.d[3]; ++i3) {
              const int64_t ia = i0 * p.a_strides[0] + i1 * p.a_strides[1] + i2 * p.a_strides[2] + i3;
              const int64_t ib =
                  i0 * p.b_strides[0] + i1 * p.b_strides[1] + i2 * p.b_strides[2] + i3 * p.b_strides[3];
              const int32_t prod =
                  (a[static_cast<size_t>(ia)] - p.a_zero) * (b[static_cast<size_t>(ib)] - p.b_zero);
              uint8_t want = ref_quantize(static_cast<float>(prod) * p.multiplier, p.out_zero);
              if (want < p.lo) want = static_cast<uint8_t>(p.lo);
              bad += y.data()[ia] != want;
            }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("quantize_to_nhwc_u8: quantize_u8 of NCHW, written NHWC") {
  Rng rng{99};
  ThreadPool one(1), two(2);
  for (int64_t c : {1, 3, 4, 16, 17, 40})
    for (int64_t hw : {1, 15, 16, 63, 64, 65, 1000}) {
      const int64_t n = 2, count = n * c * hw;
      const float inv = 1.0f / rng.uniform(0.01f, 0.2f);
      const int32_t zero = rng.range(0, 255);
      std::vector<float> x(static_cast<size_t>(count));
      for (auto& v : x) v = rng.uniform(-3.0f, 3.0f);
      x[static_cast<size_t>(count / 2)] = std::numeric_limits<float>::quiet_NaN();
      Bytes want(static_cast<size_t>(count)), got(static_cast<size_t>(count));
      aotc::rt::quantize_u8(one, count, inv, zero, x.data(), want.data());
      aotc::rt::quantize_to_nhwc_u8(hw % 2 ? one : two, n, c, hw, inv, zero, x.data(), got.data());
      CHECK(got.guard_intact());
      int64_t bad = 0;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t p = 0; p < hw; ++p)
            bad += got.data()[(b * hw + p) * c + ch] != want.data()[(b * c + ch) * hw + p];
      CHECK(bad == 0);
    }
}

TEST_CASE("choose_qparams_u8: torch's parameters for dynamic quantization") {
  // (min, max, reduce_range) -> torch._choose_qparams_per_tensor of [min, max] (torch 2.11):
  // the scale's bits and the zero point. Ranges that hold 0 or not, one sign only, tiny ranges
  // (the scale raised to 6.1e-5), a range of 0 (scale 0.1), a half-way zero point.
  struct Case {
    float min, max;
    bool reduce_range;
    uint32_t scale_bits;
    int32_t zero;
  };
  const Case cases[] = {
      {-1.5f, 62.0f, false, 0x3e7efeffu, 6},       {-1.5f, 62.0f, true, 0x3f000000u, 3},
      {0.0f, 0.0f, false, 0x3dcccccdu, 0},         {0.0f, 0.0f, true, 0x3dcccccdu, 0},
      {-3.0f, -1.0f, false, 0x3c40c0c1u, 255},     {-3.0f, -1.0f, true, 0x3cc18306u, 127},
      {0.5f, 7.25f, false, 0x3ce8e8e9u, 0},        {0.5f, 7.25f, true, 0x3d69d3a7u, 0},
      {-0.001f, 0.002f, false, 0x387fda40u, 85},   {-0.001f, 0.002f, true, 0x387fda40u, 42},
      {-1e-6f, 2e-6f, false, 0x387fda40u, 85},     {-1e-6f, 2e-6f, true, 0x387fda40u, 42},
      {0.0f, 1e-7f, false, 0x387fda40u, 0},        {-2e-7f, 0.0f, true, 0x387fda40u, 127},
      {-100.0f, 3.0f, false, 0x3ecececfu, 248},    {-100.0f, 3.0f, true, 0x3f4f9f3eu, 123},
      {-0.3333f, 0.7777f, false, 0x3b8ec404u, 76}, {-0.3333f, 0.7777f, true, 0x3c0f53e7u, 38},
      {-65504.0f, 1.0f, false, 0x438070f1u, 255},  {-65504.0f, 1.0f, true, 0x4400f265u, 127},
      {0.001f, 0.001f, true, 0x387fda40u, 0},
  };
  for (const Case& c : cases) {
    const aotc::rt::QParams q = aotc::rt::choose_qparams_u8(c.min, c.max, c.reduce_range);
    uint32_t bits = 0;
    std::memcpy(&bits, &q.scale, sizeof bits);
    INFO(c.min << " " << c.max << " reduce_range " << c.reduce_range);
    CHECK(bits == c.scale_bits);
    CHECK(q.zero_point == c.zero);
  }
}

TEST_CASE("qlinear_dynamic_f32: quantize by the input's range, int32 sums, float out") {
  Rng rng{2024};
  ThreadPool one(1), two(2);
  struct Case {
    int64_t m, n, k;
    bool reduce_range, relu, per_channel, weight_zero, bias;
  };
  // Rows in AMX tiles and past them, depths past whole tiles, one row, odd sizes.
  const Case cases[] = {
      {1, 7, 5, true, false, false, false, true},     {3, 33, 64, true, true, true, false, true},
      {38, 150, 64, true, false, true, false, false}, {19, 64, 150, false, false, false, true, true},
      {64, 100, 200, true, true, true, true, true},   {5, 1000, 37, true, false, true, false, true},
  };
  int index = 0;
  for (const Case& c : cases) {
    ThreadPool& pool = index++ % 2 ? two : one;
    std::vector<float> x(static_cast<size_t>(c.m * c.k));
    const float shift = c.relu ? 0.4f : 0.0f;  // a range not centred on 0
    for (float& v : x) v = rng.uniform(-1.0f, 1.0f) * 3.0f + shift;
    std::vector<int8_t> wq(static_cast<size_t>(c.n * c.k));
    for (auto& v : wq) v = static_cast<int8_t>(rng.next() >> 24);
    std::vector<float> ws(static_cast<size_t>(c.n)), bias(static_cast<size_t>(c.n));
    std::vector<int32_t> wz(static_cast<size_t>(c.n)), colsum(static_cast<size_t>(c.n));
    for (int64_t j = 0; j < c.n; ++j) {
      ws[j] = c.per_channel ? rng.uniform(0.001f, 0.02f) : 0.01f;
      wz[j] = c.weight_zero ? rng.range(-20, 20) : 0;
      bias[j] = rng.uniform(-1.0f, 1.0f);
      int32_t s = 0;
      for (int64_t kk = 0; kk < c.k; ++kk) s += wq[j * c.k + kk];
      colsum[j] = s;
    }
    const aotc::rt::QLinearDynamicParams p{c.m, c.n, c.k, c.reduce_range, c.relu};
    const aotc::rt::QLinearParams shape{c.m, c.n, c.k};
    Aligned packed(aotc::rt::qlinear_packed_weight_bytes(shape));
    aotc::rt::qlinear_pack_weights(shape, wq.data(), packed.p);
    aotc::rt::QLinearDynamicWeights w;
    w.packed = packed.p;
    w.colsum = colsum.data();
    w.scale = ws.data();
    w.zero = c.weight_zero ? wz.data() : nullptr;
    w.bias = c.bias ? bias.data() : nullptr;
    std::vector<float> y(static_cast<size_t>(c.m * c.n));
    std::vector<uint8_t> scratch(static_cast<size_t>(aotc::rt::qlinear_dynamic_scratch_bytes(p)));
    {
      PoolScratch ts(pool, aotc::rt::qlinear_thread_scratch_bytes(shape));
      aotc::rt::qlinear_dynamic_f32(pool, p, x.data(), w, y.data(), scratch.data());
    }
    // The reference: the header's steps in scalar code, the sums in int64.
    float lo = x[0], hi = x[0];
    for (float v : x) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    const aotc::rt::QParams q = aotc::rt::choose_qparams_u8(lo, hi, c.reduce_range);
    const float inv = 1.0f / q.scale;
    std::vector<int32_t> xq(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      xq[i] = static_cast<int32_t>(
          std::clamp<int64_t>(cvt(std::fma(x[i], inv, static_cast<float>(q.zero_point))), 0, 255));
    double err = 0, norm = 0;
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        int64_t acc = 0;
        for (int64_t kk = 0; kk < c.k; ++kk)
          acc += static_cast<int64_t>(xq[i * c.k + kk] - q.zero_point) * (wq[j * c.k + kk] - wz[j]);
        double want =
            static_cast<double>(static_cast<float>(acc)) * (q.scale * ws[j]) + (c.bias ? bias[j] : 0.0f);
        if (c.relu) want = std::max(want, 0.0);
        err += (y[i * c.n + j] - want) * (y[i * c.n + j] - want);
        norm += want * want;
      }
    INFO("m " << c.m << " n " << c.n << " k " << c.k);
    CHECK(std::sqrt(err) <= 1e-6 * std::sqrt(norm));
  }
}

TEST_CASE("qlayer_norm_u8: torch's steps, vector and scalar parts alike") {
  Rng rng{4711};
  ThreadPool one(1), two(2);
  struct Case {
    int64_t rows, n;
    bool affine;
    double eps;
  };
  const Case cases[] = {{3, 64, true, 1e-5}, {29, 37, true, 1e-5}, {7, 100, false, 1e-12},
                        {2, 768, true, 0.1}, {40, 5, false, 1e-5}, {1, 1, true, 1e-5}};
  int index = 0;
  for (const Case& c : cases) {
    aotc::rt::QLayerNormParams p;
    p.rows = c.rows;
    p.n = c.n;
    p.x_scale = rng.uniform(0.01f, 0.1f);
    p.x_zero = rng.range(0, 255);
    p.eps = c.eps;
    p.y_inv_scale = 1.0f / rng.uniform(0.01f, 0.1f);
    p.y_zero = rng.range(0, 255);
    std::vector<uint8_t> x(static_cast<size_t>(c.rows * c.n)), y(x.size());
    for (auto& v : x) v = static_cast<uint8_t>(rng.next() >> 24);
    std::vector<float> gamma(static_cast<size_t>(c.n)), beta(static_cast<size_t>(c.n));
    for (int64_t i = 0; i < c.n; ++i) {
      gamma[i] = rng.uniform(-2.0f, 2.0f);
      beta[i] = rng.uniform(-0.5f, 0.5f);
    }
    const float* g = c.affine ? gamma.data() : nullptr;
    const float* b = c.affine ? beta.data() : nullptr;
    aotc::rt::qlayer_norm_u8(index++ % 2 ? two : one, p, x.data(), g, b, y.data());
    // The header's steps, each rounded to float through double (exact for one product or sum
    // of two floats, so the compiler's contractions cannot change them).
    auto f32 = [](double v) { return static_cast<double>(static_cast<float>(v)); };
    int64_t bad = 0;
    for (int64_t r = 0; r < c.rows; ++r) {
      int64_t sum = 0, sum_sq = 0;
      for (int64_t i = 0; i < c.n; ++i) {
        const int64_t q = x[r * c.n + i];
        sum += q;
        sum_sq += q * q;
      }
      const double mean_raw = f32(static_cast<double>(static_cast<float>(sum)) / static_cast<float>(c.n));
      const double mean = f32(mean_raw - p.x_zero);
      const double sq_mean = f32(static_cast<double>(static_cast<float>(sum_sq)) / static_cast<float>(c.n));
      double var = std::fma(-mean_raw, mean_raw, sq_mean);  // exact in double, then one rounding
      var = std::max(f32(var), 0.0);
      const double var_scaled = f32(f32(var * p.x_scale) * p.x_scale);
      const double inv_std = f32(static_cast<double>(p.x_scale) / std::sqrt(var_scaled + c.eps));
      for (int64_t i = 0; i < c.n; ++i) {
        const auto v =
            static_cast<float>(f32(static_cast<double>(x[r * c.n + i] - p.x_zero) - mean) * inv_std);
        const float u = c.affine ? std::fma(v, gamma[i], beta[i]) : v;
        const float t = u * p.y_inv_scale;
        const int64_t want = std::clamp<int64_t>(cvt(t) + p.y_zero, 0, 255);
        bad += y[r * c.n + i] != want;
      }
    }
    INFO("rows " << c.rows << " n " << c.n);
    CHECK(bad == 0);
  }
}

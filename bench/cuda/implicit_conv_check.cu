// implicit_conv_check.cu - the implicit-GEMM NHWC convolution (implicit_conv_nhwc in
// runtime/cuda/kernels/gemm_3xtf32.cu) against im2col + cuBLAS's exact float32 GEMM, every
// config on odd shapes (strides, dilation, rectangular kernels, padding wider than the
// kernel's reach, rows that do not fill a tile, bias, residual, relu), at fp32 (3xTF32,
// relative L2 <= 1e-5) and tf32 (<= 5e-3); a CUDA NaN (0x7fffffff) in the input must reach
// the output. Then resnet50's 3x3 layers at batch 1 and 32 through conv_gemm_nhwc_f32 with
// a tuning table: AOTC_CUDA_TRACE=1 prints both paths' times per shape (the choice the
// runtime makes). `profile [config]`: one launch of the stage-1 layer at batch 32 (tf32), for ncu.
//
// Build (after the project's build) and run on the GPU machine:
//   nvcc -std=c++20 -O3 -arch=sm_90 -I runtime/include -I runtime/cuda bench/cuda/implicit_conv_check.cu
//       build/runtime/libaotc_runtime_cuda.a -lcublasLt -lcublas -o /tmp/icc && /tmp/icc
#include <aotc/rt/cuda/kernels_cuda.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "check.cuh"
#include "gemm_tuning.h"

using namespace aotc::rt;
using namespace aotc::rt::cuda;

namespace {

struct Shape {
  int64_t n, c_in, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw;
  bool bias, residual, relu;
};

Conv2dParams conv_of(const Shape& s) {
  Conv2dParams c;
  c.n = s.n;
  c.c_in = s.c_in;
  c.h_in = s.h;
  c.w_in = s.w;
  c.c_out = s.c_out;
  c.kernel_h = s.kh;
  c.kernel_w = s.kw;
  c.stride_h = s.sh;
  c.stride_w = s.sw;
  c.pad_h = s.ph;
  c.pad_w = s.pw;
  c.dilation_h = s.dh;
  c.dilation_w = s.dw;
  c.h_out = (s.h + 2 * s.ph - s.dh * (s.kh - 1) - 1) / s.sh + 1;
  c.w_out = (s.w + 2 * s.pw - s.dw * (s.kw - 1) - 1) / s.sw + 1;
  c.has_bias = s.bias;
  return c;
}

float round_to_tf32(float v) {
  uint32_t bits = std::bit_cast<uint32_t>(v);
  if ((bits & 0x7f800000u) == 0x7f800000u) return v;
  return std::bit_cast<float>((bits + 0xfffu + ((bits >> 13) & 1u)) & 0xffffe000u);
}

struct Problem {
  Conv2dParams conv;
  GemmParams p;
  float *x, *w, *bias, *residual, *c, *columns;
};

Problem make(const Shape& s, Precision precision, std::mt19937& rng) {
  Problem pr{};
  pr.conv = conv_of(s);
  const Conv2dParams& c = pr.conv;
  GemmParams& p = pr.p;
  p.m = c.n * c.h_out * c.w_out;
  p.n = c.c_out;
  p.k = c.kernel_h * c.kernel_w * c.c_in;
  p.trans_b = true;
  p.lda = p.k;
  p.ldb = p.k;
  p.ldc = p.n;
  p.bias_kind = s.bias ? BiasKind::PerColumn : BiasKind::None;
  p.ldr = p.n;
  if (s.relu) p.clamp_lo = 0.0f;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto upload = [&](int64_t count, float scale, bool tf32) {
    std::vector<float> v(static_cast<size_t>(count));
    for (float& x : v) x = normal(rng) * scale;
    if (tf32)
      for (float& x : v) x = round_to_tf32(x);
    float* d;
    CHECK(cudaMalloc(&d, v.size() * sizeof(float)));
    CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
    return d;
  };
  pr.x = upload(c.n * c.h_in * c.w_in * c.c_in, 1.0f, false);
  pr.w = upload(p.n * p.k, 1.0f / std::sqrt(static_cast<float>(p.k)), precision == Precision::Tf32);
  pr.bias = s.bias ? upload(p.n, 0.1f, false) : nullptr;
  pr.residual = s.residual ? upload(p.m * p.n, 1.0f, false) : nullptr;
  p.residual = pr.residual;
  CHECK(cudaMalloc(&pr.c, p.m * p.n * sizeof(float)));
  CHECK(cudaMalloc(&pr.columns, p.m * p.k * sizeof(float)));
  return pr;
}

void release(Problem& pr) {
  for (float* d : {pr.x, pr.w, pr.bias, pr.residual, pr.c, pr.columns})
    if (d) cudaFree(d);
}

std::vector<float> download(const float* d, int64_t count) {
  std::vector<float> v(static_cast<size_t>(count));
  CHECK(cudaMemcpy(v.data(), d, v.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return v;
}

double rel_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1));
}

}  // namespace

int main(int argc, char** argv) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t blas;
  cublasLtHandle_t lt;
  cublasCreate(&blas);
  cublasSetStream(blas, stream);
  cublasLtCreate(&lt);
  void* workspace;
  const size_t ws_bytes = size_t{64} << 20;
  CHECK(cudaMalloc(&workspace, ws_bytes));
  void* flush;
  const size_t flush_bytes = size_t{100} << 20;
  CHECK(cudaMalloc(&flush, flush_bytes));
  std::mt19937 rng(11);
  // The reference: im2col + cuBLAS's float32 GEMM, no tuning table (so never the implicit
  // GEMM and never 3xTF32).
  const Exec reference{stream, blas, lt, workspace, ws_bytes, Precision::Fp32};
  // "profile [config]": one tf32 launch of resnet50's stage-1 3x3 layer at batch 32, for ncu.
  if (argc > 1 && std::strcmp(argv[1], "profile") == 0) {
    Problem pr = make({32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, true, false, true}, Precision::Tf32, rng);
    const int config = argc > 2 ? std::atoi(argv[2]) : 6;
    if (!implicit_conv_nhwc_supported(pr.conv, pr.p, Precision::Tf32, pr.x, pr.w, config)) return 1;
    implicit_conv_nhwc(stream, Precision::Tf32, pr.conv, pr.p, pr.x, pr.w, pr.bias, pr.c, config, workspace);
    CHECK(cudaStreamSynchronize(stream));
    return first_error()[0] ? 1 : 0;
  }

  // n, c_in, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw, bias, residual, relu
  const Shape odd[] = {
      {1, 32, 9, 7, 40, 3, 3, 1, 1, 1, 1, 1, 1, true, false, true},      // c_out not a tile's
      {2, 64, 13, 11, 72, 3, 3, 2, 2, 1, 1, 1, 1, true, true, true},     // stride 2, residual
      {1, 96, 12, 12, 36, 3, 5, 1, 2, 2, 1, 1, 1, false, false, false},  // rectangular, unequal strides
      {3, 32, 10, 10, 24, 3, 3, 1, 1, 2, 2, 2, 2, true, false, false},   // dilation 2
      {1, 64, 5, 6, 130, 3, 3, 1, 1, 3, 3, 1, 1, true, true, true},      // padding past the kernel's reach
      {1, 32, 8, 8, 64, 1, 1, 2, 2, 0, 0, 1, 1, true, false, false},     // strided 1x1
      {5, 128, 7, 7, 256, 3, 3, 1, 1, 1, 1, 1, 1, true, true, true},     // 245 rows, k 1152
      {1, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1, true, false, true},    // k 4608: the split parts
  };
  int failures = 0, checked = 0;
  for (Precision precision : {Precision::Fp32, Precision::Tf32}) {
    const bool tf32 = precision == Precision::Tf32;
    const double tolerance = tf32 ? 5e-3 : 1e-5;
    double worst = 0;
    for (const Shape& s : odd) {
      Problem pr = make(s, precision, rng);
      im2col_nhwc_f32(stream, pr.conv, false, pr.p.k, pr.x, pr.columns);
      gemm_f32(reference, pr.p, pr.columns, pr.w, pr.bias, pr.c);
      CHECK(cudaStreamSynchronize(stream));
      const std::vector<float> want = download(pr.c, pr.p.m * pr.p.n);
      for (int config = 0; config < implicit_conv_nhwc_configs(precision); ++config) {
        if (!implicit_conv_nhwc_supported(pr.conv, pr.p, precision, pr.x, pr.w, config) ||
            implicit_conv_nhwc_workspace_bytes(pr.p, config) > ws_bytes)
          continue;
        CHECK(cudaMemsetAsync(pr.c, 0xff, pr.p.m * pr.p.n * sizeof(float), stream));  // NaNs
        implicit_conv_nhwc(stream, precision, pr.conv, pr.p, pr.x, pr.w, pr.bias, pr.c, config, workspace);
        CHECK(cudaStreamSynchronize(stream));
        if (first_error()[0]) {
          std::printf("FAIL config %d: %s\n", config, first_error());
          forget_error();
          ++failures;
          continue;
        }
        const double e = rel_l2(download(pr.c, pr.p.m * pr.p.n), want);
        ++checked;
        if (!(e <= tolerance)) {
          ++failures;
          std::printf("FAIL %s %lldx%lldx%lld (%lldx%lld s%lld,%lld) config %d: %.3g\n",
                      tf32 ? "tf32" : "fp32", (long long)pr.p.m, (long long)pr.p.n, (long long)pr.p.k,
                      (long long)s.kh, (long long)s.kw, (long long)s.sh, (long long)s.sw, config, e);
        }
        worst = e > worst ? e : worst;
      }
      release(pr);
    }
    std::printf("%s: worst relative L2 against cuBLAS float32 %.3g (tolerance %.0e)\n",
                tf32 ? "tf32" : "fp32", worst, tolerance);
    // A CUDA NaN in the input reaches every channel of the pixel whose centre tap reads it.
    Shape s = odd[0];
    s.relu = false;
    Problem pr = make(s, precision, rng);
    const float nan = std::bit_cast<float>(0x7fffffffu);
    const int64_t pixel = 4 * pr.conv.w_in + 3;  // (4, 3): its own output's centre tap
    CHECK(cudaMemcpy(pr.x + pixel * pr.conv.c_in + 5, &nan, sizeof nan, cudaMemcpyHostToDevice));
    for (int config = 0; config < implicit_conv_nhwc_configs(precision); ++config) {
      if (!implicit_conv_nhwc_supported(pr.conv, pr.p, precision, pr.x, pr.w, config) ||
          implicit_conv_nhwc_workspace_bytes(pr.p, config) > ws_bytes)
        continue;
      implicit_conv_nhwc(stream, precision, pr.conv, pr.p, pr.x, pr.w, pr.bias, pr.c, config, workspace);
      CHECK(cudaStreamSynchronize(stream));  // cudaMemcpy does not wait for a non-blocking stream
      const std::vector<float> got = download(pr.c, pr.p.m * pr.p.n);
      int nans = 0;
      for (int64_t o = 0; o < pr.p.n; ++o) nans += std::isnan(got[static_cast<size_t>(pixel * pr.p.n + o)]);
      ++checked;
      if (nans != pr.p.n) {
        ++failures;
        std::printf("FAIL %s NaN: config %d, %d of %lld channels NaN\n", tf32 ? "tf32" : "fp32", config, nans,
                    (long long)pr.p.n);
      }
    }
    release(pr);
  }
  std::printf("checks: %d, failed: %d\n", checked, failures);

  // resnet50's 3x3 layers (bias, relu) at batch 1 and 32, as the runtime chooses them.
  setenv("AOTC_CUDA_TRACE", "1", 1);
  GemmTuning* tuning = gemm_tuning_create();
  gemm_tuning_set_flush(tuning, flush, flush_bytes);
  for (int64_t batch : {int64_t{1}, int64_t{32}})
    for (Precision precision : {Precision::Tf32, Precision::Fp32}) {
      std::printf("resnet50 3x3 layers, batch %lld, %s:\n", (long long)batch,
                  precision == Precision::Tf32 ? "tf32" : "fp32");
      std::fflush(stdout);
      const Shape layers[] = {
          {batch, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, true, false, true},
          {batch, 128, 56, 56, 128, 3, 3, 2, 2, 1, 1, 1, 1, true, false, true},
          {batch, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1, 1, 1, true, false, true},
          {batch, 256, 28, 28, 256, 3, 3, 2, 2, 1, 1, 1, 1, true, false, true},
          {batch, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, true, false, true},
          {batch, 512, 14, 14, 512, 3, 3, 2, 2, 1, 1, 1, 1, true, false, true},
          {batch, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1, true, false, true},
      };
      for (const Shape& s : layers) {
        Problem pr = make(s, precision, rng);
        Exec ex{stream, blas, lt, workspace, ws_bytes, precision};
        ex.tuning = tuning;
        ex.tune = true;
        conv_gemm_nhwc_f32(ex, pr.p, pr.conv, pr.x, pr.w, pr.bias, pr.c, pr.columns);
        CHECK(cudaStreamSynchronize(stream));
        if (first_error()[0]) {
          std::printf("FAIL: %s\n", first_error());
          forget_error();
          ++failures;
        }
        release(pr);
      }
    }
  gemm_tuning_destroy(tuning);
  return failures ? 1 : 0;
}

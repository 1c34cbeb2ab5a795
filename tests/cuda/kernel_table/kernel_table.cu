#include "kernel_table.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdio>
#include <limits>

namespace aotc::test {

KernelTable::KernelTable() {
  cudaStreamCreate(&exec_.stream);
  cublasCreate(&exec_.blas);
  cublasSetStream(exec_.blas, exec_.stream);
  cublasLtCreate(&exec_.lt);
  exec_.workspace_bytes = 32 << 20;
  cudaMalloc(&exec_.workspace, exec_.workspace_bytes);
  exec_.precision = rt::cuda::Precision::Fp32;
  std::printf("%-34s %-40s %10s  %s\n", "op", "case", "max error", "result");
}

KernelTable::~KernelTable() {
  for (void* b : buffers_) cudaFree(b);
  cudaFree(exec_.workspace);
  cublasLtDestroy(exec_.lt);
  cublasDestroy(exec_.blas);
  cudaStreamDestroy(exec_.stream);
}

std::vector<float> KernelTable::floats(size_t n, bool specials, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng_);
  if (specials && n > 0) {
    const float kinds[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(), -0.0f,
                           std::numeric_limits<float>::max(),       -std::numeric_limits<float>::max()};
    std::uniform_int_distribution<size_t> at(0, n - 1);
    const size_t count = n / 16 + 1;
    for (size_t i = 0; i < count; ++i) v[at(rng_)] = kinds[i % std::size(kinds)];
  }
  return v;
}

std::vector<int64_t> KernelTable::ints(size_t n, int64_t lo, int64_t hi) {
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<int64_t> v(n);
  for (int64_t& x : v) x = d(rng_);
  return v;
}

void* KernelTable::alloc(size_t bytes) {
  void* d = nullptr;
  if (cudaMalloc(&d, bytes ? bytes : 1) != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc of %zu bytes failed\n", bytes);
    std::exit(1);
  }
  buffers_.push_back(d);
  return d;
}

void KernelTable::sync() {
  const cudaError_t e = cudaStreamSynchronize(exec_.stream);
  if (e != cudaSuccess) rt::cuda::note_error("cudaStreamSynchronize", cudaGetErrorString(e));
}

void KernelTable::begin_family(const char* name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: the same seed on every compiler
  for (const char* c = name; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
  rng_.seed(h ^ 20261128u);
}

void KernelTable::expect_close(const std::string& op, const std::string& what, const std::vector<float>& cpu,
                               const std::vector<float>& gpu, double tol) {
  expect_close_to_scale(op, what, cpu, gpu, tol, 0.0);
}

void KernelTable::expect_close_to_scale(const std::string& op, const std::string& what,
                                        const std::vector<float>& cpu, const std::vector<float>& gpu,
                                        double tol, double scale) {
  if (cpu.size() != gpu.size()) return record(op, what, 1.0, false, "sizes differ");
  double worst = 0.0;
  for (float c : cpu)
    if (std::isfinite(c)) scale = std::max(scale, std::fabs(static_cast<double>(c)));
  if (scale == 0.0) scale = 1.0;
  std::string note;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const float c = cpu[i], g = gpu[i];
    const bool same_kind = std::isnan(c) ? std::isnan(g) : std::isinf(c) ? c == g : std::isfinite(g);
    if (!same_kind) {
      if (note.empty())
        note = "element " + std::to_string(i) + ": CPU " + std::to_string(c) + ", CUDA " + std::to_string(g);
      worst = std::numeric_limits<double>::infinity();
      continue;
    }
    if (std::isfinite(c)) {
      const double e = std::fabs(static_cast<double>(g) - c) / scale;
      if (e > worst) {
        worst = e;
        if (e > tol)
          note =
              "element " + std::to_string(i) + ": CPU " + std::to_string(c) + ", CUDA " + std::to_string(g);
      }
    }
  }
  record(op, what, worst, worst <= tol, note);
}

void KernelTable::record(const std::string& op, const std::string& what, double error, bool ok,
                         const std::string& note) {
  std::string launch = rt::cuda::first_error();
  if (!launch.empty()) {
    ok = false;
    rt::cuda::forget_error();
  }
  (ok ? passed_ : failed_)++;
  std::printf("%-34s %-40s %10.2e  %s%s%s\n", op.c_str(), what.c_str(), error, ok ? "ok" : "FAIL",
              note.empty() || ok ? "" : (" (" + note + ")").c_str(),
              launch.empty() ? "" : (" " + launch).c_str());
  std::fflush(stdout);
}

int KernelTable::finish() {
  std::printf("%d passed, %d failed\n", passed_, failed_);
  return failed_ ? 1 : 0;
}

std::string dims_str(std::initializer_list<int64_t> dims) {
  std::string s;
  for (int64_t d : dims) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

std::vector<float> to_nhwc(const std::vector<float>& x, int64_t n, int64_t c, int64_t h, int64_t w) {
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t s = 0; s < h * w; ++s) y[(i * h * w + s) * c + k] = x[(i * c + k) * h * w + s];
  return y;
}

std::vector<float> to_nchw(const std::vector<float>& y, int64_t n, int64_t c, int64_t h, int64_t w) {
  std::vector<float> x(y.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t s = 0; s < h * w; ++s) x[(i * c + k) * h * w + s] = y[(i * h * w + s) * c + k];
  return x;
}

uint16_t bits_of(float v, rt::cuda::Precision precision) {
  uint16_t bits;
  if (precision == rt::cuda::Precision::Fp16) {
    const __half h = __float2half_rn(v);
    std::memcpy(&bits, &h, sizeof bits);
  } else {
    const __nv_bfloat16 h = __float2bfloat16_rn(v);
    std::memcpy(&bits, &h, sizeof bits);
  }
  return bits;
}

float value_of(uint16_t bits, rt::cuda::Precision precision) {
  if (precision == rt::cuda::Precision::Fp16) {
    __half h;
    std::memcpy(&h, &bits, sizeof bits);
    return __half2float(h);
  }
  __nv_bfloat16 h;
  std::memcpy(&h, &bits, sizeof bits);
  return __bfloat162float(h);
}

std::vector<uint16_t> to_bits(const std::vector<float>& v, rt::cuda::Precision precision) {
  std::vector<uint16_t> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = bits_of(v[i], precision);
  return r;
}

std::vector<float> to_floats(const std::vector<uint16_t>& v, rt::cuda::Precision precision) {
  std::vector<float> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = value_of(v[i], precision);
  return r;
}

const char* name_of(rt::cuda::Precision precision) {
  return precision == rt::cuda::Precision::Fp16 ? "fp16" : "bf16";
}

}  // namespace aotc::test

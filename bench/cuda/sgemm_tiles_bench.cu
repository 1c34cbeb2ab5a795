// sgemm_tiles_bench.cu - times aotc's own split-K float32 GEMM (runtime/cuda/kernels/
// sgemm_tiles.cuh) against cuBLAS on the transformer shapes of the GPU benchmark, and
// checks it against cuBLAS's exact float32 result. Every launch reads its operands with a
// cold L2 (a buffer twice the L2 size is overwritten before it), as weights are in a run.
// Build and run on the GPU machine:
//   nvcc -std=c++20 -O3 -arch=sm_90 -I runtime/include bench/cuda/sgemm_tiles_bench.cu -lcublas -o /tmp/sgb
//   && /tmp/sgb
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "check.cuh"

#include "sgemm_tiles.cuh"

using namespace aotc::rt;
using namespace aotc::rt::cuda::sgemm_tiles;

struct Shape {
  const char* name;
  int m, n, k, batch;
  bool bt;
};

static void* g_flush;
static size_t g_flush_bytes;

float time_median(const std::function<void()>& launch, bool cold = true, int runs = 21) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  launch();
  std::vector<float> t;
  for (int i = 0; i < runs; ++i) {
    if (cold) cudaMemsetAsync(g_flush, i, g_flush_bytes);
    cudaEventRecord(a);
    launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  CHECK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return t[t.size() / 2];
}

template <int BM, int TN, int STAGES>
void launch_cfg(Problem p, cudaStream_t s) {
  constexpr int smem = shared_bytes_of<BM, TN, STAGES>();
  static bool once = [] {
    cudaFuncSetAttribute(sgemm_tiles_kernel<BM, TN, STAGES>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         smem);
    return true;
  }();
  (void)once;
  dim3 grid((p.n + 16 * TN - 1) / (16 * TN), (p.m + BM - 1) / BM, p.batch * p.splits);
  sgemm_tiles_kernel<BM, TN, STAGES><<<grid, threads_of<BM, TN>(), smem, s>>>(p);
}

struct Config {
  const char* name;
  int bm, bn;
  void (*launch)(Problem, cudaStream_t);
};

#define CFG(BM, TN, ST) \
  { #BM "x" #TN "x16 st" #ST, BM, 16 * TN, launch_cfg < BM, TN, ST> }
static const Config kConfigs[] = {CFG(32, 4, 4),  CFG(64, 4, 4), CFG(128, 4, 4), CFG(64, 8, 4),
                                  CFG(128, 8, 3), CFG(32, 8, 4), CFG(64, 4, 6),  CFG(64, 8, 6)};

int main() {
  int l2 = 0;
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
  g_flush_bytes = 2 * static_cast<size_t>(l2);
  CHECK(cudaMalloc(&g_flush, g_flush_bytes));
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("device %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, l2 >> 20);
  cublasHandle_t h;
  cublasCreate(&h);
  cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH);
  float* partials;
  unsigned* counters;
  CHECK(cudaMalloc(&partials, 64 << 20));
  CHECK(cudaMalloc(&counters, 65536 * 4));
  CHECK(cudaMemset(counters, 0, 65536 * 4));

  const Shape shapes[] = {
      {"bert qkvo", 128, 768, 768, 1, true},     {"bert qkv merged", 128, 2304, 768, 1, true},
      {"bert ffn1", 128, 3072, 768, 1, true},    {"bert ffn2", 128, 768, 3072, 1, true},
      {"bert QK^T x12", 128, 128, 64, 12, true}, {"vit o", 197, 768, 768, 1, true},
      {"vit qkv", 197, 2304, 768, 1, true},      {"vit ffn1", 197, 3072, 768, 1, true},
      {"vit ffn2", 197, 768, 3072, 1, true},     {"vit QK^T x12", 197, 197, 64, 12, true},
      {"odd 77x45x36", 77, 45, 36, 1, true},     {"odd 3x77x44x36", 77, 44, 36, 3, true},
  };
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  double total_blas = 0, total_best = 0;
  for (const Shape& s : shapes) {
    const size_t na = size_t(s.batch) * s.m * s.k, nb = size_t(s.batch) * s.n * s.k,
                 nc = size_t(s.batch) * s.m * s.n;
    std::vector<float> ha(na), hb(nb), hbias(s.n), hres(nc);
    for (auto& x : ha) x = dist(rng);
    for (auto& x : hb) x = dist(rng);
    for (auto& x : hbias) x = dist(rng);
    for (auto& x : hres) x = dist(rng);
    float *a, *b, *c, *ref, *bias, *res;
    CHECK(cudaMalloc(&a, na * 4));
    CHECK(cudaMalloc(&b, nb * 4));
    CHECK(cudaMalloc(&c, nc * 4));
    CHECK(cudaMalloc(&ref, nc * 4));
    CHECK(cudaMalloc(&bias, s.n * 4));
    CHECK(cudaMalloc(&res, nc * 4));
    cudaMemcpy(a, ha.data(), na * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(b, hb.data(), nb * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(bias, hbias.data(), s.n * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(res, hres.data(), nc * 4, cudaMemcpyHostToDevice);
    const float one = 1.0f, zero = 0.0f;
    // Row-major C = A op(B) as column-major C^T = op(B)^T A^T.
    const int ldb = s.bt ? s.k : s.n;
    auto blas = [&] {
      cublasSgemmStridedBatched(h, s.bt ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &one, b, ldb,
                                (long long)s.n * s.k, a, s.k, (long long)s.m * s.k, &zero, ref, s.n,
                                (long long)s.m * s.n, s.batch);
    };
    const float t_blas = time_median(blas), t_blas_warm = time_median(blas, false);
    blas();
    std::vector<float> href(nc);
    cudaMemcpy(href.data(), ref, nc * 4, cudaMemcpyDeviceToHost);
    // expected with the epilogue: alpha 0.5, bias per column, residual, relu
    std::vector<float> hexp(nc);
    for (size_t i = 0; i < nc; ++i) hexp[i] = std::max(0.0f, 0.5f * href[i] + hbias[i % s.n] + hres[i]);
    std::printf("%-16s M %4d N %4d K %4d x%-2d  cuBLAS %.4f ms (%.1f TFLOP/s), warm %.4f ms\n", s.name, s.m,
                s.n, s.k, s.batch, t_blas, 2.0 * s.m * s.n * s.k * s.batch / t_blas / 1e9, t_blas_warm);
    float best = 1e9;
    const char* best_name = "";
    int best_split = 0;
    for (const Config& cfg : kConfigs) {
      for (int splits : {1, 2, 3, 4, 6, 8, 12, 16}) {
        const int kps = ((s.k + splits - 1) / splits + kBK - 1) / kBK * kBK;
        if ((splits - 1) * kps >= s.k) continue;  // a split with nothing to do
        const int tiles = ((s.m + cfg.bm - 1) / cfg.bm) * ((s.n + cfg.bn - 1) / cfg.bn) * s.batch;
        if (size_t(splits) * tiles * cfg.bm * cfg.bn * 4 > (64u << 20)) continue;
        Problem p{};
        p.m = s.m, p.n = s.n, p.k = s.k, p.batch = s.batch;
        p.a = a, p.lda = s.k, p.stride_a = (int64_t)s.m * s.k;
        p.b = b, p.ldb = ldb, p.stride_b = (int64_t)s.n * s.k;
        p.c = c, p.ldc = s.n, p.stride_c = (int64_t)s.m * s.n;
        p.alpha = 0.5f, p.beta = 1.0f, p.bias_kind = BiasKind::PerColumn, p.bias = bias, p.stride_bias = 0;
        p.residual = res, p.ldr = s.n, p.lo = 0.0f, p.hi = INFINITY;
        p.splits = splits, p.k_per_split = kps, p.partials = partials, p.counters = counters;
        auto run = [&] { cfg.launch(p, nullptr); };
        CHECK(cudaMemset(c, 0, nc * 4));
        run();
        CHECK(cudaDeviceSynchronize());
        std::vector<float> hc(nc);
        cudaMemcpy(hc.data(), c, nc * 4, cudaMemcpyDeviceToHost);
        double num = 0, den = 0;
        for (size_t i = 0; i < nc; ++i)
          num += double(hc[i] - hexp[i]) * (hc[i] - hexp[i]), den += double(hexp[i]) * hexp[i];
        const double rel = std::sqrt(num / den);
        const float t = time_median(run), t_warm = time_median(run, false);
        // determinism: a second launch gives the same bits
        std::vector<float> hc2(nc);
        run();
        cudaMemcpy(hc2.data(), c, nc * 4, cudaMemcpyDeviceToHost);
        const bool same = hc == hc2;
        if (rel > 1e-5 || !same)
          std::printf("  FAIL %s split %d: rel %.2e same %d\n", cfg.name, splits, rel, same);
        if (t < best) best = t, best_name = cfg.name, best_split = splits;
        std::printf("  %-14s split %2d  %.4f ms  %.2fx cuBLAS  warm %.4f ms %.2fx  rel %.1e\n", cfg.name,
                    splits, t, t / t_blas, t_warm, t_warm / t_blas_warm, rel);
      }
    }
    std::printf("  BEST %s split %d: %.4f ms = %.2fx cuBLAS (%.1f TFLOP/s)\n", best_name, best_split, best,
                best / t_blas, 2.0 * s.m * s.n * s.k * s.batch / best / 1e9);
    total_blas += t_blas, total_best += best;
    cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(ref), cudaFree(bias), cudaFree(res);
  }
  std::printf("sum of shapes: cuBLAS %.4f ms, best own %.4f ms\n", total_blas, total_best);
  return 0;
}

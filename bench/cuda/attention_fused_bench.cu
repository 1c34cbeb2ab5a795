// attention_fused_bench.cu - checks the one-launch CUDA attention (runtime/cuda/kernels/
// attention_fused.cu) against a float64 reference on the host and against the three-launch
// path (attention.cu: cuBLAS Q K^T, mask + softmax, cuBLAS P V), over encoder shapes and odd
// ones (every mask kind, masks per head and per window, causal, fully masked rows, head
// sizes not a multiple of 4, strides that forbid float4 loads, key counts past shared
// memory, which must fall back, values near float32's range ends, infinities and NaNs; short
// key sequences on grids of two blocks per multiprocessor or more, only "swin window b32"
// here, take attention_short.cu's kernel, and AOTC_CUDA_ATTENTION_SHORT=1 puts every short
// case on it), then times both at BERT-base's, vit_b_16's and swin_t's window sizes as a run
// does: each path's calls captured in a CUDA graph and replayed. AOTC_CUDA_ATTENTION_SHORT=0
// times attention_fused.cu's kernel on the short sequences too (in float32: that variable
// does not reach the tf32 kernel below). `tf32` runs everything at
// --precision tf32: short key sequences on grids of a block per multiprocessor or more then
// take attention_short_tf32.cu's kernel (AOTC_CUDA_ATTENTION_TF32=1: every short case;
// =0: none), cuBLAS's products are tf32, and the errors allowed are tf32's (3e-3 relative
// L2, 1e-2 element by element for the non-finite case). `fp16` and `bf16` run at those
// precisions: past 64 keys the one-launch path is then attention_mma_16bit.cu's tensor-core
// kernel, checked and timed against attention_fused.cu's float32 kernel
// (AOTC_CUDA_ATTENTION_MMA=0) in place of the three launches, within the 16-bit type's
// rounding (5e-3 fp16, 3e-2 bf16; the cases of magnitudes past fp16's range are skipped
// at fp16), and its block shapes (groups x splits) are timed at the encoder sizes, on
// float32 q, k and v and on 16-bit ones (attention_16bit_qkv).
//
// Build (after the project's build, which makes build/runtime/libaotc_runtime_cuda.a) and
// run on the GPU machine:
//   nvcc -std=c++20 -O3 -arch=sm_90 -I runtime/include bench/cuda/attention_fused_bench.cu
//       build/runtime/libaotc_runtime_cuda.a -lcublasLt -lcublas -o /tmp/afb && /tmp/afb [profile]
//       [tf32 | fp16 | bf16]
#include <aotc/rt/cuda/kernels_cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "check.cuh"

using namespace aotc::rt;
using namespace aotc::rt::cuda;

namespace {

struct Case {
  const char* name;
  int64_t batch, heads, q_len, kv_len, e, ev;
  bool packed;  // q, k, v as views of one [batch, len, 3 * heads * e] projection (e == ev, q_len == kv_len)
  AttentionMask mask;
  int mask_layout;  // 0: key padding [batch, kv_len]; 1: [q_len, kv_len]; 2: [batch, heads, q_len, kv_len]
  bool causal;
  int64_t row_pad;  // extra floats per row of q, k, v (breaks float4 loads when odd)
  bool timed;
  float q_mul = 1.0f, k_mul = 1.0f, v_mul = 1.0f;  // magnitudes far from 1 (scores unchanged)
  int64_t mask_period = 0;  // mask_layout 2: the mask repeats over the batch with this period (Swin)
};

// Host float64 reference, through the same strides.
void reference(const AttentionParams& p, const std::vector<float>& q, const std::vector<float>& k,
               const std::vector<float>& v, const std::vector<unsigned char>& mb,
               const std::vector<float>& mf, std::vector<double>& out) {
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t i = 0; i < p.q_len; ++i) {
        std::vector<double> s(p.kv_len);
        double m = -INFINITY;
        for (int64_t j = 0; j < p.kv_len; ++j) {
          double d = 0.0;
          for (int64_t e = 0; e < p.head_dim; ++e)
            d += static_cast<double>(q[b * p.q_strides[0] + h * p.q_strides[1] + i * p.q_strides[2] + e]) *
                 k[b * p.k_strides[0] + h * p.k_strides[1] + j * p.k_strides[2] + e];
          d *= p.scale;
          const int64_t mi = (p.mask_batch_period > 0 ? b % p.mask_batch_period : b) * p.mask_strides[0] +
                             h * p.mask_strides[1] + i * p.mask_strides[2] + j * p.mask_strides[3];
          if (p.causal && j > i) d = -INFINITY;
          switch (p.mask_kind) {
            case AttentionMask::Additive:
              d += mf[mi];
              break;
            case AttentionMask::KeepIfTrue:
              if (!mb[mi]) d = -INFINITY;
              break;
            case AttentionMask::DropIfTrue:
              if (mb[mi]) d = -INFINITY;
              break;
            case AttentionMask::DropIfNonzero:
              if (mf[mi] != 0.0f) d = -INFINITY;
              break;
            case AttentionMask::None:
              break;
          }
          s[j] = d;
          m = std::max(m, d);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < p.kv_len; ++j) {
          s[j] = m == -INFINITY ? 0.0 : std::exp(s[j] - m);
          sum += s[j];
        }
        for (int64_t e = 0; e < p.v_head_dim; ++e) {
          double o = 0.0;
          for (int64_t j = 0; j < p.kv_len; ++j)
            o += s[j] * v[b * p.v_strides[0] + h * p.v_strides[1] + j * p.v_strides[2] + e];
          out[((b * p.heads + h) * p.q_len + i) * p.v_head_dim + e] = sum > 0.0 ? o / sum : 0.0;
        }
      }
}

double rel_l2(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

template <typename T>
T* upload(const std::vector<T>& h) {
  T* d = nullptr;
  CHECK(cudaMalloc(&d, std::max<size_t>(h.size(), 1) * sizeof(T)));
  if (!h.empty()) CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

// Microseconds per call of `enqueue` (one attention call): 12 calls captured in a CUDA graph,
// the median of 200 replays after 30.
template <class F>
float graph_us(cudaStream_t stream, F enqueue) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int layer = 0; layer < 12; ++layer) enqueue();
  CHECK(cudaStreamEndCapture(stream, &g));
  CHECK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<float> us;
  for (int r = 0; r < 230; ++r) {
    CHECK(cudaEventRecord(e0, stream));
    CHECK(cudaGraphLaunch(ge, stream));
    CHECK(cudaEventRecord(e1, stream));
    CHECK(cudaEventSynchronize(e1));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 30) us.push_back(ms * 1000.0f / 12.0f);
  }
  std::sort(us.begin(), us.end());
  CHECK(cudaGraphExecDestroy(ge));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  return us[us.size() / 2];
}

int main(int argc, char** argv) {
  // `profile`: only the timed cases, each path run three times outside graphs (for ncu).
  bool profile = false, tf32 = false, fp16 = false, bf16 = false;
  for (int i = 1; i < argc; ++i) {
    profile = profile || std::string(argv[i]) == "profile";
    tf32 = tf32 || std::string(argv[i]) == "tf32";
    fp16 = fp16 || std::string(argv[i]) == "fp16";
    bf16 = bf16 || std::string(argv[i]) == "bf16";
  }
  const bool low = fp16 || bf16;  // 16-bit products: the mma kernel against the float32 one
  const double tolerance = fp16 ? 5e-3 : bf16 ? 3e-2 : tf32 ? 3e-3 : 1e-5;
  const float element_tolerance = low ? 2e-2f : tf32 ? 1e-2f : 1e-5f;
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  Exec ex{};
  ex.stream = stream;
  cublasCreate(&ex.blas);
  cublasSetStream(ex.blas, stream);
  cublasLtCreate(&ex.lt);
  ex.workspace_bytes = 32 << 20;
  CHECK(cudaMalloc(&ex.workspace, ex.workspace_bytes));
  ex.precision = fp16 ? Precision::Fp16 : bf16 ? Precision::Bf16 : tf32 ? Precision::Tf32 : Precision::Fp32;

  const Case cases[] = {
      {"bert_base", 1, 12, 128, 128, 64, 64, true, AttentionMask::DropIfTrue, 0, false, 0, true},
      {"vit_b_16", 1, 12, 197, 197, 64, 64, true, AttentionMask::None, 0, false, 0, true},
      {"bert b8", 8, 12, 128, 128, 64, 64, true, AttentionMask::DropIfTrue, 0, false, 0, true},
      {"odd causal additive", 2, 3, 37, 53, 20, 12, false, AttentionMask::Additive, 1, true, 0, false},
      {"head 5, 1 key", 1, 2, 3, 1, 5, 7, false, AttentionMask::None, 0, false, 0, false},
      {"odd strides keep", 2, 2, 19, 33, 16, 16, false, AttentionMask::KeepIfTrue, 1, false, 1, false},
      {"nonzero mask", 1, 4, 40, 40, 32, 32, true, AttentionMask::DropIfNonzero, 1, false, 0, false},
      {"600 keys", 1, 2, 50, 600, 64, 64, false, AttentionMask::None, 0, true, 0, false},
      {"2000 keys (falls back)", 1, 1, 10, 2000, 64, 64, false, AttentionMask::None, 0, false, 0, false},
      {"tiny q, huge k, tiny v", 2, 3, 33, 45, 64, 64, false, AttentionMask::None, 0, false, 0, false, 1e-20f,
       1e20f, 1e-30f},
      {"huge q, tiny k, huge v", 1, 4, 20, 77, 40, 24, false, AttentionMask::KeepIfTrue, 1, false, 0, false,
       1e18f, 1e-18f, 1e30f},
      {"head 128", 2, 4, 64, 256, 128, 128, false, AttentionMask::None, 0, false, 0, false},
      {"head 80, 17 rows", 1, 3, 17, 17, 80, 80, false, AttentionMask::KeepIfTrue, 0, false, 0, false},
      // (enough blocks for 16-row blocks; the cases above mostly take 8-row ones)
      {"16-row blocks, causal", 4, 40, 23, 45, 24, 40, false, AttentionMask::KeepIfTrue, 1, true, 0, false},
      {"16-row, odd head, pad", 3, 50, 37, 70, 13, 70, false, AttentionMask::Additive, 0, false, 3, false},
      // masks that differ per head (the staged term is per batch entry and head)
      {"per-head float mask", 2, 5, 21, 30, 16, 16, false, AttentionMask::Additive, 2, false, 0, false},
      {"per-head bool, causal", 2, 40, 19, 19, 32, 32, false, AttentionMask::KeepIfTrue, 2, true, 0, false},
      // short key sequences (attention_short.cu): Swin's windows (qkv packed, a per-head
      // additive mask that repeats every 64 windows), rows past a block, keys past a warp
      {"swin window b1", 64, 3, 49, 49, 32, 32, true, AttentionMask::Additive, 2, false, 0, true, 1, 1, 1,
       64},
      {"swin window b32", 2048, 3, 49, 49, 32, 32, true, AttentionMask::Additive, 2, false, 0, true, 1, 1, 1,
       64},
      {"49 keys, odd head, causal", 3, 2, 49, 49, 13, 40, false, AttentionMask::KeepIfTrue, 1, true, 1,
       false},
      {"70 rows, 33 keys", 2, 3, 70, 33, 64, 72, false, AttentionMask::Additive, 0, false, 0, false},
      {"64 keys, 5 rows", 2, 2, 5, 64, 4, 100, false, AttentionMask::DropIfNonzero, 1, false, 0, false},
      {"200 rows, 7 keys, period", 6, 2, 200, 7, 24, 24, false, AttentionMask::Additive, 2, false, 2, false,
       1, 1, 1, 3},
      // past 64 keys: 100 value columns and fully masked rows; a mask per head; keys just past a
      // short sequence
      {"300 keys, 2 passes", 1, 3, 40, 300, 32, 100, false, AttentionMask::KeepIfTrue, 1, true, 0, false},
      {"130 keys, per-head mask", 2, 4, 33, 130, 64, 64, false, AttentionMask::Additive, 2, false, 0, false},
      {"65 keys, odd head, pad", 3, 5, 50, 65, 20, 36, false, AttentionMask::DropIfNonzero, 0, false, 1,
       false},
  };
  int failures = 0;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::printf("%-24s %10s %10s %10s %9s %9s %7s\n", "case", low ? "mma" : "fused",
              low ? "float32" : "3-launch", "fused/3l", "err fused", "err 3l", "path");
  for (const Case& c : cases) {
    if (fp16 && (c.q_mul != 1.0f || c.k_mul != 1.0f || c.v_mul != 1.0f)) {
      std::printf("%-24s skipped: magnitudes past fp16's range\n", c.name);
      continue;
    }
    AttentionParams p;
    p.batch = c.batch;
    p.heads = c.heads;
    p.q_len = c.q_len;
    p.kv_len = c.kv_len;
    p.head_dim = c.e;
    p.v_head_dim = c.ev;
    p.scale = 1.0f / std::sqrt(static_cast<float>(c.e));
    p.causal = c.causal;
    p.mask_kind = c.mask;
    int64_t q_off = 0, k_off = 0, v_off = 0, qn, kn, vn;
    if (c.packed) {
      const int64_t row = 3 * c.heads * c.e;
      for (auto* s : {p.q_strides, p.k_strides, p.v_strides}) {
        s[0] = c.q_len * row;
        s[1] = c.e;
        s[2] = row;
      }
      k_off = c.heads * c.e;
      v_off = 2 * c.heads * c.e;
      qn = kn = vn = c.batch * c.q_len * row;
    } else {
      auto set = [&](int64_t* s, int64_t len, int64_t e) {
        s[2] = e + c.row_pad;
        s[1] = len * s[2];
        s[0] = c.heads * s[1];
        return c.batch * s[0];
      };
      qn = set(p.q_strides, c.q_len, c.e);
      kn = set(p.k_strides, c.kv_len, c.e);
      vn = set(p.v_strides, c.kv_len, c.ev);
    }
    // out as [batch, q_len, heads, ev] (where transpose(1, 2).reshape puts it)
    p.out_strides[2] = c.heads * c.ev;
    p.out_strides[1] = c.ev;
    p.out_strides[0] = c.q_len * p.out_strides[2];
    std::vector<float> hq(qn), hk(kn), hv(vn);
    for (auto& x : hq) x = dist(rng) * 2.0f;
    for (auto& x : hk) x = dist(rng) * 2.0f;
    for (auto& x : hv) x = dist(rng);
    for (auto& x : hq) x *= c.q_mul;
    for (auto& x : hk) x *= c.k_mul;
    for (auto& x : hv) x *= c.v_mul;
    std::vector<float> hq2(hq.begin() + q_off, hq.end()), hk2(hk.begin() + k_off, hk.end()),
        hv2(hv.begin() + v_off, hv.end());
    std::vector<unsigned char> mb;
    std::vector<float> mf;
    if (c.mask != AttentionMask::None) {
      int64_t count = c.batch * c.kv_len;
      p.mask_strides[3] = 1;
      if (c.mask_layout == 0) {
        p.mask_strides[0] = c.kv_len;
      } else if (c.mask_layout == 1) {
        count = c.q_len * c.kv_len;
        p.mask_strides[2] = c.kv_len;
      } else {
        p.mask_batch_period = c.mask_period;
        count = (c.mask_period > 0 ? c.mask_period : c.batch) * c.heads * c.q_len * c.kv_len;
        p.mask_strides[2] = c.kv_len;
        p.mask_strides[1] = c.q_len * c.kv_len;
        p.mask_strides[0] = c.heads * p.mask_strides[1];
      }
      mb.resize(count);
      mf.resize(count);
      for (int64_t i = 0; i < count; ++i) {
        mb[i] = rng() % 4 == 0;
        mf[i] = c.mask == AttentionMask::DropIfNonzero ? (rng() % 4 == 0 ? 1.0f : 0.0f) : dist(rng);
      }
      if (c.mask == AttentionMask::KeepIfTrue) {
        for (auto& x : mb) x = !x;
        if (c.mask_layout > 0)  // two fully masked rows (of the first head)
          for (int64_t j = 0; j < c.kv_len; ++j) mb[2 * c.kv_len + j] = mb[5 % c.q_len * c.kv_len + j] = 0;
      }
      if (c.mask_layout == 0 && c.mask == AttentionMask::DropIfTrue)  // BERT: the last 28 keys padded
        for (int64_t b = 0; b < c.batch; ++b)
          for (int64_t j = 0; j < c.kv_len; ++j) mb[b * c.kv_len + j] = j >= c.kv_len - 28;
    }
    std::vector<double> want(c.batch * c.heads * c.q_len * c.ev);
    reference(p, hq2, hk2, hv2, mb, mf, want);

    float* dq = upload(hq);
    float* dk = upload(hk);
    float* dv = upload(hv);
    void* dmask = c.mask == AttentionMask::None ? nullptr
                  : (c.mask == AttentionMask::Additive || c.mask == AttentionMask::DropIfNonzero)
                      ? static_cast<void*>(upload(mf))
                      : static_cast<void*>(upload(mb));
    const int64_t out_n = c.batch * c.q_len * c.heads * c.ev;
    float *dout, *scratch;
    CHECK(cudaMalloc(&dout, out_n * sizeof(float)));
    CHECK(cudaMalloc(&scratch, c.batch * c.heads * c.q_len * c.kv_len * sizeof(float)));
    auto run = [&](bool fused) {
      if (low) {  // the mma kernel, or the float32 one-launch kernel (or the three launches)
        if (fused)
          unsetenv("AOTC_CUDA_ATTENTION_MMA");
        else
          setenv("AOTC_CUDA_ATTENTION_MMA", "0", 1);
        attention_f32(ex, p, dq + q_off, dk + k_off, dv + v_off, dmask, dout, nullptr, scratch);
        unsetenv("AOTC_CUDA_ATTENTION_MMA");
        return;
      }
      if (fused)
        unsetenv("AOTC_CUDA_ATTENTION_UNFUSED");
      else
        setenv("AOTC_CUDA_ATTENTION_UNFUSED", "1", 1);
      attention_f32(ex, p, dq + q_off, dk + k_off, dv + v_off, dmask, dout, nullptr, scratch);
    };
    auto result = [&](bool fused, double& err, bool& took_fused) {
      CHECK(cudaMemset(dout, 0xff, out_n * sizeof(float)));  // NaN: every element must be written
      unsetenv("AOTC_CUDA_ATTENTION_UNFUSED");
      took_fused = fused && attention_fused_f32(ex, p, dq + q_off, dk + k_off, dv + v_off, dmask, dout);
      if (!took_fused) run(false);
      CHECK(cudaStreamSynchronize(stream));
      if (first_error()[0]) {
        std::printf("  error: %s\n", first_error());
        forget_error();
        ++failures;
      }
      std::vector<float> got(out_n), got_bhle(out_n);
      CHECK(cudaMemcpy(got.data(), dout, out_n * sizeof(float), cudaMemcpyDeviceToHost));
      for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t h = 0; h < c.heads; ++h)
          for (int64_t i = 0; i < c.q_len; ++i)
            for (int64_t e = 0; e < c.ev; ++e)
              got_bhle[((b * c.heads + h) * c.q_len + i) * c.ev + e] =
                  got[b * p.out_strides[0] + h * p.out_strides[1] + i * p.out_strides[2] + e];
      err = rel_l2(got_bhle, want);
    };
    if (profile) {
      if (!c.timed) continue;
      for (int i = 0; i < 3; ++i) run(true);
      for (int i = 0; i < 3; ++i) run(false);
      CHECK(cudaStreamSynchronize(stream));
      continue;
    }
    double err_f, err_u;
    bool fused_path, unused;
    result(true, err_f, fused_path);
    result(false, err_u, unused);
    const bool ok = err_f <= tolerance && err_u <= tolerance && std::isfinite(err_f);
    failures += ok ? 0 : 1;

    double t_f = 0.0, t_u = 0.0;
    if (c.timed) {
      // 12 calls (a 12-layer encoder) per graph, each path's graph replayed 200 times, taking turns.
      cudaGraphExec_t graphs[2];
      for (int which = 0; which < 2; ++which) {
        cudaGraph_t g;
        CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        for (int layer = 0; layer < 12; ++layer) run(which == 0);
        CHECK(cudaStreamEndCapture(stream, &g));
        CHECK(cudaGraphInstantiate(&graphs[which], g, 0));
        CHECK(cudaGraphDestroy(g));
      }
      cudaEvent_t e0, e1;
      CHECK(cudaEventCreate(&e0));
      CHECK(cudaEventCreate(&e1));
      std::vector<float> times[2];
      for (int r = 0; r < 230; ++r)
        for (int which = 0; which < 2; ++which) {
          CHECK(cudaEventRecord(e0, stream));
          CHECK(cudaGraphLaunch(graphs[which], stream));
          CHECK(cudaEventRecord(e1, stream));
          CHECK(cudaEventSynchronize(e1));
          float ms;
          CHECK(cudaEventElapsedTime(&ms, e0, e1));
          if (r >= 30) times[which].push_back(ms * 1000.0f / 12.0f);  // us per call
        }
      for (auto& t : times) std::sort(t.begin(), t.end());
      t_f = times[0][times[0].size() / 2];
      t_u = times[1][times[1].size() / 2];
      for (auto& g : graphs) CHECK(cudaGraphExecDestroy(g));
    }
    std::printf("%-24s %10.2f %10.2f %10.3f %9.1e %9.1e %7s%s\n", c.name, t_f, t_u, t_u > 0 ? t_f / t_u : 0.0,
                err_f, err_u, fused_path ? "fused" : "3-l", ok ? "" : "  FAIL");
    cudaFree(dq);
    cudaFree(dk);
    cudaFree(dv);
    cudaFree(dmask);
    cudaFree(dout);
    cudaFree(scratch);
  }
  std::printf(
      "(times: us per call, median of 200 replays of a 12-call graph; errors: relative L2 against "
      "float64)\n");

  // The mma kernel's block shapes (groups of 16 rows x splits of the keys, forced through
  // AOTC_CUDA_ATTENTION_MMA) at the encoder sizes, us per call as above.
  if (low && !profile) {
    struct Size {
      const char* name;
      int64_t batch, len;
    };
    for (const Size z : {Size{"bert_base", 1, 128}, Size{"vit_b_16", 1, 197}, Size{"bert b8", 8, 128},
                         Size{"vit b8", 8, 197}}) {
      AttentionParams a;
      a.batch = z.batch;
      a.heads = 12;
      a.q_len = a.kv_len = z.len;
      a.head_dim = a.v_head_dim = 64;
      a.scale = 0.125f;
      const int64_t row = 3 * 12 * 64;
      for (auto* st : {a.q_strides, a.k_strides, a.v_strides}) {
        st[0] = z.len * row;
        st[1] = 64;
        st[2] = row;
      }
      a.out_strides[2] = 12 * 64;
      a.out_strides[1] = 64;
      a.out_strides[0] = z.len * a.out_strides[2];
      std::vector<float> host(z.batch * z.len * row);
      for (auto& x : host) x = dist(rng);
      float* d = upload(host);
      float *o, *scratch;
      CHECK(cudaMalloc(&o, z.batch * z.len * 12 * 64 * sizeof(float)));
      CHECK(cudaMalloc(&scratch, attention_scratch_bytes(a)));
      std::printf("%-24s", z.name);
      for (const char* shape : {"default", "1,1", "1,2", "1,4", "2,1", "2,2", "2,4", "4,1", "4,2", "0"}) {
        if (std::string(shape) == "default")
          unsetenv("AOTC_CUDA_ATTENTION_MMA");
        else
          setenv("AOTC_CUDA_ATTENTION_MMA", shape, 1);
        std::printf(" %s %.2f", std::string(shape) == "0" ? "float32" : shape, graph_us(stream, [&] {
                      attention_f32(ex, a, d, d + 12 * 64, d + 2 * 12 * 64, nullptr, o, nullptr, scratch);
                    }));
      }
      unsetenv("AOTC_CUDA_ATTENTION_MMA");
      std::printf("  (us per call)\n");
      // The same with q, k and v already 16-bit (attention_16bit_qkv), 16-bit output.
      std::vector<uint16_t> host16(host.size());
      for (size_t i = 0; i < host.size(); ++i) {
        if (fp16) {
          const __half x = __float2half_rn(host[i]);
          std::memcpy(&host16[i], &x, 2);
        } else {
          const __nv_bfloat16 x = __float2bfloat16_rn(host[i]);
          std::memcpy(&host16[i], &x, 2);
        }
      }
      uint16_t* d16 = upload(host16);
      std::printf("%-24s", (std::string(z.name) + " 16-bit qkv").c_str());
      for (const char* shape : {"default", "1,1", "1,2", "1,4", "2,2", "2,4", "4,1", "4,2"}) {
        if (std::string(shape) == "default")
          unsetenv("AOTC_CUDA_ATTENTION_MMA");
        else
          setenv("AOTC_CUDA_ATTENTION_MMA", shape, 1);
        std::printf(" %s %.2f", shape, graph_us(stream, [&] {
                      attention_16bit_qkv(ex, a, d16, d16 + 12 * 64, d16 + 2 * 12 * 64, nullptr, o, true);
                    }));
      }
      unsetenv("AOTC_CUDA_ATTENTION_MMA");
      std::printf("  (us per call)\n");
      cudaFree(d16);
      cudaFree(d);
      cudaFree(o);
      cudaFree(scratch);
    }
  }

  // A graph holding a large attention (600 keys: about 170 KB of shared memory) replays
  // correctly after a smaller one was launched outside it (the kernel's shared-memory limit
  // belongs to the function, for every context; the graph keeps its own launch).
  {
    auto dense = [](AttentionParams& a, int64_t len_q, int64_t len_k) {
      a.batch = 1;
      a.heads = 2;
      a.q_len = len_q;
      a.kv_len = len_k;
      a.head_dim = a.v_head_dim = 64;
      a.scale = 0.125f;
      auto set = [&](int64_t* st, int64_t len) {
        st[2] = 64;
        st[1] = len * 64;
        st[0] = 2 * st[1];
      };
      set(a.q_strides, len_q);
      set(a.k_strides, len_k);
      set(a.v_strides, len_k);
      set(a.out_strides, len_q);
    };
    AttentionParams big, small;
    dense(big, 50, 600);
    dense(small, 16, 16);
    std::vector<float> host(2 * 600 * 64);
    for (auto& x : host) x = dist(rng);
    float* d = upload(host);
    float *out_graph, *out_direct;
    CHECK(cudaMalloc(&out_graph, 2 * 50 * 64 * sizeof(float)));
    CHECK(cudaMalloc(&out_direct, 2 * 50 * 64 * sizeof(float)));
    unsetenv("AOTC_CUDA_ATTENTION_UNFUSED");
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    const bool big_fused = attention_fused_f32(ex, big, d, d, d, nullptr, out_graph);
    CHECK(cudaStreamEndCapture(stream, &g));
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    const bool small_fused = attention_fused_f32(ex, small, d, d, d, nullptr, out_direct);
    CHECK(cudaGraphLaunch(ge, stream));
    const cudaError_t replay = cudaStreamSynchronize(stream);
    attention_fused_f32(ex, big, d, d, d, nullptr, out_direct);
    CHECK(cudaStreamSynchronize(stream));
    std::vector<float> a(2 * 50 * 64), b(a.size());
    CHECK(cudaMemcpy(a.data(), out_graph, a.size() * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(b.data(), out_direct, b.size() * sizeof(float), cudaMemcpyDeviceToHost));
    const bool ok = big_fused && small_fused && replay == cudaSuccess && !first_error()[0] && a == b;
    std::printf("%-24s %s (replay: %s)\n", "graph after smaller", ok ? "ok" : "FAIL",
                cudaGetErrorString(replay));
    failures += ok ? 0 : 1;
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));
    cudaFree(d);
    cudaFree(out_graph);
    cudaFree(out_direct);
  }
  // Infinities and NaNs propagate as in float32: the one-launch path against the three
  // launches (cuBLAS and the softmax, float32 throughout), element by element. Head 0: a key
  // with an infinity (rows whose score is +inf are NaN, rows whose score is -inf drop the
  // key); head 1: a value of -inf (its column is -inf); head 2: a NaN query (its row is NaN).
  {
    AttentionParams a;
    a.heads = 3;
    a.q_len = 20;
    a.kv_len = low ? 80 : 40;  // (past 64 keys: the mma kernel at 16-bit precisions)
    a.head_dim = a.v_head_dim = 32;
    a.scale = 0.125f;
    auto set = [&](int64_t* st, int64_t len) {
      st[2] = 32;
      st[1] = len * 32;
      st[0] = 3 * st[1];
    };
    set(a.q_strides, a.q_len);
    set(a.k_strides, a.kv_len);
    set(a.v_strides, a.kv_len);
    set(a.out_strides, a.q_len);
    const int64_t keys = a.kv_len;
    std::vector<float> hq(3 * 20 * 32), hk(3 * keys * 32), hv(3 * keys * 32);
    for (auto* h : {&hq, &hk, &hv})
      for (auto& x : *h) x = dist(rng);
    hk[(0 * keys + 3) * 32 + 5] = INFINITY;
    hv[(1 * keys + 7) * 32 + 2] = -INFINITY;
    hq[(2 * 20 + 4) * 32 + 0] = NAN;
    float *dq = upload(hq), *dk = upload(hk), *dv = upload(hv), *dout, *scratch;
    CHECK(cudaMalloc(&dout, hq.size() * sizeof(float)));
    CHECK(cudaMalloc(&scratch, attention_scratch_bytes(a)));
    std::vector<float> outs[2];
    for (int unfused = 0; unfused < 2; ++unfused) {
      if (unfused)
        setenv("AOTC_CUDA_ATTENTION_UNFUSED", "1", 1);
      else
        unsetenv("AOTC_CUDA_ATTENTION_UNFUSED");
      CHECK(cudaMemset(dout, 0, hq.size() * sizeof(float)));
      attention_f32(ex, a, dq, dk, dv, nullptr, dout, nullptr, scratch);
      CHECK(cudaStreamSynchronize(stream));
      outs[unfused].resize(hq.size());
      CHECK(cudaMemcpy(outs[unfused].data(), dout, hq.size() * sizeof(float), cudaMemcpyDeviceToHost));
    }
    unsetenv("AOTC_CUDA_ATTENTION_UNFUSED");
    int bad = 0, nans = 0, infs = 0;
    for (size_t i = 0; i < hq.size(); ++i) {
      const float x = outs[0][i], y = outs[1][i];
      nans += std::isnan(y);
      infs += std::isinf(y);
      const bool same = (std::isnan(x) && std::isnan(y)) || (std::isinf(y) && x == y) ||
                        (std::isfinite(x) && std::isfinite(y) && std::fabs(x - y) <= element_tolerance);
      bad += !same;
    }
    const bool ok = bad == 0 && nans > 0 && infs > 0;
    std::printf("%-24s %d of %zu elements differ from the three launches' (%d NaN, %d inf there)%s\n",
                "non-finite", bad, hq.size(), nans, infs, ok ? "" : "  FAIL");
    failures += ok ? 0 : 1;
    for (float* d : {dq, dk, dv, dout, scratch}) cudaFree(d);
  }
  std::printf("%d failed\n", failures);
  return failures ? 1 : 0;
}

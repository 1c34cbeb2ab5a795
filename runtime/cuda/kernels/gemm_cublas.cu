// gemm_cublas.cu - row-major GEMM (GemmParams, as the CPU kernel takes it) on cuBLASLt.
//
// The row-major C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T, B
// first, each operand's row stride its leading dimension. In that formulation cuBLASLt's
// epilogue fuses what runs along C's columns or is elementwise:
//   - a bias per column of C (linear layers): cuBLASLt's bias runs along the rows of C^T;
//   - a residual (transformer blocks): cuBLASLt's C operand with beta = 1;
//   - a relu, when nothing is left to add after the product.
// The rest (a bias per row of C, as a convolution's; a bias per matrix of a batch; other
// clamps) is one pass, bias_clamp_f32, after the product. (cuBLASLt 13.0 refuses the
// row-major layouts that would put a per-row bias in its epilogue for float32:
// bench/results_gpu.md.)
//
// Algorithm choice: cuBLASLt's heuristic, or, with Exec::tuning, the fastest of its
// candidates and their split-K variants, timed once per shape in the context's tuning run
// (Exec::tune) before the capture. The heuristic alone leaves an H100 mostly idle on
// transformer-sized products (M = 128-197 rows: tens of tiles for 132 multiprocessors).
//
// Exact float32 unless Exec::precision allows tensor cores: tf32, or fp16 / bf16, for which
// the operands are (or are rounded to) the 16-bit type with float32 accumulation. At fp32 a
// linear layer may instead run on gemm_3xtf32 (float32's accuracy on tf32 tensor cores),
// or, when its B is a weight, on gemm_f16x2 (float32's accuracy on fp16 tensor cores, B split
// once), where the tuning run finds it faster (choose_own_gemm).
// AOTC_CUDA_NO_LT=1 (read when a context is created) takes plain cuBLAS and the epilogue
// pass for every GEMM, for comparisons; so does any GEMM cuBLASLt has no algorithm for.
#include <aotc/rt/cuda/kernels_cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../gemm_tuning.h"

namespace aotc::rt::cuda {
namespace {

// AOTC_CUDA_TRACE=1: say on stderr (at context creation, where GEMMs are planned) why a
// GEMM did not take cuBLASLt, and what tuning chose.
bool trace() {
  static const bool on = std::getenv("AOTC_CUDA_TRACE") != nullptr;
  return on;
}

// The largest power of two (up to 256) that divides the address: cuBLASLt's heuristic
// assumes 16-byte aligned operands unless told otherwise, and a view may start anywhere.
uint32_t alignment_of(const void* ptr) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  uint32_t align = 256;
  while (align > 4 && address % align != 0) align /= 2;
  return align;
}

// The compute type of a product at a precision.
cublasComputeType_t compute_type(Precision precision) {
  switch (precision) {
    case Precision::Tf32:
      return CUBLAS_COMPUTE_32F_FAST_TF32;
    case Precision::Fp16:
      return CUBLAS_COMPUTE_32F_FAST_16F;
    case Precision::Bf16:
      return CUBLAS_COMPUTE_32F_FAST_16BF;
    default:
      return CUBLAS_COMPUTE_32F;
  }
}

bool has_clamp(const GemmParams& p) {
  return p.clamp_lo != -__builtin_inff() || p.clamp_hi != __builtin_inff();
}
bool is_relu(const GemmParams& p) { return p.clamp_lo == 0.0f && p.clamp_hi == __builtin_inff(); }

// How a product's epilogue is split between cuBLASLt and the pass after it. The epilogue
// is clamp(alpha * AB + beta * bias + residual): the additions commute, so cuBLASLt takes
// those it can and the pass the others; the clamp comes last, in cuBLASLt only as a relu
// with nothing left for the pass.
struct EpiloguePlan {
  cublasLtEpilogue_t lt = CUBLASLT_EPILOGUE_DEFAULT;
  bool lt_bias = false, lt_residual = false;
  bool pass_bias = false, pass_residual = false, pass_clamp = false;
  bool pass_activation = false;  // a GELU (GemmParams::activation): never cuBLASLt's (tanh only)
  bool pass() const { return pass_bias || pass_residual || pass_clamp || pass_activation; }
};

// residual: p.residual, or a 16-bit one (gemm_16bit_output).
EpiloguePlan plan_epilogue(const BatchedGemmParams& bp, const void* bias, const void* residual) {
  const GemmParams& p = bp.gemm;
  EpiloguePlan e;
  const bool with_bias = p.bias_kind != BiasKind::None && bias;
  // cuBLASLt reads the bias in vectors: it must be 16-byte aligned.
  e.lt_bias = with_bias && p.bias_kind == BiasKind::PerColumn && p.beta == 1.0f && bp.stride_bias == 0 &&
              alignment_of(bias) >= 16;
  e.pass_bias = with_bias && !e.lt_bias;
  // A GELU comes before the residual: both go to the pass.
  e.pass_activation = p.activation != GemmActivation::None;
  e.lt_residual = residual != nullptr && !e.pass_activation;
  e.pass_residual = residual != nullptr && e.pass_activation;
  const bool lt_relu = is_relu(p) && !e.pass_bias && !e.pass_residual && !e.pass_activation &&
                       !std::getenv("AOTC_CUDA_LT_NO_RELU");
  e.pass_clamp = has_clamp(p) && !lt_relu;
  e.lt = e.lt_bias ? (lt_relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                   : (lt_relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
  return e;
}

// A column-major layout of rows x cols with column stride ld, batch matrices stride apart.
cublasLtMatrixLayout_t layout_of(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride,
                                 cudaDataType_t type) {
  cublasLtMatrixLayout_t layout = nullptr;
  if (cublasLtMatrixLayoutCreate(&layout, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols),
                                 ld) != CUBLAS_STATUS_SUCCESS)
    return nullptr;
  const int32_t count = static_cast<int32_t>(batch);
  if (batch > 1 && (cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                     sizeof count) != CUBLAS_STATUS_SUCCESS ||
                    cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                     &stride, sizeof stride) != CUBLAS_STATUS_SUCCESS)) {
    cublasLtMatrixLayoutDestroy(layout);
    return nullptr;
  }
  return layout;
}

// cuBLASLt's descriptors of one product, destroyed with it.
struct LtProblem {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  LtProblem() = default;
  LtProblem(const LtProblem&) = delete;
  LtProblem& operator=(const LtProblem&) = delete;
  ~LtProblem() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d && d != c) cublasLtMatrixLayoutDestroy(d);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (second) cublasLtMatrixLayoutDestroy(second);
    if (first) cublasLtMatrixLayoutDestroy(first);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

template <class T>
bool set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  return cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof value) == CUBLAS_STATUS_SUCCESS;
}
template <class T>
bool set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const T& value) {
  return cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof value) == CUBLAS_STATUS_SUCCESS;
}

// Everything that makes two products the same problem for cuBLASLt's algorithms.
GemmTuningKey key_of(const Exec& ex, const BatchedGemmParams& bp, const EpiloguePlan& e,
                     cudaDataType_t ab_type, cudaDataType_t c_type, const void* a, const void* b,
                     const void* bias, const void* residual, const void* c) {
  const GemmParams& p = bp.gemm;
  const int64_t fields[] = {p.m,
                            p.n,
                            p.k,
                            p.trans_a,
                            p.trans_b,
                            p.lda,
                            p.ldb,
                            p.ldc,
                            bp.batch,
                            bp.stride_a,
                            bp.stride_b,
                            bp.stride_c,
                            static_cast<int64_t>(e.lt),
                            e.lt_residual ? p.ldr : -1,
                            static_cast<int64_t>(ab_type) | static_cast<int64_t>(c_type) << 16,
                            static_cast<int64_t>(ex.precision),
                            alignment_of(a),
                            alignment_of(b),
                            alignment_of(c),
                            e.lt_residual ? alignment_of(residual) : 0,
                            e.lt_bias ? alignment_of(bias) : 0,
                            static_cast<int64_t>(p.activation)};
  // The last three fields are choose_implicit_conv's (a convolution's geometry).
  static_assert(sizeof fields / sizeof fields[0] <= GemmTuningKey::kFields - 3);
  GemmTuningKey key;
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i) key.fields[i] = fields[i];
  return key;
}

// Two events to time candidates with, destroyed with it.
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  bool ok = false;
  EventPair() { ok = cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess; }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  ~EventPair() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

// Times launch() on the stream (not captured): one launch to warm up (code, descriptors),
// then the median of kTimed launches, each after the flush buffer has been overwritten (an
// L2 as cold as in a run); a negative time when a launch fails.
template <class Launch>
float median_time(const Exec& ex, const EventPair& t, const Launch& launch) {
  constexpr int kTimed = 7;
  if (!launch()) return -1.0f;
  void* flush = nullptr;
  size_t flush_bytes = 0;
  gemm_tuning_flush(ex.tuning, &flush, &flush_bytes);
  float times[kTimed];
  for (int i = 0; i < kTimed; ++i) {
    if (flush) cudaMemsetAsync(flush, i + 1, flush_bytes, ex.stream);
    cudaEventRecord(t.start, ex.stream);
    if (!launch()) return -1.0f;
    cudaEventRecord(t.stop, ex.stream);
    if (cudaEventSynchronize(t.stop) != cudaSuccess ||
        cudaEventElapsedTime(&times[i], t.start, t.stop) != cudaSuccess)
      return -1.0f;
  }
  for (int i = 1; i < kTimed; ++i)  // insertion sort: seven values
    for (int k = i; k > 0 && times[k] < times[k - 1]; --k) {
      const float swap = times[k];
      times[k] = times[k - 1];
      times[k - 1] = swap;
    }
  gemm_tuning_count_candidate(ex.tuning);
  return times[kTimed / 2];
}

// The time of cuBLASLt's `algo` (median_time).
float time_algo(const Exec& ex, const EventPair& t, const LtProblem& lp, const cublasLtMatmulAlgo_t& algo,
                const float* alpha, const float* beta, const void* first, const void* second,
                const void* cmat, void* d) {
  return median_time(ex, t, [&] {
    return cublasLtMatmul(ex.lt, lp.desc, alpha, first, lp.first, second, lp.second, beta, cmat, lp.c, d,
                          lp.d, &algo, ex.workspace, ex.workspace_bytes, ex.stream) == CUBLAS_STATUS_SUCCESS;
  });
}

// The candidates of a tuning: cuBLASLt's heuristic choices, and for the first few of those
// that can split K, the same algorithm split 2 to 16 ways (few output tiles: the split
// puts the idle multiprocessors to work on K).
// AOTC_CUDA_LT_CANDIDATES=N (1 to kMostHeuristicCandidates, read at context creation) asks
// cuBLASLt for N heuristic choices instead of 12, for comparisons.
constexpr int kHeuristicCandidates = 12, kMostHeuristicCandidates = 48;
constexpr int kSplitBases = 3;
constexpr uint32_t kSplits[] = {2, 3, 4, 6, 8, 12, 16};
constexpr int kMaxCandidates =
    kMostHeuristicCandidates + kSplitBases * static_cast<int>(sizeof kSplits / sizeof kSplits[0]);

int heuristic_candidates() {
  const char* env = std::getenv("AOTC_CUDA_LT_CANDIDATES");
  const int n = env ? std::atoi(env) : kHeuristicCandidates;
  return n < 1 ? 1 : n > kMostHeuristicCandidates ? kMostHeuristicCandidates : n;
}

// Fills out (kMaxCandidates) and returns how many.
int candidates_of(const Exec& ex, const LtProblem& lp, const cublasLtMatmulHeuristicResult_t* heuristic,
                  int found, cudaDataType_t c_type, cublasLtMatmulAlgo_t* out) {
  int count = 0;
  for (int i = 0; i < found; ++i)
    if (heuristic[i].state == CUBLAS_STATUS_SUCCESS) out[count++] = heuristic[i].algo;
  for (int i = 0; i < found && i < kSplitBases; ++i) {
    if (heuristic[i].state != CUBLAS_STATUS_SUCCESS) continue;
    int32_t can_split = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&heuristic[i].algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &can_split,
                                          sizeof can_split, &written) != CUBLAS_STATUS_SUCCESS ||
        !can_split)
      continue;
    uint32_t schemes = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&heuristic[i].algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK,
                                          &schemes, sizeof schemes, &written) != CUBLAS_STATUS_SUCCESS)
      continue;
    // The partial sums reduced in the output type, else in the compute type, else in place;
    // a 16-bit output's in the compute type first (float32 partial sums, rounded once).
    // cublasLtMatmulAlgoCheck below says how much workspace that takes.
    const uint32_t first_choice =
        c_type == CUDA_R_32F ? CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE : CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    uint32_t scheme =
        (schemes & first_choice)                             ? first_choice
        : (schemes & CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE)  ? CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE
        : (schemes & CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE) ? CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE
                                                             : CUBLASLT_REDUCTION_SCHEME_INPLACE;
    if (!(schemes & scheme)) continue;
    for (uint32_t split : kSplits) {
      cublasLtMatmulAlgo_t algo = heuristic[i].algo;
      cublasLtMatmulHeuristicResult_t check{};
      if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split,
                                               sizeof split) != CUBLAS_STATUS_SUCCESS ||
          cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
                                               sizeof scheme) != CUBLAS_STATUS_SUCCESS ||
          cublasLtMatmulAlgoCheck(ex.lt, lp.desc, lp.first, lp.second, lp.c, lp.d, &algo, &check) !=
              CUBLAS_STATUS_SUCCESS ||
          check.workspaceSize > ex.workspace_bytes)
        continue;
      out[count++] = algo;
    }
  }
  return count;
}

// The product with e's part of the epilogue through cuBLASLt; false (nothing enqueued)
// when cuBLASLt has no algorithm for it, and the caller takes the plain path.
// ab_type: the operands' type (float32, or 16-bit ones multiplied with float32 accumulation);
// c_type: C's, float32 or the operands' 16-bit type, whose bias and residual are of it too.
bool lt_gemm(const Exec& ex, const BatchedGemmParams& bp, const EpiloguePlan& e, const void* a, const void* b,
             cudaDataType_t ab_type, cudaDataType_t c_type, const void* bias, const void* residual, void* c) {
  const GemmParams& p = bp.gemm;
  LtProblem lp;
  const cublasComputeType_t compute = ab_type == CUDA_R_32F ? compute_type(ex.precision) : CUBLAS_COMPUTE_32F;
  if (cublasLtMatmulDescCreate(&lp.desc, compute, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return false;
  // cuBLASLt's first operand is B, its second A (C^T = op(B)^T op(A)^T).
  const cublasOperation_t t1 = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                          t2 = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  bool ok = set_desc(lp.desc, CUBLASLT_MATMUL_DESC_TRANSA, t1) &&
            set_desc(lp.desc, CUBLASLT_MATMUL_DESC_TRANSB, t2) &&
            set_desc(lp.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, e.lt);
  if (ok && e.lt_bias) ok = set_desc(lp.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  // The row-major B (k x n, or n x k transposed) read column-major is n x k (k x n).
  lp.first = layout_of(p.trans_b ? p.k : p.n, p.trans_b ? p.n : p.k, p.ldb, bp.batch, bp.stride_b, ab_type);
  lp.second = layout_of(p.trans_a ? p.m : p.k, p.trans_a ? p.k : p.m, p.lda, bp.batch, bp.stride_a, ab_type);
  lp.d = layout_of(p.n, p.m, p.ldc, bp.batch, bp.stride_c, c_type);
  lp.c = e.lt_residual ? layout_of(p.n, p.m, p.ldr, bp.batch, bp.stride_c, c_type) : lp.d;
  const uint64_t workspace = ex.workspace_bytes;
  ok = ok && lp.first && lp.second && lp.c && lp.d &&
       cublasLtMatmulPreferenceCreate(&lp.pref) == CUBLAS_STATUS_SUCCESS &&
       set_pref(lp.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace) &&
       set_pref(lp.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment_of(b)) &&
       set_pref(lp.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment_of(a)) &&
       set_pref(lp.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                alignment_of(e.lt_residual ? residual : c)) &&
       set_pref(lp.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment_of(c));
  if (!ok) {
    if (trace())
      std::fprintf(stderr, "aotc: cuBLASLt descriptors for %lldx%lldx%lld could not be made\n",
                   static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k));
    return false;
  }
  const float beta = e.lt_residual ? 1.0f : 0.0f;
  const void* cmat = e.lt_residual ? residual : c;

  cublasLtMatmulAlgo_t algo{};
  const GemmTuningKey key = key_of(ex, bp, e, ab_type, c_type, a, b, bias, residual, c);
  if (!gemm_tuning_find(ex.tuning, key, &algo)) {
    const bool tune = ex.tuning && ex.tune;
    cublasLtMatmulHeuristicResult_t heuristic[kMostHeuristicCandidates] = {};
    int found = 0;
    const cublasStatus_t h =
        cublasLtMatmulAlgoGetHeuristic(ex.lt, lp.desc, lp.first, lp.second, lp.c, lp.d, lp.pref,
                                       tune ? heuristic_candidates() : 1, heuristic, &found);
    if (h != CUBLAS_STATUS_SUCCESS || found <= 0) {
      if (trace())
        std::fprintf(stderr,
                     "aotc: cuBLASLt has no algorithm for %lldx%lldx%lld (batch %lld): %s, %d found\n",
                     static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k),
                     static_cast<long long>(bp.batch), cublasGetStatusString(h), found);
      return false;
    }
    algo = heuristic[0].algo;
    if (tune) {
      const EventPair events;
      if (!events.ok) {
        note_error("GEMM tuning", "cudaEventCreate failed");
        return false;
      }
      cublasLtMatmulAlgo_t candidates[kMaxCandidates];
      const int count = candidates_of(ex, lp, heuristic, found, c_type, candidates);
      // The heuristic's first choice stays unless another is clearly faster (kMargin):
      // timing noise alone should not change the algorithm (and with it the order of the
      // sums) from one context to the next.
      constexpr float kMargin = 0.97f;
      float best = -1.0f, first = -1.0f;
      int best_index = -1;
      for (int i = 0; i < count; ++i) {
        const float ms = time_algo(ex, events, lp, candidates[i], &p.alpha, &beta, b, a, cmat, c);
        if (i == 0) first = ms;
        if (ms >= 0.0f && (best < 0.0f || ms < best)) {
          best = ms;
          best_index = i;
        }
      }
      if (best_index > 0 && first >= 0.0f && best > kMargin * first) best_index = 0;
      if (best_index >= 0) algo = candidates[best_index];
      cudaGetLastError();  // a candidate that failed to launch leaves nothing for the run to see
      if (trace())
        std::fprintf(
            stderr,
            "aotc: GEMM %lldx%lldx%lld batch %lld: heuristic %.4f ms, tuned %.4f ms (candidate %d of %d)\n",
            static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k),
            static_cast<long long>(bp.batch), first, best, best_index, count);
      if (!gemm_tuning_add(ex.tuning, key, algo)) {
        note_error("GEMM tuning", "out of memory");
        return false;
      }
    }
  }
  const cublasStatus_t s = cublasLtMatmul(ex.lt, lp.desc, &p.alpha, b, lp.first, a, lp.second, &beta, cmat,
                                          lp.c, c, lp.d, &algo, ex.workspace, ex.workspace_bytes, ex.stream);
  if (s != CUBLAS_STATUS_SUCCESS) note_error("cublasLtMatmul", cublasGetStatusString(s));
  return true;
}

// The product without epilogue through plain cuBLAS.
// c_type: float32, or the 16-bit ab_type (gemm_16bit_output).
void plain_gemm(const Exec& ex, const BatchedGemmParams& bp, const void* a, const void* b,
                cudaDataType_t ab_type, cudaDataType_t c_type, void* c) {
  const GemmParams& p = bp.gemm;
  const float zero = 0.0f;
  const cublasOperation_t t1 = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                          t2 = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasStatus_t s;
  if (ab_type != CUDA_R_32F || ex.precision == Precision::Fp16 || ex.precision == Precision::Bf16) {
    // 16-bit operands, or float32 ones that cuBLAS rounds to 16 bits (the compute type
    // says so); float32 accumulation either way.
    s = cublasGemmStridedBatchedEx(
        ex.blas, t1, t2, static_cast<int>(p.n), static_cast<int>(p.m), static_cast<int>(p.k), &p.alpha, b,
        ab_type, static_cast<int>(p.ldb), bp.stride_b, a, ab_type, static_cast<int>(p.lda), bp.stride_a,
        &zero, c, c_type, static_cast<int>(p.ldc), bp.stride_c, static_cast<int>(bp.batch),
        ab_type == CUDA_R_32F ? compute_type(ex.precision) : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) note_error("cublasGemmStridedBatchedEx", cublasGetStatusString(s));
  } else if (bp.batch == 1) {
    s = cublasSgemm(ex.blas, t1, t2, static_cast<int>(p.n), static_cast<int>(p.m), static_cast<int>(p.k),
                    &p.alpha, static_cast<const float*>(b), static_cast<int>(p.ldb),
                    static_cast<const float*>(a), static_cast<int>(p.lda), &zero, static_cast<float*>(c),
                    static_cast<int>(p.ldc));
    if (s != CUBLAS_STATUS_SUCCESS) note_error("cublasSgemm", cublasGetStatusString(s));
  } else {
    s = cublasSgemmStridedBatched(ex.blas, t1, t2, static_cast<int>(p.n), static_cast<int>(p.m),
                                  static_cast<int>(p.k), &p.alpha, static_cast<const float*>(b),
                                  static_cast<int>(p.ldb), bp.stride_b, static_cast<const float*>(a),
                                  static_cast<int>(p.lda), bp.stride_a, &zero, static_cast<float*>(c),
                                  static_cast<int>(p.ldc), bp.stride_c, static_cast<int>(bp.batch));
    if (s != CUBLAS_STATUS_SUCCESS) note_error("cublasSgemmStridedBatched", cublasGetStatusString(s));
  }
}

// The whole epilogue, for the pass after a product without one; residual: p.residual, or a
// 16-bit one (gemm_16bit_output).
EpiloguePlan everything(const GemmParams& p, const void* bias, const void* residual) {
  EpiloguePlan all;
  all.pass_bias = p.bias_kind != BiasKind::None && bias;
  all.pass_residual = residual != nullptr;
  all.pass_clamp = has_clamp(p);
  all.pass_activation = p.activation != GemmActivation::None;
  return all;
}

// The part of the epilogue that e leaves to the pass after the product.
void run_pass(const Exec& ex, const BatchedGemmParams& bp, const EpiloguePlan& e, const float* bias,
              float* c) {
  const GemmParams& p = bp.gemm;
  if (!e.pass()) return;
  bias_clamp_f32(
      ex.stream, bp.batch, p.m, p.n, p.ldc, bp.stride_c, e.pass_bias ? p.bias_kind : BiasKind::None, p.beta,
      bias, bp.stride_bias, e.pass_activation ? p.activation : GemmActivation::None,
      e.pass_residual ? p.residual : nullptr, p.ldr, bp.stride_c,
      e.pass_clamp ? p.clamp_lo : -__builtin_inff(), e.pass_clamp ? p.clamp_hi : __builtin_inff(), c);
}

// The product (k > 0) and its epilogue on cuBLASLt, or on cuBLAS and the pass.
void cublas_gemm(const Exec& ex, const BatchedGemmParams& bp, const void* a, const void* b,
                 cudaDataType_t ab_type, const float* bias, float* c) {
  const GemmParams& p = bp.gemm;
  EpiloguePlan e = plan_epilogue(bp, bias, p.residual);
  if (std::getenv("AOTC_CUDA_NO_LT") || !lt_gemm(ex, bp, e, a, b, ab_type, CUDA_R_32F, bias, p.residual, c)) {
    plain_gemm(ex, bp, a, b, ab_type, CUDA_R_32F, c);
    e = everything(p, bias, p.residual);
  }
  run_pass(ex, bp, e, bias, c);
}

// The fastest of the configs 0 .. configs - 1 that runs(config) accepts, each timed with
// median_time (launch(config) enqueues one run); -1 when none ran, and *best_ms its time.
// A config that fails to launch (a cluster the GPU cannot place, say) is not a candidate;
// it leaves nothing behind for the run to see (launch errors are not sticky), as a failed
// cuBLASLt candidate does not (lt_gemm).
template <class Runs, class Launch>
int fastest_config(const Exec& ex, const EventPair& events, int configs, const Runs& runs,
                   const Launch& launch, float* best_ms) {
  int chosen = -1;
  float best = -1.0f;
  for (int config = 0; config < configs; ++config) {
    if (!runs(config) || first_error()[0]) continue;
    const float ms = median_time(ex, events, [&] {
      launch(config);
      return first_error()[0] == '\0';
    });
    if (ms < 0.0f) {
      cudaGetLastError();
      forget_error();
      continue;
    }
    if (best < 0.0f || ms < best) {
      best = ms;
      chosen = config;
    }
  }
  *best_ms = best;
  return chosen;
}

// A weight's split for gemm_f16x2 (null: none), made in the tuning run the first time the
// weight is seen as this n x k matrix and kept by the tuning table for the context's life
// where a product chose gemm_f16x2 over it (an extra copy of the weight's size in device
// memory; freed after the tuning run otherwise): the weight's contents never change after
// creation.
// AOTC_CUDA_NO_F16X2=1 (read at context creation) makes none.
const void* weight_split(const Exec& ex, const GemmParams& p, const float* b) {
  if (std::getenv("AOTC_CUDA_NO_F16X2") || !p.trans_b) return nullptr;
  void* split = nullptr;
  if (gemm_tuning_find_split(ex.tuning, b, p.n, p.k, p.ldb, &split) || !ex.tune) return split;
  int* non_finite = nullptr;
  int flag = 1;
  if (cudaMalloc(&split, gemm_f16x2_split_bytes(p.n, p.k)) != cudaSuccess ||
      cudaMalloc(&non_finite, sizeof(int)) != cudaSuccess ||
      cudaMemsetAsync(non_finite, 0, sizeof(int), ex.stream) != cudaSuccess) {
    cudaGetLastError();  // no split: the other kernels remain
  } else {
    gemm_f16x2_split_b(ex.stream, p.n, p.k, b, p.ldb, split, non_finite);
    if (cudaMemcpyAsync(&flag, non_finite, sizeof(int), cudaMemcpyDeviceToHost, ex.stream) != cudaSuccess ||
        cudaStreamSynchronize(ex.stream) != cudaSuccess)
      flag = 1;
  }
  if (non_finite) cudaFree(non_finite);
  if (flag != 0 && split) {
    cudaFree(split);
    split = nullptr;
  }
  if (!gemm_tuning_add_split(ex.tuning, b, p.n, p.k, p.ldb, split)) {
    if (split) cudaFree(split);
    note_error("GEMM tuning", "out of memory");
    return nullptr;
  }
  return split;
}

// The own float32 kernel chosen for a product (OwnGemm::kind: -1 cuBLAS's path).
struct OwnGemm {
  int kind = -1;  // -1: cuBLAS; 0: gemm_3xtf32; 1: gemm_f16x2 over `split`
  int config = -1;
  const void* split = nullptr;
};

// Float32 linear layers (A B^T, one matrix) may run on gemm_3xtf32 instead: float32's
// accuracy on tf32 tensor cores; and a linear layer whose B is a weight (b_weight) on
// gemm_f16x2 over the weight's split (weight_split). Which one runs is timed per shape in
// the tuning run, every supported config of each against cuBLAS's path as tuned; the choice
// stays with cuBLAS unless an own kernel is clearly faster. cuBLAS also without a tuning
// table, and with AOTC_CUDA_NO_3XTF32=1 (no own kernel at all).
OwnGemm choose_own_gemm(const Exec& ex, const BatchedGemmParams& bp, const void* a, const void* b,
                        cudaDataType_t ab_type, const float* bias, float* c, bool b_weight) {
  const GemmParams& p = bp.gemm;
  if (ex.precision != Precision::Fp32 || ab_type != CUDA_R_32F || bp.batch != 1 || !ex.tuning) return {};
  if (std::getenv("AOTC_CUDA_NO_3XTF32")) return {};  // read at context creation, like AOTC_CUDA_NO_LT
  const auto* fa = static_cast<const float*>(a);
  const auto* fb = static_cast<const float*>(b);
  const int configs_3x = gemm_3xtf32_configs();
  const void* split = b_weight ? weight_split(ex, p, fb) : nullptr;
  // Configs 0 .. configs_3x - 1 are gemm_3xtf32's, the next ones gemm_f16x2's.
  const auto runs = [&](int config) {
    if (config < configs_3x)
      return gemm_3xtf32_supported(p, fa, fb, config) &&
             gemm_3xtf32_workspace_bytes(p, config) <= ex.workspace_bytes;
    return split && gemm_f16x2_supported(p, fa, split, config - configs_3x) &&
           gemm_f16x2_workspace_bytes(p, config - configs_3x) <= ex.workspace_bytes;
  };
  // (A split that a product runs on is marked used: the others are freed after the tuning
  // run, gemm_tuning_free_unused_splits.)
  const auto own_of = [&](int config) {
    if (config < 0) return OwnGemm{};
    if (config < configs_3x) return OwnGemm{0, config, nullptr};
    gemm_tuning_use_split(ex.tuning, fb, p.n, p.k, p.ldb);
    return OwnGemm{1, config - configs_3x, split};
  };
  const int configs = configs_3x + gemm_f16x2_configs();
  bool any = false;
  for (int config = 0; config < configs && !any; ++config) any = runs(config);
  if (!any) return {};
  GemmTuningKey key =
      key_of(ex, bp, plan_epilogue(bp, bias, p.residual), ab_type, CUDA_R_32F, a, b, bias, p.residual, c);
  key.fields[24] = b_weight;
  int chosen = -1;
  if (gemm_tuning_find_3xtf32(ex.tuning, key, &chosen) || !ex.tune)
    // Another weight of this shape may have chosen the split where this one has none.
    return chosen >= 0 && runs(chosen) ? own_of(chosen) : OwnGemm{};

  const EventPair events;
  if (!events.ok) {
    note_error("GEMM tuning", "cudaEventCreate failed");
    return {};
  }
  const float cublas_ms = median_time(ex, events, [&] {
    cublas_gemm(ex, bp, a, b, ab_type, bias, c);
    return first_error()[0] == '\0';
  });
  float best = -1.0f;
  chosen = fastest_config(
      ex, events, configs, runs,
      [&](int config) {
        if (config < configs_3x)
          gemm_3xtf32(ex.stream, p, fa, fb, bias, c, config, ex.workspace);
        else
          gemm_f16x2(ex.stream, p, fa, split, bias, c, config - configs_3x, ex.workspace);
      },
      &best);
  // As for cuBLASLt's candidates (lt_gemm): timing noise alone should not change the kernel.
  constexpr float kMargin = 0.97f;
  if (cublas_ms >= 0.0f && !(best >= 0.0f && best < kMargin * cublas_ms)) chosen = -1;
  if (trace())
    std::fprintf(stderr, "aotc: GEMM %lldx%lldx%lld float32%s: cuBLAS %.4f ms, own %.4f ms (config %d): %s\n",
                 static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k),
                 b_weight ? " (B a weight)" : "", cublas_ms, best, chosen,
                 chosen < 0            ? "cuBLAS"
                 : chosen < configs_3x ? "3xTF32"
                                       : "2xFP16");
  if (!gemm_tuning_add_3xtf32(ex.tuning, key, chosen)) {
    note_error("GEMM tuning", "out of memory");
    return {};
  }
  return own_of(chosen);
}

// The product and its epilogue, operands of type ab_type.
// b_weight: B is a weight (gemm_weight_f32), which gemm_f16x2 may take split.
void gemm_impl(const Exec& ex, const BatchedGemmParams& bp, const void* a, const void* b,
               cudaDataType_t ab_type, const float* bias, float* c, bool b_weight = false) {
  const GemmParams& p = bp.gemm;
  if (p.m <= 0 || p.n <= 0 || bp.batch <= 0) return;
  if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX || bp.batch > INT32_MAX) {
    note_error("gemm", "the product is too large for cuBLAS's 32-bit sizes");
    return;
  }
  if (p.k == 0) {
    // No product: C is the epilogue's terms alone; zero it first, then the pass.
    for (int64_t i = 0; i < bp.batch; ++i)
      cudaMemset2DAsync(c + i * bp.stride_c, static_cast<size_t>(p.ldc) * sizeof(float), 0,
                        static_cast<size_t>(p.n) * sizeof(float), static_cast<size_t>(p.m), ex.stream);
    check_launch("gemm (k = 0)");
    run_pass(ex, bp, everything(p, bias, p.residual), bias, c);
    return;
  }
  if (const OwnGemm own = choose_own_gemm(ex, bp, a, b, ab_type, bias, c, b_weight); own.kind == 0) {
    gemm_3xtf32(ex.stream, p, static_cast<const float*>(a), static_cast<const float*>(b), bias, c, own.config,
                ex.workspace);
    return;
  } else if (own.kind == 1) {
    gemm_f16x2(ex.stream, p, static_cast<const float*>(a), own.split, bias, c, own.config, ex.workspace);
    return;
  }
  cublas_gemm(ex, bp, a, b, ab_type, bias, c);
}

// The implicit_conv_nhwc config chosen for a convolution (-1: im2col + GEMM), timed in
// the tuning run: im2col_nhwc_f32 + gemm_impl as tuned against every supported config;
// the implicit GEMM must be clearly faster (kMargin, as elsewhere).
int choose_implicit_conv(const Exec& ex, const BatchedGemmParams& bp, const Conv2dParams& conv,
                         const float* x, const float* w, const float* bias, float* c, float* columns) {
  const GemmParams& p = bp.gemm;
  // AOTC_CUDA_IMPLICIT_CONV=0: never; =1: always where a config runs (for comparisons and
  // for the GPU suite's checks of shapes where timing would not pick it).
  const char* env = std::getenv("AOTC_CUDA_IMPLICIT_CONV");
  const bool never = env && std::strcmp(env, "0") == 0, always = env && std::strcmp(env, "1") == 0;
  if (!ex.tuning || implicit_conv_nhwc_configs(ex.precision) == 0 || never) return -1;
  const auto runs = [&](int config) {
    return implicit_conv_nhwc_supported(conv, p, ex.precision, x, w, config) &&
           implicit_conv_nhwc_workspace_bytes(p, config) <= ex.workspace_bytes;
  };
  bool any = false;
  for (int config = 0; config < implicit_conv_nhwc_configs(ex.precision) && !any; ++config)
    any = runs(config);
  if (!any) return -1;
  // The product's key and the geometry that the product's sizes leave open.
  GemmTuningKey key =
      key_of(ex, bp, plan_epilogue(bp, bias, p.residual), CUDA_R_32F, CUDA_R_32F, x, w, bias, p.residual, c);
  key.fields[21] = conv.h_in << 32 | conv.w_in;
  key.fields[22] = conv.kernel_h << 48 | conv.kernel_w << 32 | conv.stride_h << 16 | conv.stride_w;
  key.fields[23] = conv.pad_h << 48 | conv.pad_w << 32 | conv.dilation_h << 16 | conv.dilation_w;
  int chosen = -1;
  if (gemm_tuning_find_3xtf32(ex.tuning, key, &chosen) || !ex.tune) return chosen;

  const EventPair events;
  if (!events.ok) {
    note_error("GEMM tuning", "cudaEventCreate failed");
    return -1;
  }
  const float unfolded_ms = median_time(ex, events, [&] {
    im2col_nhwc_f32(ex.stream, conv, false, p.k, x, columns);
    gemm_impl(ex, bp, columns, w, CUDA_R_32F, bias, c);
    return first_error()[0] == '\0';
  });
  float best = -1.0f;
  chosen = fastest_config(
      ex, events, implicit_conv_nhwc_configs(ex.precision), runs,
      [&](int config) {
        implicit_conv_nhwc(ex.stream, ex.precision, conv, p, x, w, bias, c, config, ex.workspace);
      },
      &best);
  constexpr float kMargin = 0.97f;
  if (!always && unfolded_ms >= 0.0f && !(best >= 0.0f && best < kMargin * unfolded_ms)) chosen = -1;
  if (trace())
    std::fprintf(
        stderr,
        "aotc: conv %lldx%lldx%lld (%lldx%lld, stride %lld): im2col + GEMM %.4f ms, implicit %.4f ms "
        "(config %d): %s\n",
        static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k),
        static_cast<long long>(conv.kernel_h), static_cast<long long>(conv.kernel_w),
        static_cast<long long>(conv.stride_h), unfolded_ms, best, chosen,
        chosen >= 0 ? "implicit" : "im2col + GEMM");
  if (!gemm_tuning_add_3xtf32(ex.tuning, key, chosen)) {
    note_error("GEMM tuning", "out of memory");
    return -1;
  }
  return chosen;
}

// One product as a batch of one.
BatchedGemmParams single(const GemmParams& p) {
  BatchedGemmParams bp;
  bp.gemm = p;
  bp.batch = 1;
  bp.stride_c = p.m * p.ldc;
  return bp;
}

cudaDataType_t type_16bit(Precision precision) {
  return precision == Precision::Fp16 ? CUDA_R_16F : CUDA_R_16BF;
}

}  // namespace

void batched_gemm_f32(const Exec& ex, const BatchedGemmParams& bp, const float* a, const float* b,
                      const float* bias, float* c) {
  gemm_impl(ex, bp, a, b, CUDA_R_32F, bias, c);
}

void batched_gemm_16bit_operands(const Exec& ex, const BatchedGemmParams& bp, const void* a, const void* b,
                                 const float* bias, float* c) {
  if (ex.precision != Precision::Fp16 && ex.precision != Precision::Bf16) {
    note_error("batched_gemm_16bit_operands", "16-bit operands need --precision fp16 or bf16");
    return;
  }
  gemm_impl(ex, bp, a, b, type_16bit(ex.precision), bias, c);
}

// The float32 operands of gemm_16bit and gemm_16bit_output rounded into scratch with their
// row strides kept (gemm_plan.h); a and b then point at the 16-bit operands.
void round_operands(const Exec& ex, const GemmParams& p, const void*& a, bool a_16bit, const void*& b,
                    bool b_16bit, void* scratch) {
  unsigned char* const bytes = static_cast<unsigned char*>(scratch);
  if (!a_16bit) {
    round_to_16bit(ex.stream, ex.precision, gemm_a_extent(p), static_cast<const float*>(a), bytes);
    a = bytes;
  }
  if (!b_16bit) {
    unsigned char* const at = bytes + gemm_16bit_b_offset(p, a_16bit);
    round_to_16bit(ex.stream, ex.precision, gemm_b_extent(p), static_cast<const float*>(b), at);
    b = at;
  }
}

void gemm_16bit(const Exec& ex, const GemmParams& p, const void* a, bool a_16bit, const void* b, bool b_16bit,
                const float* bias, float* c, void* scratch) {
  if (ex.precision != Precision::Fp16 && ex.precision != Precision::Bf16) {
    note_error("gemm_16bit", "16-bit operands need --precision fp16 or bf16");
    return;
  }
  round_operands(ex, p, a, a_16bit, b, b_16bit, scratch);
  gemm_impl(ex, single(p), a, b, type_16bit(ex.precision), bias, c);
}

void gemm_16bit_output(const Exec& ex, const GemmParams& p, const void* a, bool a_16bit, const void* b,
                       bool b_16bit, const void* bias, const void* residual, void* c, void* scratch) {
  if (ex.precision != Precision::Fp16 && ex.precision != Precision::Bf16) {
    note_error("gemm_16bit_output", "16-bit outputs need --precision fp16 or bf16");
    return;
  }
  const bool with_bias = p.bias_kind != BiasKind::None && bias;
  if (p.residual || (with_bias && (p.bias_kind != BiasKind::PerColumn || p.beta != 1.0f)) ||
      (has_clamp(p) && !is_relu(p))) {
    note_error("gemm_16bit_output",
               "an epilogue other than a bias per column, an activation, a residual and a relu");
    return;
  }
  if (p.m <= 0 || p.n <= 0) return;
  if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX) {
    note_error("gemm_16bit_output", "the product is too large for cuBLAS's 32-bit sizes");
    return;
  }
  if (!with_bias) bias = nullptr;
  // The part of the epilogue left to epilogue_16bit: all of it, or what cuBLASLt did not take.
  EpiloguePlan pass = everything(p, bias, residual);
  if (p.k == 0) {  // no product: C is the epilogue's terms alone
    cudaMemset2DAsync(c, static_cast<size_t>(p.ldc) * 2, 0, static_cast<size_t>(p.n) * 2,
                      static_cast<size_t>(p.m), ex.stream);
    check_launch("gemm_16bit_output (k = 0)");
  } else {
    round_operands(ex, p, a, a_16bit, b, b_16bit, scratch);
    const cudaDataType_t type = type_16bit(ex.precision);
    const BatchedGemmParams bp = single(p);
    const EpiloguePlan e = plan_epilogue(bp, bias, residual);
    // cuBLASLt's epilogue, where it takes the bias: before a GELU (the pass's), the sum is
    // rounded to the type once, as in torch's 16-bit models. Otherwise the product alone,
    // rounded to the type, then the whole epilogue in the pass.
    if (!e.pass_bias && !std::getenv("AOTC_CUDA_NO_LT") &&
        lt_gemm(ex, bp, e, a, b, type, type, bias, residual, c))
      pass = e;
    else
      plain_gemm(ex, bp, a, b, type, type, c);
  }
  if (pass.pass())
    epilogue_16bit(ex.stream, ex.precision, p.m, p.n, p.ldc, pass.pass_bias ? bias : nullptr,
                   pass.pass_activation ? p.activation : GemmActivation::None,
                   pass.pass_residual ? residual : nullptr, p.ldr,
                   pass.pass_clamp ? p.clamp_lo : -__builtin_inff(),
                   pass.pass_clamp ? p.clamp_hi : __builtin_inff(), c);
}

void gemm_f32(const Exec& ex, const GemmParams& p, const float* a, const float* b, const float* bias,
              float* c) {
  gemm_impl(ex, single(p), a, b, CUDA_R_32F, bias, c);
}

void gemm_weight_f32(const Exec& ex, const GemmParams& p, const float* a, const float* w, const float* bias,
                     float* c) {
  gemm_impl(ex, single(p), a, w, CUDA_R_32F, bias, c, true);
}

void conv_gemm_nhwc_f32(const Exec& ex, const GemmParams& p, const Conv2dParams& conv, const float* x,
                        const float* w, const float* bias, float* c, float* columns) {
  if (p.m <= 0 || p.n <= 0) return;
  const BatchedGemmParams bp = single(p);
  if (const int config = choose_implicit_conv(ex, bp, conv, x, w, bias, c, columns); config >= 0) {
    implicit_conv_nhwc(ex.stream, ex.precision, conv, p, x, w, bias, c, config, ex.workspace);
    return;
  }
  im2col_nhwc_f32(ex.stream, conv, false, p.k, x, columns);
  gemm_impl(ex, bp, columns, w, CUDA_R_32F, bias, c);
}

}  // namespace aotc::rt::cuda

// bias_clamp.cu - the epilogue of GEMMs and convolutions that cuBLAS computes: adds the
// bias (per row, per column or full; baddbmm's bias may differ per matrix) and a residual
// (transformer blocks: x + proj(...)), then clamps (fused relu / relu6 / hardtanh), in one
// pass over C; a linear layer's fused GELU (GemmParams::activation) comes after the bias.
//
// A thread takes kVec consecutive columns of one row; consecutive threads take consecutive
// runs, row after row, over every matrix, so blocks stay full however short the rows are (a
// convolution's row is its output plane: 49 positions at 7x7). One element per thread on a
// 2-d grid of (column blocks, rows) left most threads of a block idle on such rows and
// bounded this pass well below memory bandwidth (bench/results_gpu.md). Where rows are
// whole vectors, loads and stores are 16 bytes. A thread's row and matrix come from
// multiply-high divisions (fast_div.cuh), not from runtime integer divisions (one of them
// 64-bit): at 4 elements a thread their instruction sequences were a large part of the
// pass, beside the erf GELU of a linear layer's epilogue. The kernel is instantiated per
// activation: chosen at run time, both GELU formulas were computed for every element.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/fast_div.cuh>
#include <aotc/rt/cuda/pointwise.cuh>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

constexpr int kVec = 4;  // columns per thread

struct Epilogue {
  int m, n;
  FastDiv runs_per_row, rows_per_matrix;  // (m)
  int64_t ldc, stride_c;
  BiasKind kind;
  float beta;
  const float* bias;
  int64_t stride_bias;
  const float* residual;
  int64_t ldr, stride_residual;
  float lo, hi;
};

// Rows first_row.. of all batch * m rows; `runs` runs of kVec columns in this launch.
template <bool kVector, GemmActivation A>
__global__ void bias_clamp_kernel(Epilogue e, int64_t first_row, unsigned runs, float* __restrict__ c) {
  const unsigned thread = blockIdx.x * blockDim.x + threadIdx.x;
  if (thread >= runs) return;
  const unsigned row_in_launch = e.runs_per_row.div(thread);
  const int col0 = static_cast<int>(thread - row_in_launch * e.runs_per_row.divisor()) * kVec;
  const int64_t global_row = first_row + row_in_launch;
  const int64_t mat =
      global_row <= UINT32_MAX ? e.rows_per_matrix.div(static_cast<uint32_t>(global_row)) : global_row / e.m;
  const int row = static_cast<int>(global_row - mat * e.m);
  float* const at = c + mat * e.stride_c + row * e.ldc + col0;
  const float* const res =
      e.residual ? e.residual + mat * e.stride_residual + static_cast<int64_t>(row) * e.ldr + col0 : nullptr;
  const float* const bias = e.bias ? e.bias + mat * e.stride_bias : nullptr;
  float v[kVec];
  if constexpr (kVector) {
    const float4 x = *reinterpret_cast<const float4*>(at);
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = col0 + j < e.n ? at[j] : 0.0f;
  }
  float r[kVec] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (res) {
    if constexpr (kVector) {
      const float4 x = *reinterpret_cast<const float4*>(res);
      r[0] = x.x, r[1] = x.y, r[2] = x.z, r[3] = x.w;
    } else {
#pragma unroll
      for (int j = 0; j < kVec; ++j) r[j] = col0 + j < e.n ? res[j] : 0.0f;
    }
  }
  const float row_bias = e.kind == BiasKind::PerRow ? e.beta * bias[row] : 0.0f;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    if (!kVector && col0 + j >= e.n) break;
    float x = v[j] + row_bias;
    if (e.kind == BiasKind::PerColumn)
      x += e.beta * bias[col0 + j];
    else if (e.kind == BiasKind::Full)
      x += e.beta * bias[static_cast<int64_t>(row) * e.n + col0 + j];
    v[j] = clamp_apply(activation_apply<A>(x) + r[j], e.lo, e.hi);
  }
  if constexpr (kVector) {
    *reinterpret_cast<float4*>(at) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      if (col0 + j < e.n) at[j] = v[j];
  }
}

bool vector_aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

void bias_clamp_f32(cudaStream_t stream, int64_t batch, int64_t m, int64_t n, int64_t ldc, int64_t stride_c,
                    BiasKind kind, float beta, const float* bias, int64_t stride_bias,
                    GemmActivation activation, const float* residual, int64_t ldr, int64_t stride_residual,
                    float clamp_lo, float clamp_hi, float* c) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  if (!bias) kind = BiasKind::None;
  if (kind == BiasKind::None) bias = nullptr;
  if (m > INT32_MAX || n > (int64_t{1} << 30) || m * ldc > (int64_t{1} << 62) / 4) {
    note_error("bias_clamp", "the matrix is too large");
    return;
  }
  const int64_t runs_per_row = (n + kVec - 1) / kVec;
  Epilogue e{};
  e.m = static_cast<int>(m);
  e.n = static_cast<int>(n);
  e.runs_per_row = FastDiv(static_cast<uint32_t>(runs_per_row));
  e.rows_per_matrix = FastDiv(static_cast<uint32_t>(m));
  e.ldc = ldc;
  e.stride_c = stride_c;
  e.kind = kind;
  e.beta = beta;
  e.bias = bias;
  e.stride_bias = stride_bias;
  e.residual = residual;
  e.ldr = ldr;
  e.stride_residual = stride_residual;
  e.lo = clamp_lo;
  e.hi = clamp_hi;
  // 16-byte loads and stores where every row starts on a vector.
  const bool vector =
      n % kVec == 0 && ldc % kVec == 0 && (batch == 1 || stride_c % kVec == 0) && vector_aligned(c) &&
      (!residual ||
       (ldr % kVec == 0 && (batch == 1 || stride_residual % kVec == 0) && vector_aligned(residual)));
  // Thread indices are 32-bit: more rows than that go in slices.
  const int64_t rows = batch * m;
  const int64_t slice_rows = ((int64_t{1} << 31) - 1) / runs_per_row;
  for (int64_t first = 0; first < rows; first += slice_rows) {
    const int64_t runs = (rows - first < slice_rows ? rows - first : slice_rows) * runs_per_row;
    with_activation(activation, [&](auto a) {
      constexpr GemmActivation kActivation = decltype(a)::value;
      const auto launch =
          vector ? bias_clamp_kernel<true, kActivation> : bias_clamp_kernel<false, kActivation>;
      launch<<<blocks_for(runs), kThreads, 0, stream>>>(e, first, static_cast<unsigned>(runs), c);
    });
    check_launch("bias_clamp_kernel");
  }
}

}  // namespace aotc::rt::cuda

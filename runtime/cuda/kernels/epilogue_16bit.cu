// epilogue_16bit.cu - the epilogue of a GEMM that writes its result in the 16-bit type of
// --precision fp16 / bf16 (gemm_16bit_output), for the parts cuBLASLt could not take: adds
// the bias, applies the activation (a linear layer's GELU, which cuBLASLt has in its tanh
// form only; a 1x1 convolution's SiLU, which it lacks), adds the residual, then clamps, on the product
// already written in place. The bias and the residual are of that type too; float32 arithmetic, rounded once.
//
// A transformer MLP's up-projection runs it on every call (the GELU), so where the rows
// are whole groups of 8 and every array is 16-byte aligned a thread takes 8 consecutive
// elements with 16-byte loads and stores (two such runs where the row holds pairs);
// otherwise a thread per element. The kernels are instantiated per activation and find a
// thread's row by a multiply-high division (fast_div.cuh): with the activation chosen at run
// time, both GELU formulas were computed for every element, beside a 64-bit division per
// thread. The pass is bound by its instructions more than by its bytes, so the erf GELU
// takes gelu_erf_fast and the SiLU silu_fast (pointwise.cuh), whose errors are far below the
// 16-bit rounding after them.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/fast_div.cuh>
#include <aotc/rt/cuda/lowp.cuh>
#include <aotc/rt/cuda/pointwise.cuh>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

constexpr int kGroup = 8;

// W consecutive elements of a row, loaded and stored as one (16 bytes for a group of 8).
template <class T, int W>
struct alignas(sizeof(T) * W) Run {
  T v[W];
};

struct Epilogue {
  FastDiv runs_per_row;  // runs of W elements in a row
  int64_t ldc, ldr;
  float lo, hi;
};

// Rows first_row.. of C; `runs` runs of W elements in this launch, R runs a thread.
template <class T, GemmActivation A, int W, int R, bool Clamp>
__global__ void epilogue_16bit_kernel(Epilogue e, int64_t first_row, unsigned runs,
                                      const T* __restrict__ bias, const T* __restrict__ residual,
                                      T* __restrict__ c) {
  const unsigned thread = blockIdx.x * blockDim.x + threadIdx.x;
  if (thread * R >= runs) return;
  const unsigned row_in_launch = e.runs_per_row.div(thread * R);
  const int64_t col = static_cast<int64_t>(thread * R - row_in_launch * e.runs_per_row.divisor()) * W;
  const int64_t row = first_row + row_in_launch;
  auto* const at = reinterpret_cast<Run<T, W>*>(c + row * e.ldc + col);
  Run<T, W> v[R], b[R], r[R];
#pragma unroll
  for (int k = 0; k < R; ++k) v[k] = at[k];
#pragma unroll
  for (int k = 0; k < R; ++k) {
    b[k] = bias ? reinterpret_cast<const Run<T, W>*>(bias + col)[k] : Run<T, W>{};
    r[k] = residual ? reinterpret_cast<const Run<T, W>*>(residual + row * e.ldr + col)[k] : Run<T, W>{};
  }
#pragma unroll
  for (int k = 0; k < R; ++k)
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const float in = widen(v[k].v[j]) + (bias ? widen(b[k].v[j]) : 0.0f);
      const float x = A == GemmActivation::GeluErf ? gelu_erf_fast(in)
                      : A == GemmActivation::Silu  ? silu_fast(in)
                                                   : activation_apply<A>(in);
      const float sum = x + (residual ? widen(r[k].v[j]) : 0.0f);
      v[k].v[j] = round_to<T>(Clamp ? clamp_apply(sum, e.lo, e.hi) : sum);
    }
#pragma unroll
  for (int k = 0; k < R; ++k) at[k] = v[k];
}

bool aligned_16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <class T, int W>
void launch(cudaStream_t stream, int64_t m, int64_t n, Epilogue e, GemmActivation activation,
            const void* bias, const void* residual, void* c) {
  const int64_t runs_per_row = n / W;
  e.runs_per_row = FastDiv(static_cast<uint32_t>(runs_per_row));
  // Thread indices are 32-bit: more rows than that go in slices.
  const int64_t slice_rows = ((int64_t{1} << 31) - 1) / runs_per_row;
  with_activation(activation, [&](auto a) {
    for (int64_t first = 0; first < m; first += slice_rows) {
      const int64_t runs = (m - first < slice_rows ? m - first : slice_rows) * runs_per_row;
      // Two runs a thread where a row holds whole pairs: each thread then has both loads in
      // flight before its arithmetic, which keeps more of the memory system busy. The pass is
      // bound by its instructions, so the clamp is compiled in only where there is one.
      const auto go = [&](auto kernel, int r) {
        kernel<<<blocks_for(runs / r), kThreads, 0, stream>>>(
            e, first, static_cast<unsigned>(runs), static_cast<const T*>(bias),
            static_cast<const T*>(residual), static_cast<T*>(c));
      };
      constexpr GemmActivation act = decltype(a)::value;
      const bool clamp = e.lo > -__builtin_inff() || e.hi < __builtin_inff();
      if (runs_per_row % 2 == 0)
        clamp ? go(epilogue_16bit_kernel<T, act, W, 2, true>, 2)
              : go(epilogue_16bit_kernel<T, act, W, 2, false>, 2);
      else
        clamp ? go(epilogue_16bit_kernel<T, act, W, 1, true>, 1)
              : go(epilogue_16bit_kernel<T, act, W, 1, false>, 1);
      check_launch("epilogue_16bit_kernel");
    }
  });
}

template <class T>
void launch(cudaStream_t stream, int64_t m, int64_t n, const Epilogue& e, GemmActivation activation,
            const void* bias, const void* residual, void* c) {
  const bool grouped = n % kGroup == 0 && e.ldc % kGroup == 0 && aligned_16(c) &&
                       (!bias || aligned_16(bias)) &&
                       (!residual || (e.ldr % kGroup == 0 && aligned_16(residual)));
  if (grouped)
    launch<T, kGroup>(stream, m, n, e, activation, bias, residual, c);
  else
    launch<T, 1>(stream, m, n, e, activation, bias, residual, c);
}

}  // namespace

void epilogue_16bit(cudaStream_t stream, Precision precision, int64_t m, int64_t n, int64_t ldc,
                    const void* bias, GemmActivation activation, const void* residual, int64_t ldr,
                    float clamp_lo, float clamp_hi, void* c) {
  if (m <= 0 || n <= 0) return;
  if (n > INT32_MAX) {
    note_error("epilogue_16bit", "the matrix is too wide");
    return;
  }
  const Epilogue e{FastDiv{}, ldc, ldr, clamp_lo, clamp_hi};
  if (precision == Precision::Fp16)
    launch<__half>(stream, m, n, e, activation, bias, residual, c);
  else if (precision == Precision::Bf16)
    launch<__nv_bfloat16>(stream, m, n, e, activation, bias, residual, c);
  else
    note_error("epilogue_16bit", "16-bit outputs need --precision fp16 or bf16");
}

}  // namespace aotc::rt::cuda

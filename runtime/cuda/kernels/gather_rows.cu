// gather_rows.cu - rows of a dense tensor read in another order (RowGather), optionally
// plus a dense addend: the cyclic shift, window partition and their reverses of a Swin
// transformer's tokens, which the compiler finds as one row order in place of a chain of
// strided copies (compiler/passes/cuda/fuse_row_gathers.cpp), and the residual add that
// follows the reverse. A warp per output row, in 16-byte vectors where the row length and
// the pointers allow.
#include <aotc/rt/cuda/kernels_cuda.h>

namespace aotc::rt::cuda {
namespace {

constexpr int kRowsPerBlock = 8;

__device__ float4 add(float4 a, float4 b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }
__device__ float add(float a, float b) { return a + b; }

// V: float4 (cols a multiple of 4, 16-byte aligned pointers) or float; cols in V's.
template <typename V>
__global__ void __launch_bounds__(32 * kRowsPerBlock)
    gather_rows_kernel(int64_t rows, int64_t cols, RowGather g, const V* __restrict__ src,
                       const V* __restrict__ addend, V* __restrict__ out) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.y;
  if (row >= rows) return;
  const V* s = src + g.source_row(row) * cols;
  V* o = out + row * cols;
  if (addend) {
    const V* a = addend + row * cols;
    for (int64_t c = threadIdx.x; c < cols; c += 32) o[c] = add(s[c], a[c]);
  } else {
    for (int64_t c = threadIdx.x; c < cols; c += 32) o[c] = s[c];
  }
}

bool aligned_16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

}  // namespace

void gather_rows_f32(cudaStream_t stream, int64_t rows, int64_t cols, const RowGather& gather,
                     const float* src, const float* addend, float* out) {
  if (rows <= 0 || cols <= 0) return;
  if (!gather.index || !gather.fits(rows)) {
    note_error("gather_rows", "a row order whose period does not divide the rows");
    return;
  }
  const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  if (blocks > 0x7fffffff) {
    note_error("gather_rows", "more rows than a grid holds");
    return;
  }
  const dim3 threads(32, kRowsPerBlock);
  if (cols % 4 == 0 && aligned_16(src) && aligned_16(out) && (!addend || aligned_16(addend)))
    gather_rows_kernel<float4><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
        rows, cols / 4, gather, reinterpret_cast<const float4*>(src), reinterpret_cast<const float4*>(addend),
        reinterpret_cast<float4*>(out));
  else
    gather_rows_kernel<float>
        <<<static_cast<unsigned>(blocks), threads, 0, stream>>>(rows, cols, gather, src, addend, out);
  check_launch("gather_rows_kernel");
}

}  // namespace aotc::rt::cuda

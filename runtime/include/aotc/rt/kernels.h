// kernels.h - the CPU kernels that generated model code calls. Internal, not the C ABI.
//
// Conventions:
//   - Tensors are dense row-major (NCHW for images) unless strides are passed explicitly.
//   - Every kernel takes the context's ThreadPool first and never allocates: scratch
//     memory, when needed, comes from the arena; its size is given by *_scratch_bytes(),
//     which the compiler also calls when it plans memory (so the two cannot disagree).
//   - Kernel names say op and dtype: <op>_f32.
//   - "clamp_lo/clamp_hi" is a fused activation epilogue: relu is [0, inf), relu6 and
//     hardtanh are [lo, hi]; use -INFINITY/INFINITY for none.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aotc::rt {

class ThreadPool;

// ---------------------------------------------------------------- GEMM
enum class BiasKind : int32_t {
  None = 0,
  PerColumn = 1,  // bias[n], broadcast over rows (linear, addmm with 1-D bias)
  PerRow = 2,     // bias[m], broadcast over columns (convolution: one per output channel)
  Full = 3,       // bias[m * n], row-major m x n
};

struct GemmParams {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false;               // A is stored k x m (row-major) and used transposed
  bool trans_b = false;               // B is stored n x k (row-major) and used transposed
  int64_t lda = 0, ldb = 0, ldc = 0;  // leading dimensions (row strides) as stored
  float alpha = 1.0f;                 // C = alpha * op(A) op(B) + beta * bias, then clamp
  float beta = 1.0f;
  BiasKind bias_kind = BiasKind::None;
  float clamp_lo = -__builtin_inff();
  float clamp_hi = __builtin_inff();
};

// C (m x n, row stride ldc) = alpha * op(A) * op(B) + beta * bias, clamped.
void gemm_f32(ThreadPool& pool, const GemmParams& p, const float* a, const float* b, const float* bias,
              float* c);

// Batched C[i] = A[i] * B[i] for i < batch; a stride of 0 broadcasts that operand.
struct BatchedGemmParams {
  GemmParams gemm;  // per-matrix parameters (bias applies to every batch)
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between matrices
};
void batched_gemm_f32(ThreadPool& pool, const BatchedGemmParams& p, const float* a, const float* b,
                      const float* bias, float* c);

// ---------------------------------------------------------------- convolution
struct Conv2dParams {
  int64_t n = 1, c_in = 0, h_in = 0, w_in = 0;
  int64_t c_out = 0, h_out = 0, w_out = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;  // symmetric zero padding (top = bottom, left = right)
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  bool has_bias = false;
  float clamp_lo = -__builtin_inff();
  float clamp_hi = __builtin_inff();
};

// Scratch for the im2col buffer of one image and group (0 when the kernel needs none).
inline int64_t conv2d_scratch_bytes(const Conv2dParams& p) {
  const bool pointwise = p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 &&
                         p.pad_h == 0 && p.pad_w == 0;
  const bool depthwise = p.groups == p.c_in && p.groups == p.c_out && p.groups > 1;
  if (pointwise || depthwise) return 0;
  const int64_t rows = (p.c_in / p.groups) * p.kernel_h * p.kernel_w;
  return rows * p.h_out * p.w_out * static_cast<int64_t>(sizeof(float));
}

// x: n x c_in x h_in x w_in; w: c_out x (c_in/groups) x kernel_h x kernel_w;
// bias: c_out (when has_bias); y: n x c_out x h_out x w_out.
void conv2d_f32(ThreadPool& pool, const Conv2dParams& p, const float* x, const float* w, const float* bias,
                float* y, float* scratch);

// ---------------------------------------------------------------- pooling
struct Pool2dParams {
  int64_t n = 1, c = 0, h_in = 0, w_in = 0, h_out = 0, w_out = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;  // max pooling only
  bool count_include_pad = true;           // average pooling only
  int64_t divisor_override = 0;            // average pooling only; 0 means none
};
// Output sizes (ceil_mode included) are computed by the compiler, as torch does.
void max_pool2d_f32(ThreadPool& pool, const Pool2dParams& p, const float* x, float* y);
void avg_pool2d_f32(ThreadPool& pool, const Pool2dParams& p, const float* x, float* y);
// Adaptive average pooling: bins as torch computes them (floor start, ceil end).
void adaptive_avg_pool2d_f32(ThreadPool& pool, int64_t n, int64_t c, int64_t h_in, int64_t w_in,
                             int64_t h_out, int64_t w_out, const float* x, float* y);

// ---------------------------------------------------------------- pointwise
enum class UnaryOp : int32_t {
  Identity = 0,
  Relu = 1,
  Clamp = 2,      // min(max(x, a), b): relu6, hardtanh, clamp
  LeakyRelu = 3,  // x >= 0 ? x : a * x
  Sigmoid = 4,
  Tanh = 5,
  GeluErf = 6,       // 0.5 x (1 + erf(x / sqrt 2))
  GeluTanh = 7,      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  Silu = 8,          // x * sigmoid(x)
  Hardswish = 9,     // x * clamp(x + 3, 0, 6) / 6
  Hardsigmoid = 10,  // clamp(x + 3, 0, 6) / 6
};
void unary_f32(ThreadPool& pool, UnaryOp op, float a, float b, int64_t count, const float* x, float* y);

enum class BinaryOp : int32_t { Add = 0, Sub = 1, Mul = 2, Div = 3 };

// y = a OP (alpha * b) with broadcasting: out_dims has rank entries; strides are in
// elements per dimension of the output index space (0 where that input broadcasts).
struct BinaryParams {
  BinaryOp op = BinaryOp::Add;
  float alpha = 1.0f;  // scales b (torch's add/sub alpha); 1 for mul/div
  int32_t rank = 0;
  int64_t out_dims[8] = {};
  int64_t a_strides[8] = {};
  int64_t b_strides[8] = {};
};
void binary_f32(ThreadPool& pool, const BinaryParams& p, const float* a, const float* b, float* y);

// ---------------------------------------------------------------- data movement
// Copies a rank-dim index space of elem_size-byte elements between two strided views
// (strides in elements). Used for permute, transpose, expand, slicing and cat.
struct CopyParams {
  int32_t rank = 0;
  int64_t elem_size = 4;
  int64_t dims[8] = {};
  int64_t src_strides[8] = {};
  int64_t dst_strides[8] = {};
};
void copy_strided(ThreadPool& pool, const CopyParams& p, const void* src, void* dst);

// ---------------------------------------------------------------- normalisation
// y[n, c, s] = x[n, c, s] * scale[c] + shift[c] (batch norm in eval with folded stats),
// then clamped.
void channel_affine_f32(ThreadPool& pool, int64_t n, int64_t c, int64_t spatial, const float* scale,
                        const float* shift, float clamp_lo, float clamp_hi, const float* x, float* y);

// Softmax over the middle axis of an outer x axis x inner layout; log_softmax when
// log is true. Numerically stable (subtracts the maximum).
void softmax_f32(ThreadPool& pool, int64_t outer, int64_t axis, int64_t inner, bool log, const float* x,
                 float* y);

// ---------------------------------------------------------------- reductions
enum class ReduceOp : int32_t { Sum = 0, Mean = 1, Max = 2, Min = 3 };
// Reduces the dims where reduce_mask[d] is true; y has the kept dims in order (dense),
// whether or not the caller keeps size-1 dims in its shape.
struct ReduceParams {
  ReduceOp op = ReduceOp::Sum;
  int32_t rank = 0;
  int64_t dims[8] = {};
  bool reduce_mask[8] = {};
};
void reduce_f32(ThreadPool& pool, const ReduceParams& p, const float* x, float* y);

}  // namespace aotc::rt

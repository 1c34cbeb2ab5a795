// kernels_cuda.h - the CUDA kernels that generated model code (aotc --target cuda) calls,
// compiled once with the project (runtime/cuda/kernels/, one kernel per file). Internal,
// not the C ABI. They take the parameter structs of the CPU kernels (aotc/rt/kernels.h), so
// that both targets read an IR op's attributes the same way.
//
// Conventions:
//   - Every launcher enqueues on the stream it is given and returns at once; it never
//     allocates (scratch comes from the arena, sized by *_scratch_bytes below, which the
//     compiler plans with) and never synchronises: the run is captured as a CUDA graph.
//   - A failure (a launch or cuBLAS error) is recorded with note_error(); the runtime reads
//     it after the capture (first_error()) and fails the context's creation with it.
//   - Tensors are dense row-major (NCHW), float32; "clamp_lo/clamp_hi" is a fused
//     activation epilogue as on the CPU.
#pragma once

#include <aotc/rt/cuda/attention_plan.h>
#include <aotc/rt/cuda/conv2d_plan.h>
#include <aotc/rt/cuda/gemm_plan.h>
#include <aotc/rt/cuda/pool2d_plan.h>
#include <aotc/rt/cuda/precision.h>
#include <aotc/rt/kernels.h>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace aotc::rt::cuda {

// Where the launchers enqueue their work, and what the GEMMs use: one per context, fixed
// for its life (runtime/cuda/device_runtime.cpp).
struct GemmTuning;
struct Exec {
  cudaStream_t stream;
  cublasHandle_t blas;  // bound to stream, its math mode set from the precision
  cublasLtHandle_t lt;  // the GEMMs' library (cuBLAS only where cuBLASLt has no algorithm)
  void* workspace;      // cuBLAS's and cuBLASLt's (they run one after another on stream)
  size_t workspace_bytes;
  Precision precision;  // how the products may round (--precision)
  // The context's GEMM algorithms chosen by timing (null: cuBLASLt's first heuristic
  // choice). With `tune`, the run is not being captured and each GEMM shape not yet tuned
  // times its candidates on the stream first (the tuning run of context creation).
  GemmTuning* tuning = nullptr;
  bool tune = false;
};

// ---------------------------------------------------------------- GEMM tuning
// Per context: for each GEMM shape (sizes, strides, layouts, epilogue, types, alignments),
// the cuBLASLt algorithm that ran fastest among cuBLASLt's heuristic candidates and their
// split-K variants, timed in the tuning run before the capture (gemm_cublas.cu). With a
// device (>= 0), what any table of that device chose in this library's life is taken
// instead of timing again (gemm_tuning.cpp); -1: this table alone.
GemmTuning* gemm_tuning_create(int device = -1);
void gemm_tuning_destroy(GemmTuning* tuning);
// Shapes tuned and candidates timed so far (AOTC_CUDA_TRACE prints them).
void gemm_tuning_counts(const GemmTuning* tuning, int64_t* shapes, int64_t* candidates);

// ---------------------------------------------------------------- errors
// Records the first failure of this thread's launches ("what: reason"); first_error()
// returns it ("" when none) and forget_error() forgets it.
void note_error(const char* what, const char* reason);
const char* first_error();
void forget_error();
// Records the last launch's error, if any, under the kernel's name.
void check_launch(const char* kernel);

// Blocks of kThreads threads covering count elements.
constexpr int kThreads = 256;
inline unsigned blocks_for(int64_t count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

// ---------------------------------------------------------------- GEMM (cuBLAS)
// C = alpha * op(A) op(B) (row-major, as GemmParams says) + beta * bias, clamped, in
// exact float32, or on tensor cores as Exec::precision allows (tf32; fp16 and bf16 round
// the float32 operands inside cuBLAS). cuBLASLt fuses a bias per column, a residual and a
// relu into its epilogue; the rest (a bias per row, other clamps) is one pass
// (bias_clamp_f32) after the product. A batched product's residual (GemmParams::residual)
// has C's layout: matrix i's at residual + i * stride_c, rows ldr apart.
void gemm_f32(const Exec& ex, const GemmParams& p, const float* a, const float* b, const float* bias,
              float* c);
void batched_gemm_f32(const Exec& ex, const BatchedGemmParams& p, const float* a, const float* b,
                      const float* bias, float* c);
// gemm_f32 whose B (p.trans_b: n x k) is a weight: its contents are set before the context's
// tuning run and never change, so at fp32 the product may run on gemm_f16x2 over a split of
// it made once in the tuning run (gemm_cublas.cu, weight_split).
void gemm_weight_f32(const Exec& ex, const GemmParams& p, const float* a, const float* w, const float* bias,
                     float* c);
// batched_gemm_f32 with both operands already in the precision's 16-bit type (fp16, bf16):
// float32 accumulation and output (the GEMM convolutions, conv2d.cu).
void batched_gemm_16bit_operands(const Exec& ex, const BatchedGemmParams& p, const void* a, const void* b,
                                 const float* bias, float* c);
// gemm_f32 with 16-bit operands (--precision fp16 / bf16): an operand marked 16-bit is
// already of the precision's type (a weight converted at compile time), the other is
// float32 and rounded into scratch first (gemm_16bit_scratch_bytes, gemm_plan.h).
void gemm_16bit(const Exec& ex, const GemmParams& p, const void* a, bool a_16bit, const void* b, bool b_16bit,
                const float* bias, float* c, void* scratch);
// gemm_16bit writing C in the same 16-bit type (an activation that
// store_activations_16bit.cpp keeps in it for the GEMMs and unfoldings that read it):
// C = clamp(act(alpha * op(A) op(B) + bias) + residual), the bias (per column, p.beta 1)
// and the residual (rows p.ldr apart; p.residual unused) in that type too, the clamp none
// or a relu, the activation none or a GELU. cuBLASLt's epilogue takes what it can (all
// but a GELU, and a bias that is not 16-byte aligned); epilogue_16bit the rest.
void gemm_16bit_output(const Exec& ex, const GemmParams& p, const void* a, bool a_16bit, const void* b,
                       bool b_16bit, const void* bias, const void* residual, void* c, void* scratch);
// c[r * ldc + col] = clamp(act(c + bias[col] (if not null)) + residual[r * ldr + col] (if
// not null)) for r < m, col < n, every array in the 16-bit type of precision, float32
// arithmetic rounded once; in place.
void epilogue_16bit(cudaStream_t stream, Precision precision, int64_t m, int64_t n, int64_t ldc,
                    const void* bias, GemmActivation activation, const void* residual, int64_t ldr,
                    float clamp_lo, float clamp_hi, void* c);
// C = clamp(alpha * A B^T + beta * bias + residual), float32 operands (A m x k, B n x k, both
// row-major) multiplied on tf32 tensor cores with each operand split into two tf32 parts
// (gemm_3xtf32.cu): float32's accuracy, not tf32's. `config` (0 <= config <
// gemm_3xtf32_configs()) picks the tile and how many parts k is split into; a config runs
// only where gemm_3xtf32_supported says so, with gemm_3xtf32_workspace_bytes of workspace.
int gemm_3xtf32_configs();
bool gemm_3xtf32_supported(const GemmParams& p, const float* a, const float* b, int config);
size_t gemm_3xtf32_workspace_bytes(const GemmParams& p, int config);
void gemm_3xtf32(cudaStream_t stream, const GemmParams& p, const float* a, const float* b, const float* bias,
                 float* c, int config, void* workspace);
// gemm_3xtf32's product with fp16 parts (gemm_3xtf32.cu, "Two fp16 parts"): B (n x k, rows
// ldb apart, every value finite) split once by gemm_f16x2_split_b into split_b
// (gemm_f16x2_split_bytes, 16-byte aligned; *non_finite, a device int, set to 1 where B has
// an infinity or a NaN, and the split then unusable), A split per row and slice in the loop.
// p.ldb is B's, not the split's. Configs and workspace as gemm_3xtf32's.
size_t gemm_f16x2_split_bytes(int64_t n, int64_t k);
void gemm_f16x2_split_b(cudaStream_t stream, int64_t n, int64_t k, const float* b, int64_t ldb, void* split_b,
                        int* non_finite);
int gemm_f16x2_configs();
bool gemm_f16x2_supported(const GemmParams& p, const float* a, const void* split_b, int config);
size_t gemm_f16x2_workspace_bytes(const GemmParams& p, int config);
void gemm_f16x2(cudaStream_t stream, const GemmParams& p, const float* a, const void* split_b,
                const float* bias, float* c, int config, void* workspace);
// A convolution over an NHWC input as gemm_3xtf32's product with A gathered from the input
// as it goes (implicit GEMM, no unfolded columns): p is the product over the unfolded input
// (m = n * h_out * w_out rows, n = c_out, k = kernel_h * kernel_w * c_in, B = w as (c_out,
// kh, kw, c_in) rows ldb apart), x the input n x h_in x w_in x c_in, c the NHWC output. At
// precision fp32 the three products of gemm_3xtf32; at tf32 one tf32 product, w's values
// already tf32 numbers (the tensor cores truncate the rest). Needs groups == 1 and c_in a
// multiple of 32; as gemm_3xtf32 otherwise (configs, workspace).
int implicit_conv_nhwc_configs(Precision precision);
bool implicit_conv_nhwc_supported(const Conv2dParams& conv, const GemmParams& p, Precision precision,
                                  const float* x, const float* w, int config);
size_t implicit_conv_nhwc_workspace_bytes(const GemmParams& p, int config);
void implicit_conv_nhwc(cudaStream_t stream, Precision precision, const Conv2dParams& conv,
                        const GemmParams& p, const float* x, const float* w, const float* bias, float* c,
                        int config, void* workspace);
// The convolution that implicit_conv_nhwc describes, on the faster of implicit_conv_nhwc
// (its fastest config) and im2col_nhwc_f32 into `columns` (m x k floats) + gemm_f32, as
// timed per shape in the context's tuning run (gemm_cublas.cu); im2col + gemm_f32 without
// a tuning table and at fp16 / bf16. AOTC_CUDA_IMPLICIT_CONV=0 / =1 (read when the context
// is created) takes im2col + gemm_f32 / the implicit GEMM always.
void conv_gemm_nhwc_f32(const Exec& ex, const GemmParams& p, const Conv2dParams& conv, const float* x,
                        const float* w, const float* bias, float* c, float* columns);
// c[i * stride_c + r * ldc + col] = activation(c + beta * bias[i * stride_bias + ...] (by
// kind)) + residual[i * stride_residual + r * ldr + col] (if not null), then clamped to
// [lo, hi], for i < batch, r < m, col < n.
void bias_clamp_f32(cudaStream_t stream, int64_t batch, int64_t m, int64_t n, int64_t ldc, int64_t stride_c,
                    BiasKind kind, float beta, const float* bias, int64_t stride_bias,
                    GemmActivation activation, const float* residual, int64_t ldr, int64_t stride_residual,
                    float clamp_lo, float clamp_hi, float* c);

// ---------------------------------------------------------------- convolution
// residual (null, or y's shape): added before the clamp (a ResNet block's skip connection,
// fuse_conv_residual_cuda.cpp); GEMM paths only.
void conv2d_f32(const Exec& ex, const Conv2dParams& p, const float* x, const float* w, const float* bias,
                const float* residual, float* y, float* scratch);
// The Pointwise and Im2colGemm paths with 16-bit operands (--precision fp16 / bf16): w
// holds the weights in the 16-bit type; scratch: conv2d_scratch_bytes(p, path, true).
void conv2d_16bit(const Exec& ex, const Conv2dParams& p, const float* x, const void* w, const float* bias,
                  const float* residual, float* y, void* scratch);
// col[img][(c * kernel_h + kh) * kernel_w + kw][oh * w_out + ow], zero where the window
// reads padding (groups == 1); im2col_16bit writes the precision's 16-bit type.
void im2col_f32(cudaStream_t stream, const Conv2dParams& p, const float* x, float* col);
void im2col_16bit(cudaStream_t stream, const Conv2dParams& p, Precision precision, const float* x, void* col);
// y[i] = x[i] rounded to the 16-bit type of precision (fp16 or bf16), i < count.
void round_to_16bit(cudaStream_t stream, Precision precision, int64_t count, const float* x, void* y);
// Channels last (NHWC, compiler/passes/cuda/convert_to_channels_last.cpp): x is n x h_in x w_in x
// c_in (n x c_in x h_in x w_in when nchw); col[(img * h_out + oh) * w_out + ow][(kh *
// kernel_w + kw) * c_in + c], zero where the window reads padding (groups == 1); rows
// row_stride floats apart, zeros after the receptive field (a 3-channel stem's 147 taps
// padded to 148: aligned rows for cuBLAS).
void im2col_nhwc_f32(cudaStream_t stream, const Conv2dParams& p, bool nchw, int64_t row_stride,
                     const float* x, float* col);
// The same written in the 16-bit type of precision (fp16 or bf16), the GEMM's operand.
void im2col_nhwc_16bit(cudaStream_t stream, const Conv2dParams& p, Precision precision, bool nchw,
                       int64_t row_stride, const float* x, void* col);
// im2col_nhwc_16bit from an NHWC input already in that 16-bit type (an activation that
// store_activations_16bit.cpp keeps in it): the values are copied as they are.
void im2col_nhwc_16bit_input(cudaStream_t stream, const Conv2dParams& p, Precision precision,
                             int64_t row_stride, const void* x, void* col);
// The ImplicitGemm path (conv2d_plan.h) at precision tf32, fp16 or bf16: w holds the
// weights in that precision's type (float, __half, __nv_bfloat16); residual (null: none)
// has y's shape and is added before the clamp; scratch: conv2d_scratch_bytes(p,
// Conv2dPath::ImplicitGemm) bytes.
void implicit_gemm_conv2d(const Exec& ex, const Conv2dParams& p, Precision precision, const float* x,
                          const void* w, const float* bias, const float* residual, float* y, float* scratch);
// With input_epilogue, each input value x is read as clamp(x + in_bias[channel], in_lo,
// in_hi) (in_bias null: no bias): the epilogue of the convolution that wrote x, moved here
// (fold_depthwise_input.cpp; only where depthwise_input_epilogue_fits). in_activation Silu
// (depthwise_conv2d_nhwc only, with no bias and no clamp) reads x as silu(x) instead.
struct DepthwiseInputEpilogue {
  const float* in_bias = nullptr;
  float in_lo = -__builtin_inff(), in_hi = __builtin_inff();
  GemmActivation in_activation = GemmActivation::None;
};
void depthwise_conv2d_f32(cudaStream_t stream, const Conv2dParams& p, const float* x, const float* w,
                          const float* bias, float* y,
                          const DepthwiseInputEpilogue* input_epilogue = nullptr);
void direct_conv2d_f32(cudaStream_t stream, const Conv2dParams& p, const float* x, const float* w,
                       const float* bias, float* y);
// Depthwise on NHWC tensors (n x h x w x c), w as (kernel_h, kernel_w, c), bias and clamp
// fused (convert_to_channels_last.cpp); input_epilogue as for depthwise_conv2d_f32 (its
// in_bias: one value per channel).
void depthwise_conv2d_nhwc_f32(cudaStream_t stream, const Conv2dParams& p, const float* x, const float* w,
                               const float* bias, float* y,
                               const DepthwiseInputEpilogue* input_epilogue = nullptr);
// The same on tensors stored as io says: x and y both in float32 (Fp32) or both in the
// 16-bit type of Fp16 / Bf16 (store_activations_16bit.cpp), or with float_input x in
// float32 and y in that type (no input epilogue), the weights and the bias in
// float32, float32 arithmetic; io.activation (None or Silu, fuse_epilogue_silu.cpp) after the
// bias, before the clamp. 16-bit inputs take an upper bound alone or a SiLU as input epilogue.
// With pool (fuse_depthwise_pool.cpp), the function also writes there the mean of y over each
// image's plane, per channel (n x c, float32), as a global average pooling of y would;
// pool_scratch is depthwise_pool_scratch_bytes (conv2d_plan.h) of the arena.
struct DepthwiseNhwcIo {
  Precision storage = Precision::Fp32;
  bool float_input = false;  // x in float32, y in storage's 16-bit type
  GemmActivation activation = GemmActivation::None;
  float* pool = nullptr;
  float* pool_scratch = nullptr;
};
void depthwise_conv2d_nhwc(cudaStream_t stream, const Conv2dParams& p, const DepthwiseNhwcIo& io,
                           const void* x, const float* w, const float* bias, void* y,
                           const DepthwiseInputEpilogue* input_epilogue = nullptr);

// ---------------------------------------------------------------- pooling
void max_pool2d_f32(cudaStream_t stream, const Pool2dParams& p, const float* x, float* y);
void avg_pool2d_f32(cudaStream_t stream, const Pool2dParams& p, const float* x, float* y);
void adaptive_avg_pool2d_f32(cudaStream_t stream, int64_t n, int64_t c, int64_t h_in, int64_t w_in,
                             int64_t h_out, int64_t w_out, const float* x, float* y);
// The same on NHWC tensors (n x h x w x c), as torch computes them in NCHW.
void max_pool2d_nhwc_f32(cudaStream_t stream, const Pool2dParams& p, const float* x, float* y);
// With scratch of adaptive_avg_pool2d_nhwc_scratch_bytes (pool2d_plan.h; 0 for most
// shapes), global pooling of large planes runs in two steps that fill the GPU.
void adaptive_avg_pool2d_nhwc_f32(cudaStream_t stream, int64_t n, int64_t c, int64_t h_in, int64_t w_in,
                                  int64_t h_out, int64_t w_out, const float* x, float* y,
                                  float* scratch = nullptr);
// The same on an input stored in `storage`'s type: float32 (Fp32) or the 16-bit type of
// Fp16 / Bf16 (store_activations_16bit.cpp); float32 sums and output.
void adaptive_avg_pool2d_nhwc(cudaStream_t stream, Precision storage, int64_t n, int64_t c, int64_t h_in,
                              int64_t w_in, int64_t h_out, int64_t w_out, const void* x, float* y,
                              float* scratch);
// Global pooling's last step: y[i][ch] = the sum over k < chunks of partial[(i * chunks + k) *
// c + ch], divided by pixels, added in the same order every run.
void global_pool_sum(cudaStream_t stream, int64_t n, int64_t c, int64_t pixels, int64_t chunks,
                     const float* partial, float* y);

// ---------------------------------------------------------------- squeeze and excitation
// A squeeze-and-excitation block's gate from its pooled input x (n x c), in one launch
// (fuse_squeeze_excitation.cpp): h = clamp(act(w1 x + b1), lo, hi) (r values an image),
// s = gate(w2 h + b2) (n x c); w1 is r x c and w2t is w2 transposed, r x c, row-major; the
// biases may be null. Float32 throughout. act: None or Silu; gate: Sigmoid or Hardsigmoid;
// sizes as squeeze_excitation_fits (squeeze_excitation_plan.h) allows.
struct SqueezeExcitationParams {
  int64_t n = 0, c = 0, r = 0;
  GemmActivation act = GemmActivation::None;
  float lo = -__builtin_inff(), hi = __builtin_inff();
  UnaryOp gate = UnaryOp::Sigmoid;
};
void squeeze_excitation_gate(cudaStream_t stream, const SqueezeExcitationParams& p, const float* x,
                             const float* w1, const float* b1, const float* w2t, const float* b2, float* s);

// ---------------------------------------------------------------- data movement, normalisation
void copy_strided(cudaStream_t stream, const CopyParams& p, const void* src, void* dst);
void channel_affine_f32(cudaStream_t stream, int64_t n, int64_t c, int64_t spatial, const float* scale,
                        const float* shift, float clamp_lo, float clamp_hi, const float* x, float* y);
void softmax_f32(cudaStream_t stream, int64_t outer, int64_t axis, int64_t inner, bool log, const float* x,
                 float* y);
void reduce_f32(cudaStream_t stream, const ReduceParams& p, const float* x, float* y);
// Rows of a dense tensor read in another order: output row r reads source row
// (r / period) * src_period + index[r % period], each index in [0, src_period). A Swin
// transformer's cyclic shift and window partition are such a reordering of its tokens
// (compiler/passes/cuda/fuse_row_gathers.cpp). index null: row r reads row r.
struct RowGather {
  const int32_t* index = nullptr;
  int64_t period = 1, src_period = 1;
  // Whether the order fits `rows` output rows (its period divides them).
  bool fits(int64_t rows) const { return period > 0 && rows % period == 0; }
  // The source row that output row `row` reads (index not null; device code).
  __host__ __device__ int64_t source_row(int64_t row) const {
    const int64_t block = row / period;
    return block * src_period + index[row - block * period];
  }
};
// rows (p.rows, the output's) read through `gather` from x.
void layer_norm_f32(cudaStream_t stream, const LayerNormParams& p, const float* x, const float* gamma,
                    const float* beta, float* y, float* mean, float* rstd, const RowGather& gather = {});
// layer_norm_f32 writing y in the 16-bit type of precision (fp16, bf16), no statistics: the
// operand of the GEMMs that read it (store_activations_16bit.cpp).
void layer_norm_16bit(cudaStream_t stream, Precision precision, const LayerNormParams& p, const float* x,
                      const float* gamma, const float* beta, void* y, const RowGather& gather = {});
// The layer norm of rows x kept in the 16-bit type of precision (store_activations_16bit.cpp),
// widened as they are read; y float32, or in that type with y_16bit; no statistics.
void layer_norm_16bit_input(cudaStream_t stream, Precision precision, const LayerNormParams& p, const void* x,
                            const float* gamma, const float* beta, void* y, bool y_16bit,
                            const RowGather& gather = {});
// out (rows x cols) = the rows of src that `gather` picks, plus addend (rows x cols, dense;
// null for none): the gather and a residual add in one pass.
void gather_rows_f32(cudaStream_t stream, int64_t rows, int64_t cols, const RowGather& gather,
                     const float* src, const float* addend, float* out);
void embedding_f32(cudaStream_t stream, const EmbeddingParams& p, const void* ids, const float* weight,
                   float* y);
// embedding_bag_f32 as on the CPU (EmbeddingBagParams): a block per bag.
void embedding_bag_f32(cudaStream_t stream, const EmbeddingBagParams& p, const void* ids, const void* offsets,
                       const float* weight, const float* per_sample_weights, float* y);
// (IR "assemble") count elements set to one value of elem_size bytes.
void fill(cudaStream_t stream, const FillParams& p, void* dst);
// y = cond ? a : b with broadcasting, elements of elem_size bytes (1, 2, 4 or 8).
void where_select(cudaStream_t stream, const WhereParams& p, int64_t elem_size, const bool* cond,
                  const void* a, const void* b, void* y);

// ---------------------------------------------------------------- attention
// Scaled dot-product attention: two cuBLAS strided-batched GEMMs (Q K^T scaled, then P V)
// around a mask + softmax kernel; the scores (batch x heads x q_len x kv_len floats) live in
// the arena scratch that attention_scratch_bytes (attention_plan.h) sizes. mask: float or
// bool (one byte) as p.mask_kind says, null for None; probs: as p.weights says (null for
// None).
void attention_f32(const Exec& ex, const AttentionParams& p, const float* q, const float* k, const float* v,
                   const void* mask, float* out, float* probs, float* scratch);
// attention_f32 writing out in the 16-bit type of ex.precision (fp16, bf16), without weights
// (probs null): an output that store_activations_16bit.cpp keeps for the projection reading
// it. The one-launch kernels round as they store; the three launches write float32 into
// scratch after the scores (attention_scratch_bytes(p, true)) and round it through out's
// strides.
void attention_16bit_output(const Exec& ex, const AttentionParams& p, const float* q, const float* k,
                            const float* v, const void* mask, void* out, float* probs, float* scratch);
// Attention whose q, k and v are in the 16-bit type of --precision fp16 / bf16 (for a
// projection kept 16-bit; the compiler does not emit it yet), on 16-bit tensor cores
// (attention_mma_16bit_qkv); out float32, or 16-bit where out_16bit.
// Without weights. Sizes no kernel takes are an error (note_error), not a silent fallback.
void attention_16bit_qkv(const Exec& ex, const AttentionParams& p, const void* q, const void* k,
                         const void* v, const void* mask, void* out, bool out_16bit);
// The element type the one-launch kernels below store out in: float32, or the 16-bit type
// of attention_16bit_output (the kernels round as they store).
enum class AttentionOut { F32, F16, Bf16 };
// attention_f32 in one launch when no weights are asked for and a head's keys (or values)
// and a block of scores fit in shared memory (transformer encoders); false, nothing
// enqueued, otherwise. At most 64 keys take attention_short_tf32's kernel where ex.precision allows
// tf32 products and the grid is large enough (AOTC_CUDA_ATTENTION_TF32, below), else, on a
// grid of two blocks per multiprocessor or more, attention_short_f32's
// (AOTC_CUDA_ATTENTION_SHORT=0: never; =1: on any grid). Neither while
// AOTC_CUDA_ATTENTION_ROWS is set. AOTC_CUDA_ATTENTION_UNFUSED=1 always says false (for
// comparisons); AOTC_CUDA_ATTENTION_ROWS=8|16|20|24 forces the query rows per block where
// they fit (for the checks of bench/cuda/attention_fused_bench.cu).
bool attention_fused_f32(const Exec& ex, const AttentionParams& p, const float* q, const float* k,
                         const float* v, const void* mask, void* out,
                         AttentionOut out_type = AttentionOut::F32);
// The same for at most 64 keys (a Swin transformer's windows): a block per (batch, head)
// and up to 64 query rows; false, nothing enqueued, where it does not apply.
bool attention_short_f32(const Exec& ex, const AttentionParams& p, const float* q, const float* k,
                         const float* v, const void* mask, void* out,
                         AttentionOut out_type = AttentionOut::F32);
// The same on tf32 tensor cores where ex.precision is not Fp32 (tf32, fp16, bf16), on grids
// of a block per multiprocessor or more (AOTC_CUDA_ATTENTION_TF32=1: any grid; =0: never);
// false, nothing enqueued, where it does not apply.
bool attention_short_tf32(const Exec& ex, const AttentionParams& p, const float* q, const float* k,
                          const float* v, const void* mask, void* out,
                          AttentionOut out_type = AttentionOut::F32);
// Past 64 keys where ex.precision is fp16 or bf16 and blocks of 64 query rows fill the GPU:
// both products on 16-bit tensor cores (attention_mma_16bit.cu), for head sizes up to 128
// whose keys and values fit in shared memory; false, nothing enqueued, where it does not
// apply (AOTC_CUDA_ATTENTION_MMA=0: never; =G,S: any grid, G groups of 16 rows x S splits).
bool attention_mma_16bit(const Exec& ex, const AttentionParams& p, const float* q, const float* k,
                         const float* v, const void* mask, void* out,
                         AttentionOut out_type = AttentionOut::F32);
// The same kernel with q, k and v in the 16-bit type of ex.precision, for any grid (blocks
// of 16 query rows and up to four splits of the keys where 64-row blocks would not fill the
// GPU); false, nothing enqueued, where the sizes or the device's shared memory do not allow it.
bool attention_mma_16bit_qkv(const Exec& ex, const AttentionParams& p, const void* q, const void* k,
                             const void* v, const void* mask, void* out, AttentionOut out_type);

// ---------------------------------------------------------------- recurrent layers
// One direction's tensors of a recurrent layer, as the CPU's recurrent_f32 takes them (null
// h0 / c0: zeros; null h_n / c_n: not written).
struct RecurrentOperands {
  const float* gates_x = nullptr;
  const float* w_hh = nullptr;
  const float* b_hh = nullptr;
  const float* h0 = nullptr;
  const float* c0 = nullptr;
  float* y = nullptr;
  float* h_n = nullptr;
  float* c_n = nullptr;
};
// The time loop of an LSTM or GRU layer (recurrent.cu): `first` walks time as p.reverse
// says, `second` (w_hh null: none) the other way, both in the same launch per step, which
// computes h W_hh^T + b_hh and the gate math. scratch: the LSTM's c, 2 * batch * hidden
// floats (batch * hidden for one direction); the GRU's may be null. Exact float32 at every
// precision.
void recurrent_f32(const Exec& ex, const RecurrentParams& p, const RecurrentOperands& first,
                   const RecurrentOperands& second, float* scratch);

// ---------------------------------------------------------------- 3-d and transposed convolution
// As the CPU kernels (kernels/spatial.h); 1-d and 2-d transposed ones are 3-d with leading 1s.
// The columns go through scratch of conv3d_cuda_scratch_bytes / conv_transpose_cuda_scratch_bytes
// (conv_nd_plan.h), whole batch or in chunks. conv3d: vol2col + one GEMM per image-group (the
// groups or the images a strided batch), bias and clamp the GEMM's epilogue; 1x1x1 stride 1
// unpadded: the GEMM on the input; depthwise (groups == c_in): depthwise_conv3d_f32.
void conv3d_f32(const Exec& ex, const ConvNdParams& p, const float* x, const float* w, const float* bias,
                float* y, float* scratch);
// A stride-1 3x3x3 or 1x3x3 convolution (conv3d_winograd_applies) by Winograd with output
// tiles of `tile` (2 or 4) a dimension: u is the weight transformed by
// conv3d_winograd_weights with the same tile (the compiler does it), scratch
// conv3d_winograd_scratch_bytes (conv3d_winograd_plan.h); bias and clamp fused.
void conv3d_winograd_f32(const Exec& ex, const ConvNdParams& p, int64_t tile, const float* x, const float* u,
                         const float* bias, float* y, float* scratch);
// col[img][(c, kd, kh, kw)][j]: the input value tap (kd, kh, kw) of channel c reads for output
// position first_column + j (j < columns), zero in the padding; x starts at the first image.
void vol2col_f32(cudaStream_t stream, const ConvNdParams& p, int64_t images, int64_t first_column,
                 int64_t columns, const float* x, float* col);
// groups == c_in: one thread per output, window from the input, bias and clamp fused.
void depthwise_conv3d_f32(cudaStream_t stream, const ConvNdParams& p, const float* x, const float* w,
                          const float* bias, float* y);
// conv_transpose: per image-group col = W_g^T x_g (one GEMM, groups or images a strided batch),
// then col2vol_f32; depthwise (groups == c_in): depthwise_conv_transpose_f32.
void conv_transpose_f32(const Exec& ex, const ConvNdParams& p, const float* x, const float* w,
                        const float* bias, float* y, float* scratch);
// y[img][first_channel + c][o] = clamp(bias + the col entries that reach o, in tap order), for
// img < images, c < channels; col is [img][c][tap][input position], y starts at the first
// image. A gather: one thread per output, no atomics, the CPU's order of additions.
void col2vol_f32(cudaStream_t stream, const ConvNdParams& p, int64_t images, int64_t first_channel,
                 int64_t channels, const float* col, const float* bias, float* y);
// groups == c_in: one thread per output sums x * w over the taps that reach it (the CPU's
// products and order of additions), bias and clamp fused.
void depthwise_conv_transpose_f32(cudaStream_t stream, const ConvNdParams& p, const float* x, const float* w,
                                  const float* bias, float* y);

// ---------------------------------------------------------------- 3-d pooling, resampling, group norm
// Max and average pooling over N x C x D x H x W (1-d and 2-d forms with leading 1s), one
// thread per output, as the CPU kernels: indices (nullable) and values of the first maximum
// in window order or of the last NaN, bit for bit; averages summed in window order.
void max_pool3d_f32(cudaStream_t stream, const Pool3dParams& p, const float* x, float* y, int64_t* indices);
void avg_pool3d_f32(cudaStream_t stream, const Pool3dParams& p, const float* x, float* y);
// Adaptive pooling, bins as the CPU's; global average pooling (1x1x1) adds a plane in the
// CPU's 16 interleaved partial sums, so it too gives the CPU's bits.
void adaptive_avg_pool3d_f32(cudaStream_t stream, const AdaptivePoolParams& p, const float* x, float* y);
void adaptive_max_pool3d_f32(cudaStream_t stream, const AdaptivePoolParams& p, const float* x, float* y,
                             int64_t* indices);
// Max unpooling as max_unpool_f32 on the CPU (later duplicates win, indices outside
// [0, out_volume) skipped), deterministic: each output's winner is found with atomicMax.
// scratch: null (the winners are kept in y; in_volume < 2^32) or planes * out_volume * 8
// bytes.
void max_unpool_f32(cudaStream_t stream, int64_t planes, int64_t in_volume, int64_t out_volume,
                    const float* x, const int64_t* indices, float* y, void* scratch);
// Upsampling and grid sampling, one thread per output (grid sampling: per position, over
// channels): the CPU kernels' source-index formulas in the same float operations, so the
// nearest modes pick the CPU's cells bit for bit; the weighted sums in the CPU's order.
void upsample_f32(cudaStream_t stream, const UpsampleParams& p, const float* x, float* y);
void grid_sample_f32(cudaStream_t stream, const GridSampleParams& p, const float* x, const float* grid,
                     float* y);
// Group normalisation in float32, mean then centred squares (gamma / beta nullable, clamp):
// a group of up to kGroupNormChunk values is one block; larger ones split into chunks whose
// statistics meet in scratch (group_norm_scratch_bytes, group_norm_plan.h).
void group_norm_f32(cudaStream_t stream, const GroupNormParams& p, const float* x, const float* gamma,
                    const float* beta, float* y, float* scratch);

// ---------------------------------------------------------------- indexing, scans, arg reductions
// As the CPU kernels (data_movement.h, reductions.h): elements of 1, 2, 4 or 8 bytes; int64
// or int32 indices, wrapped when negative and clamped into range (never a read or write
// outside a tensor); ties keep the first index.
void gather(cudaStream_t stream, const GatherParams& p, const void* x, const void* index, void* y);
// indices: a host array of p.num_indices device pointers.
void index_gather(cudaStream_t stream, const IndexGatherParams& p, const void* x, const void* const* indices,
                  void* y);
// y = self (y_bytes, not copied when self is y), then src (device; null: value, elem_size
// host bytes passed in the launch) scattered into it, the last write in index order winning
// as on the CPU; scratch: scatter_scratch_bytes(p) (scatter_plan.h).
void scatter(cudaStream_t stream, const ScatterParams& p, const void* self, int64_t y_bytes, const void* src,
             const unsigned char* value, const void* index, void* y, void* scratch);
// The CPU's scatter_reduce, folding each element's contributions in the same order (the
// same bits); scratch: scatter_reduce_scratch_of(p.geometry).bytes (scatter_plan.h), null
// where that is 0.
void scatter_reduce(cudaStream_t stream, const ScatterReduceParams& p, const void* self, int64_t y_bytes,
                    const void* src, const void* index, void* y, void* scratch);
void tril_triu(cudaStream_t stream, const TriangleParams& p, const void* x, void* y);
// values may be null; NaN counts as the maximum (and the minimum) and the first NaN wins.
void arg_reduce(cudaStream_t stream, ElemType t, bool is_max, int64_t outer, int64_t axis, int64_t inner,
                const void* x, void* values, int64_t* indices);
// The CPU's sort_lines (topk, sort, argsort): the same total order, so the same values and
// indices; short lines ranked a block a line, longer ones sorted in chunks that merge in
// scratch: sort_lines_scratch_bytes (sort_plan.h) bytes, null where that is 0.
void sort_lines(cudaStream_t stream, ElemType t, bool descending, int64_t outer, int64_t axis, int64_t inner,
                int64_t k, const void* x, void* values, int64_t* indices, void* scratch);
// t: F32 (summed in the CPU's order, unless the axis is long and the lines few: a block
// scan) or I64 (wrapping).
void cumsum(cudaStream_t stream, ElemType t, int64_t outer, int64_t axis, int64_t inner, const void* x,
            void* y);
// The CPU's searchsorted (torch.searchsorted, torch.bucketize), a thread per value.
void searchsorted(cudaStream_t stream, ElemType t, bool right, int64_t lines, int64_t length, int64_t count,
                  bool shared, const void* sorted, const void* values, int64_t* y);
// The CPU's scan (cumprod, logcumsumexp, cummax, cummin) with its arithmetic: a thread per
// line, in double where the CPU's is.
void scan(cudaStream_t stream, ScanOp op, ElemType t, int64_t outer, int64_t axis, int64_t inner,
          const void* x, void* y, int64_t* indices);

// ---------------------------------------------------------------- integer pointwise and reductions
// reduce_f32 of int64 tensors (sum, max, min, prod; sums and products wrap), as the CPU's
// reduce_i64. (Integer unary and binary ops are generated per model: pointwise.cuh.)
void reduce_i64(cudaStream_t stream, const ReduceParams& p, const int64_t* x, int64_t* y);

}  // namespace aotc::rt::cuda

// names.h - the IR's op kinds, and the attributes that one part of the compiler sets and
// another reads (a pass sets them, a generator or a later pass reads them), as named
// constants: `op.kind == ir::kind::conv2d`, `op.has(ir::attr::winograd)`. A misspelt name
// fails to compile where a string literal would not. An op's own parameters (sizes,
// strides, its TorchScript arguments) stay string keys local to its op file.
#pragma once

namespace aotc::ir {

namespace kind {
// Every IR op kind: a generator is registered for it in compiler/ops/ (the CPU target) and
// where the CUDA target has one, in compiler/ops/cuda/.
inline constexpr char adaptive_avg_pool2d[] = "adaptive_avg_pool2d";
inline constexpr char adaptive_avg_pool3d[] = "adaptive_avg_pool3d";
inline constexpr char adaptive_max_pool3d[] = "adaptive_max_pool3d";
inline constexpr char arg_reduce[] = "arg_reduce";
inline constexpr char assemble[] = "assemble";
inline constexpr char attention[] = "attention";
inline constexpr char avg_pool2d[] = "avg_pool2d";
inline constexpr char avg_pool3d[] = "avg_pool3d";
inline constexpr char batched_gemm[] = "batched_gemm";
inline constexpr char binary[] = "binary";
inline constexpr char cast[] = "cast";
inline constexpr char channel_affine[] = "channel_affine";
inline constexpr char concat[] = "concat";
inline constexpr char conv2d[] = "conv2d";
inline constexpr char conv2d_expand_depthwise[] = "conv2d_expand_depthwise";
inline constexpr char conv3d[] = "conv3d";
inline constexpr char conv_transpose[] = "conv_transpose";
inline constexpr char copy[] = "copy";
inline constexpr char cumsum[] = "cumsum";
inline constexpr char depthwise_conv2d_nhwc[] =
    "depthwise_conv2d_nhwc";  // CUDA only (passes/cuda/convert_to_channels_last.cpp)
inline constexpr char dequantize[] = "dequantize";
inline constexpr char embedding[] = "embedding";
inline constexpr char embedding_bag[] = "embedding_bag";
inline constexpr char gather[] = "gather";
inline constexpr char gather_rows[] = "gather_rows";  // CUDA only (passes/cuda/fuse_row_gathers.cpp)
inline constexpr char gemm[] = "gemm";
inline constexpr char grid_sample[] = "grid_sample";
inline constexpr char group_norm[] = "group_norm";
inline constexpr char im2col_nhwc[] = "im2col_nhwc";  // CUDA only (passes/cuda/convert_to_channels_last.cpp)
inline constexpr char index_gather[] = "index_gather";
inline constexpr char layer_norm[] = "layer_norm";
inline constexpr char max_pool2d[] = "max_pool2d";
inline constexpr char max_pool3d[] = "max_pool3d";
inline constexpr char max_unpool[] = "max_unpool";
inline constexpr char qadaptive_avg_pool2d[] = "qadaptive_avg_pool2d";
inline constexpr char qadd[] = "qadd";
inline constexpr char qclamp[] = "qclamp";
inline constexpr char qconv2d[] = "qconv2d";
inline constexpr char qlayer_norm[] = "qlayer_norm";
inline constexpr char qlinear[] = "qlinear";
inline constexpr char qlinear_dynamic[] = "qlinear_dynamic";
inline constexpr char qlookup[] = "qlookup";
inline constexpr char qmax_pool2d[] = "qmax_pool2d";
inline constexpr char qmul[] = "qmul";
inline constexpr char quantize[] = "quantize";
inline constexpr char recurrent[] = "recurrent";
inline constexpr char reduce[] = "reduce";
inline constexpr char scan[] = "scan";
inline constexpr char searchsorted[] = "searchsorted";
inline constexpr char scatter[] = "scatter";
inline constexpr char scatter_reduce[] = "scatter_reduce";
inline constexpr char softmax[] = "softmax";
inline constexpr char sort[] = "sort";
inline constexpr char squeeze_excitation[] =
    "squeeze_excitation";  // CUDA only (passes/cuda/fuse_squeeze_excitation.cpp)
inline constexpr char tril_triu[] = "tril_triu";
inline constexpr char unary[] = "unary";
inline constexpr char upsample[] = "upsample";
inline constexpr char where[] = "where";
}  // namespace kind

namespace attr {
// Epilogues fused into an op (fuse_activation, fold_depthwise_input, fuse_expand_depthwise).
inline constexpr char clamp_lo[] = "clamp_lo";
inline constexpr char clamp_hi[] = "clamp_hi";
inline constexpr char activation[] = "activation";  // fuse_gemm_gelu
inline constexpr char input_clamp_lo[] = "input_clamp_lo";
inline constexpr char input_clamp_hi[] = "input_clamp_hi";
inline constexpr char input_activation[] = "input_activation";  // a GemmActivation
inline constexpr char expand_silu[] = "expand_silu";
inline constexpr char expand_clamp_lo[] = "expand_clamp_lo";
inline constexpr char expand_clamp_hi[] = "expand_clamp_hi";
inline constexpr char expand_c_in[] = "expand_c_in";
// The CPU target's kernel choices (select_winograd, select_pointwise_rows, prepack_gemm_weights).
inline constexpr char winograd[] = "winograd";
inline constexpr char pointwise_rows[] = "pointwise_rows";
inline constexpr char prepacked[] = "prepacked";
// An op writing its output through strides (write_attention_permuted).
inline constexpr char out_strides[] = "out_strides";
// The CUDA target's choices (passes/cuda/).
inline constexpr char cuda_path[] = "cuda_path";
inline constexpr char precision[] = "precision";
inline constexpr char weights_16bit[] = "weights_16bit";
inline constexpr char a_16bit[] = "a_16bit";
inline constexpr char b_16bit[] = "b_16bit";
// A GEMM writing its output in the 16-bit type (store_activations_16bit.cpp).
inline constexpr char c_16bit[] = "c_16bit";
inline constexpr char b_weight[] = "b_weight";
inline constexpr char conv_geometry[] = "conv_geometry";
inline constexpr char channels_last[] = "channels_last";
inline constexpr char nchw_input[] = "nchw_input";
}  // namespace attr

}  // namespace aotc::ir

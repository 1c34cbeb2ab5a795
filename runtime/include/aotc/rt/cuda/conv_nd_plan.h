// conv_nd_plan.h - how the CUDA 3-d and transposed convolutions (conv3d.cu,
// conv_transpose.cu) split their work and the arena scratch they need: shared by the
// runtime and the compiler, which plans the scratch (compiler/ops/cuda/conv3d_cuda.cpp,
// conv_transpose_cuda.cpp), so the two cannot disagree. No CUDA headers.
//
// The columns (conv3d: the unfolded input; conv_transpose: W^T x before col2vol) of the
// whole batch are computed at once where they fit in kConvNdScratchBudget bytes, else in
// chunks of whole images, else (one image's columns alone exceeding it) in chunks of output
// columns (conv3d) or of output channels (conv_transpose). The scratch is the smaller of
// the whole batch's columns and the budget, and a chunk never needs more than either: with
// named dims (sizes smaller at run time than planned) a run's chunks still fit the scratch
// planned for the largest shape.
#pragma once

#include <aotc/rt/kernels.h>

#include <cstdint>

namespace aotc::rt::cuda {

constexpr int64_t kConvNdScratchBudget = int64_t{256} << 20;

// Depthwise (one input channel per group, any number of outputs per group): a direct
// kernel, no columns, no scratch.
inline bool conv_nd_is_depthwise(const ConvNdParams& p) { return p.groups > 1 && p.c_in == p.groups; }

// The pieces of a product done at once: `images` consecutive images; for conv3d `columns`
// consecutive output positions (all of them unless images == 1), for conv_transpose
// `channels` consecutive output channels of one group (c_out / groups: all of every group).
struct ConvNdChunks {
  int64_t images = 0;
  int64_t columns = 0;   // conv3d
  int64_t channels = 0;  // conv_transpose
};

// `count` units split into as few chunks of at most `most` as possible, of equal size
// (rounded up to a multiple of `multiple` where that stays within `most`).
inline int64_t conv_nd_even_chunk(int64_t count, int64_t most, int64_t multiple) {
  if (most >= count) return count;
  if (most < 1) return 0;
  const int64_t pieces = (count + most - 1) / most;
  const int64_t chunk = (count + pieces - 1) / pieces;
  const int64_t rounded = (chunk + multiple - 1) / multiple * multiple;
  return rounded <= most ? rounded : chunk;
}

// ---------------------------------------------------------------- conv3d
// Pointwise (1x1x1, stride 1, no padding): the GEMMs read the input itself.
inline bool conv3d_cuda_is_pointwise(const ConvNdParams& p) {
  for (int d = 0; d < 3; ++d)
    if (p.kernel[d] != 1 || p.stride[d] != 1 || p.pad[d] != 0) return false;
  return true;
}
// Rows of one image's columns (every group's): c_in x kernel volume.
inline int64_t conv3d_column_rows(const ConvNdParams& p) { return p.c_in * conv_nd_volume(p.kernel); }
inline int64_t conv3d_cuda_scratch_bytes(const ConvNdParams& p) {
  if (conv_nd_is_depthwise(p) || conv3d_cuda_is_pointwise(p) || p.n <= 0) return 0;
  const int64_t bytes = p.n * conv3d_column_rows(p) * conv_nd_volume(p.out) * int64_t{4};
  return bytes < kConvNdScratchBudget ? bytes : kConvNdScratchBudget;
}
// images == 0: even one output column of one image is beyond the budget.
inline ConvNdChunks conv3d_chunks(const ConvNdParams& p) {
  ConvNdChunks c;
  const int64_t column_bytes = conv3d_column_rows(p) * int64_t{4};
  const int64_t volume = conv_nd_volume(p.out);
  if (column_bytes <= 0 || volume <= 0 || p.n <= 0) return c;
  const int64_t image_bytes = column_bytes * volume;
  if (image_bytes <= kConvNdScratchBudget) {
    c.images = conv_nd_even_chunk(p.n, kConvNdScratchBudget / image_bytes, 1);
    c.columns = volume;
  } else {
    // Multiples of 32 columns keep the GEMM's rows 128-byte aligned.
    c.columns = conv_nd_even_chunk(volume, kConvNdScratchBudget / column_bytes, 32);
    c.images = c.columns > 0 ? 1 : 0;
  }
  return c;
}

// ---------------------------------------------------------------- conv_transpose
// One output channel's columns in one image: kernel volume x input volume.
inline int64_t conv_transpose_channel_bytes(const ConvNdParams& p) {
  return conv_nd_volume(p.kernel) * conv_nd_volume(p.in) * int64_t{4};
}
inline int64_t conv_transpose_cuda_scratch_bytes(const ConvNdParams& p) {
  if (conv_nd_is_depthwise(p) || p.n <= 0) return 0;
  const int64_t bytes = p.n * p.c_out * conv_transpose_channel_bytes(p);
  return bytes < kConvNdScratchBudget ? bytes : kConvNdScratchBudget;
}
// images == 0: even one output channel of one image is beyond the budget.
inline ConvNdChunks conv_transpose_chunks(const ConvNdParams& p) {
  ConvNdChunks c;
  const int64_t channel_bytes = conv_transpose_channel_bytes(p);
  if (channel_bytes <= 0 || p.c_out <= 0 || p.groups <= 0 || p.n <= 0) return c;
  const int64_t image_bytes = channel_bytes * p.c_out;
  if (image_bytes <= kConvNdScratchBudget) {
    c.images = conv_nd_even_chunk(p.n, kConvNdScratchBudget / image_bytes, 1);
    c.channels = p.c_out / p.groups;
  } else {
    c.channels = conv_nd_even_chunk(p.c_out / p.groups, kConvNdScratchBudget / channel_bytes, 1);
    c.images = c.channels > 0 ? 1 : 0;
  }
  return c;
}

}  // namespace aotc::rt::cuda

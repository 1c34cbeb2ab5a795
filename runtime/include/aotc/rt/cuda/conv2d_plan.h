// conv2d_plan.h - which path the CUDA convolution takes and the arena scratch it needs:
// shared by the runtime (runtime/cuda/kernels/conv2d.cu) and the compiler, which plans the
// scratch (compiler/ops/cuda/conv2d_cuda.cpp), so the two cannot disagree. No CUDA headers.
#pragma once

#include <aotc/rt/kernels.h>

#include <cstdint>

namespace aotc::rt::cuda {

// The paths of conv2d_f32: a 1x1, stride-1, unpadded convolution is a GEMM on the input
// itself; other ungrouped ones unfold the input (im2col) into scratch, then one GEMM per
// image; depthwise and grouped ones are direct kernels with the epilogue fused.
enum class Conv2dPath : int32_t { Pointwise = 0, Im2colGemm = 1, Depthwise = 2, Direct = 3 };
inline Conv2dPath conv2d_path(const Conv2dParams& p) {
  if (p.groups == p.c_in && p.groups == p.c_out && p.groups > 1) return Conv2dPath::Depthwise;
  if (p.groups != 1) return Conv2dPath::Direct;
  if (p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 &&
      p.pad_w == 0)
    return Conv2dPath::Pointwise;
  return Conv2dPath::Im2colGemm;
}
// Arena scratch of conv2d_f32: the unfolded input of every image for the im2col path.
inline int64_t conv2d_scratch_bytes(const Conv2dParams& p) {
  if (conv2d_path(p) != Conv2dPath::Im2colGemm) return 0;
  return p.n * p.c_in * p.kernel_h * p.kernel_w * p.h_out * p.w_out * static_cast<int64_t>(sizeof(float));
}
}  // namespace aotc::rt::cuda

// kernels.h - the CPU kernels that generated model code calls. Internal, not the C ABI.
// This header includes them all: each family's parameters, kernels and the rules that choose
// between them are in kernels/<family>.h, and what the compiler and the runtime must agree
// on (packed weight layouts, blockings, scratch sizes) is in kernels/layouts.h.
//
// Conventions:
//   - Tensors are dense row-major (NCHW for images) unless strides are passed explicitly.
//   - Every kernel takes the context's ThreadPool first and never allocates: scratch
//     memory, when needed, comes from the arena; its size is given by *_scratch_bytes(),
//     which the compiler also calls when it plans memory (so the two cannot disagree).
//     Scratch that each thread needs for itself (GEMM packing) comes from the pool
//     (ThreadPool::thread_scratch), sized by *_thread_scratch_bytes() the same way.
//   - Kernel names are <op>_<type> (conv2d_f32, reduce_i64), or <op> if the dtype is an argument (cast).
//   - "clamp_lo/clamp_hi" is a fused activation epilogue: relu is [0, inf), relu6 and
//     hardtanh are [lo, hi]; use -INFINITY/INFINITY for none.
#pragma once

#include <aotc/rt/kernels/conv.h>
#include <aotc/rt/kernels/data_movement.h>
#include <aotc/rt/kernels/gemm.h>
#include <aotc/rt/kernels/layouts.h>
#include <aotc/rt/kernels/normalization.h>
#include <aotc/rt/kernels/pointwise.h>
#include <aotc/rt/kernels/pooling.h>
#include <aotc/rt/kernels/quantized.h>
#include <aotc/rt/kernels/reductions.h>
#include <aotc/rt/kernels/sequence.h>
#include <aotc/rt/kernels/spatial.h>

#include <cstddef>
#include <cstdint>

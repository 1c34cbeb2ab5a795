// kernels/reductions.h - the reductions along dims or an axis: sum, mean, max, min, prod,
// argmax, cumsum and the other scans; and sorting along an axis.
#pragma once

#include <aotc/rt/kernels/pointwise.h>

#include <cstdint>

namespace aotc::rt {

class ThreadPool;

// ---------------------------------------------------------------- reductions
enum class ReduceOp : int32_t { Sum = 0, Mean = 1, Max = 2, Min = 3, Prod = 4 };
// Reduces the dims where reduce_mask[d] is true; y has the kept dims in order (dense),
// whether or not the caller keeps size-1 dims in its shape.
struct ReduceParams {
  ReduceOp op = ReduceOp::Sum;
  int32_t rank = 0;
  int64_t dims[8] = {};
  bool reduce_mask[8] = {};
};
void reduce_f32(ThreadPool& pool, const ReduceParams& p, const float* x, float* y);

// reduce_f32 for int64 tensors (Sum, Max, Min, Prod; Mean is float only).
void reduce_i64(ThreadPool& pool, const ReduceParams& p, const int64_t* x, int64_t* y);

// max/min over the middle axis of outer x axis x inner: values (may be null) and the
// int64 index of the first maximum (NaN counts as the maximum, as in torch).
void arg_reduce(ThreadPool& pool, ElemType t, bool is_max, int64_t outer, int64_t axis, int64_t inner,
                const void* x, void* values, int64_t* indices);

// The first k values of each line along the middle axis of outer x axis x inner in sorted
// order (descending or ascending; a NaN larger than every number; equal values in index
// order, as torch's stable sort), y being outer x k x inner: values (may be null) and their
// int64 indices along the axis (topk, sort, argsort).
void sort_lines(ThreadPool& pool, ElemType t, bool descending, int64_t outer, int64_t axis, int64_t inner,
                int64_t k, const void* x, void* values, int64_t* indices);

// Inclusive prefix sum along the middle axis of outer x axis x inner; t is F32 or I64.
void cumsum(ThreadPool& pool, ElemType t, int64_t outer, int64_t axis, int64_t inner, const void* x, void* y);

// The inclusive scans besides cumsum, along the middle axis of outer x axis x inner, with
// torch's CPU arithmetic (scan.cpp): Prod (F32, in double then rounded, as torch's CPU
// cumprod; I64 wrapping), LogAddExp (F32, in double: logcumsumexp), Max and Min (F32 or I64:
// cummax / cummin, with the int64 index of the value kept in `indices`; an equal value
// takes its later index, a NaN is kept once met). `indices` is null for Prod and LogAddExp.
enum class ScanOp : int32_t { Prod = 0, LogAddExp = 1, Max = 2, Min = 3 };
void scan(ThreadPool& pool, ScanOp op, ElemType t, int64_t outer, int64_t axis, int64_t inner, const void* x,
          void* y, int64_t* indices);

// y[i] (int64) = the position of values[i] among the sorted boundaries of its line (torch's
// searchsorted: the first boundary >= the value, > with right; past the end for NaN):
// lines x count values, boundaries lines x length, or one row of length for all (shared).
// t is F32 or I64.
void searchsorted(ThreadPool& pool, ElemType t, bool right, int64_t lines, int64_t length, int64_t count,
                  bool shared, const void* sorted, const void* values, int64_t* y);

}  // namespace aotc::rt

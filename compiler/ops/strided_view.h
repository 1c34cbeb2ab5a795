// strided_view.h - torch views that are not contiguous (a slice with a step, select,
// transpose, expand, flip, ...) described as (base value, element offset, sizes, element
// strides) over a dense IR value.
//
// Every IR value is dense, so every consumer reads a plain row-major buffer. A view op
// computes its StridedView and materialises it: as a dense alias when the view happens to
// be contiguous (x[2:5], x.unsqueeze(1)), else as an IR "copy" (copy_strided) into a new
// dense value. Views of views compose: the view of a value that an earlier view
// materialised reads that copy's source directly, so x.transpose(0, 1)[1:, ::2] is one
// copy, and the intermediate copy disappears when nothing else reads it
// (eliminate_dead_ops). Composition is sound because IR values are never mutated after the
// op that produces them.
#pragma once

#include "op_helpers.h"

namespace aotc::ops {

struct StridedView {
  int base = -1;                 // the IR value whose elements the view reads
  int64_t offset = 0;            // elements from base's first element
  ir::Shape sizes;               // the view's shape
  std::vector<int64_t> strides;  // elements; 0 repeats (expand), negative walks back (flip)

  int64_t rank() const { return static_cast<int64_t>(sizes.size()); }
};

// How value id can be read: through the copy that materialised it when it is a view of
// another value (or an alias of such a view with the same shape), else densely.
StridedView view_of(const ir::Graph& graph, int id);

// Whether the view reads its base's elements in row-major order from its offset (size-1
// dims aside): materialize() then makes an alias instead of a copy.
bool is_contiguous(const StridedView& view);

// A dense IR value holding the view's elements, marked as a torch view of `viewed` (the
// op's input, for the frontend's in-place checks; -1 for none). An alias when the view is
// contiguous, else the output of an IR "copy".
int materialize(LowerContext& ctx, const StridedView& view, int viewed);

// The transforms (dims already normalised and checked by the caller).
StridedView permute_view(const StridedView& v, const std::vector<int64_t>& order);
// Elements start, start + step, ... (count of them) along dim.
StridedView slice_view(const StridedView& v, int64_t dim, int64_t start, int64_t count, int64_t step);
StridedView select_view(const StridedView& v, int64_t dim, int64_t index);
StridedView unsqueeze_view(const StridedView& v, int64_t dim);
// Reverses dim.
StridedView flip_view(const StridedView& v, int64_t dim);
// Broadcasts to `sizes` (same rank or more; size-1 dims repeat with stride 0).
StridedView expand_view(const StridedView& v, const ir::Shape& sizes);

// torch's slice bounds: start/end clamped into [0, size] after adding size to negatives.
// Returns the element count of the slice (0 when end <= start).
int64_t clamp_slice(int64_t size, int64_t& start, int64_t end, int64_t step);

// The result of one view op on the node's tensor argument 0: view_of, transform,
// materialise, and set output 0.
void set_view_output(LowerContext& ctx, const StridedView& view);

}  // namespace aotc::ops

// F.pad: aten::pad (constant, reflect, replicate, circular), constant_pad_nd,
// reflection_pad{1,2,3}d, replication_pad{1,2,3}d, _pad_circular, _pad_enum -> IR "assemble"
// (assemble.h). Constant: fill, then the input (cropped where a pad is negative) into the
// middle. Other modes: the input into the middle, then per padded dim two pieces copied
// from what the output already holds (mirrored with stride -1, repeated with stride 0, or
// wrapped), so that corners come out right with one copy_strided per piece.
#include "assemble.h"

namespace aotc::ops {
namespace {

enum class Mode { Constant, Reflect, Replicate, Circular };

// pad lists the last dim first: (last_lo, last_hi, second_to_last_lo, ...).
void pad(LowerContext& ctx, const std::vector<int64_t>& pads, Mode mode, const Operand& value) {
  const ir::Value& x = ctx.value(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (pads.size() % 2) ctx.fail("the padding length must be even, got " + ir::shape_str(pads));
  const int64_t k = static_cast<int64_t>(pads.size()) / 2;
  if (k > rank)
    ctx.fail("padding " + ir::shape_str(pads) + " has more dims than the input " + ir::shape_str(x.shape));
  if (mode != Mode::Constant && (rank < k + 1 || k > 3))
    ctx.fail("non-constant padding of " + std::to_string(k) + " dims needs a " + std::to_string(k + 1) +
             "-d or " + std::to_string(k + 2) + "-d input (1 to 3 padded dims), got shape " +
             ir::shape_str(x.shape));
  std::vector<int64_t> lo(static_cast<size_t>(rank), 0), hi(static_cast<size_t>(rank), 0);
  Assembly a;
  a.dtype = x.dtype;
  a.shape = x.shape;
  for (int64_t i = 0; i < k; ++i) {
    const size_t d = static_cast<size_t>(rank - 1 - i);
    lo[d] = pads[static_cast<size_t>(2 * i)];
    hi[d] = pads[static_cast<size_t>(2 * i + 1)];
    const int64_t size = x.shape[d];
    a.shape[d] = size + lo[d] + hi[d];
    if (a.shape[d] < 0)
      ctx.fail("padding " + ir::shape_str(pads) + " gives a negative size for input " +
               ir::shape_str(x.shape));
    if (mode == Mode::Constant) continue;
    if (lo[d] < 0 || hi[d] < 0) ctx.fail("negative padding is only supported in constant mode");
    if (mode == Mode::Reflect && (lo[d] >= size || hi[d] >= size))
      ctx.fail("reflect padding " + ir::shape_str(pads) + " must be smaller than the input's size " +
               std::to_string(size) + " at dim " + std::to_string(d));
    if (mode == Mode::Circular && (lo[d] > size || hi[d] > size))
      ctx.fail("circular padding " + ir::shape_str(pads) + " must not exceed the input's size " +
               std::to_string(size) + " at dim " + std::to_string(d));
    if (mode == Mode::Replicate && size == 0 && (lo[d] || hi[d]))
      ctx.fail("cannot replicate-pad an empty dimension");
  }
  if (mode == Mode::Constant)
    a.fill = scalar_bytes(ctx, x.dtype, value.is_none() ? Operand::of_int(0) : value);
  // The input, cropped by negative pads, into the middle.
  StridedView middle = view_of(ctx.graph, ctx.tensor(0));
  std::vector<int64_t> starts(static_cast<size_t>(rank), 0);
  for (int64_t d = 0; d < rank; ++d) {
    const size_t u = static_cast<size_t>(d);
    const int64_t skip = lo[u] < 0 ? -lo[u] : 0;
    const int64_t count = std::max<int64_t>(0, x.shape[u] - skip - (hi[u] < 0 ? -hi[u] : 0));
    middle = slice_view(middle, d, skip, count, 1);
    starts[u] = lo[u] > 0 ? lo[u] : 0;
  }
  a.pieces.push_back(region_piece(middle, a.shape, starts));
  if (mode != Mode::Constant) {
    const StridedView out{kOutput, 0, a.shape, dense_strides(a.shape)};
    // Dims already padded span the whole output; the others only the middle.
    StridedView region = out;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t d = rank - 1 - i;
      region = slice_view(region, d, lo[static_cast<size_t>(d)], x.shape[static_cast<size_t>(d)], 1);
    }
    for (int64_t i = 0; i < k; ++i) {
      const int64_t d = rank - 1 - i;
      const size_t u = static_cast<size_t>(d);
      const int64_t size = x.shape[u], l = lo[u], h = hi[u];
      // The full region view along d again (it was narrowed to the middle above).
      StridedView full = region;
      full.offset -= l * full.strides[u];
      full.sizes[u] = a.shape[u];
      auto add = [&](int64_t dst_start, int64_t count, int64_t src_start, int64_t step) {
        const StridedView dst = slice_view(full, d, dst_start, count, 1);
        a.pieces.push_back({slice_view(full, d, src_start, count, step), dst.offset, dst.strides});
      };
      switch (mode) {
        case Mode::Reflect:  // out[l - 1 - j] = out[l + 1 + j]; out[l + size + j] = out[l + size - 2 - j]
          add(0, l, 2 * l, -1);
          add(l + size, h, l + size - 2, -1);
          break;
        case Mode::Replicate:  // the edge element, repeated
          add(0, l, l, 0);
          add(l + size, h, l + size - 1, 0);
          break;
        case Mode::Circular:  // the other end, wrapped around
          add(0, l, size, 1);
          add(l + size, h, l, 1);
          break;
        case Mode::Constant:
          break;
      }
      region = full;  // later dims copy across the whole of this one
    }
  }
  ctx.set_tensor_output(0, add_assembly(ctx, a));
}

Mode mode_named(const LowerContext& ctx, const std::string& name) {
  if (name == "constant") return Mode::Constant;
  if (name == "reflect") return Mode::Reflect;
  if (name == "replicate") return Mode::Replicate;
  if (name == "circular") return Mode::Circular;
  ctx.fail("unknown padding mode '" + name + "'");
}

// pad(input, pad, mode="constant", value=None)
void lower_pad(LowerContext& ctx) {
  const Mode mode = ctx.num_inputs() > 2 && !ctx.is_none(2) ? mode_named(ctx, ctx.arg(2).s) : Mode::Constant;
  const Operand value = ctx.num_inputs() > 3 ? ctx.arg(3) : Operand::none();
  if (mode != Mode::Constant && !value.is_none() && value.is_number() && ctx.double_arg(3) != 0.0)
    ctx.fail("padding mode '" + ctx.arg(2).s + "' does not take a value");
  pad(ctx, ctx.ints_arg(1), mode, value);
}

// _pad_enum(input, pad, mode, value): mode 0 constant, 1 reflect, 2 replicate, 3 circular.
void lower_pad_enum(LowerContext& ctx) {
  const int64_t m = ctx.int_arg(2);
  if (m < 0 || m > 3) ctx.fail("unknown padding mode " + std::to_string(m));
  pad(ctx, ctx.ints_arg(1), static_cast<Mode>(m), ctx.num_inputs() > 3 ? ctx.arg(3) : Operand::none());
}

void lower_constant_pad_nd(LowerContext& ctx) {
  pad(ctx, ctx.ints_arg(1), Mode::Constant, ctx.num_inputs() > 2 ? ctx.arg(2) : Operand::none());
}
void lower_reflection_pad(LowerContext& ctx) { pad(ctx, ctx.ints_arg(1), Mode::Reflect, Operand::none()); }
void lower_replication_pad(LowerContext& ctx) { pad(ctx, ctx.ints_arg(1), Mode::Replicate, Operand::none()); }
void lower_circular_pad(LowerContext& ctx) { pad(ctx, ctx.ints_arg(1), Mode::Circular, Operand::none()); }

}  // namespace

void register_pad(Registry& r) {
  r.add_lowering("aten::pad", lower_pad);
  r.add_lowering("aten::_pad_enum", lower_pad_enum);
  r.add_lowering("aten::constant_pad_nd", lower_constant_pad_nd);
  for (const char* n : {"1d", "2d", "3d"}) {
    r.add_lowering(std::string("aten::reflection_pad") + n, lower_reflection_pad);
    r.add_lowering(std::string("aten::replication_pad") + n, lower_replication_pad);
  }
  r.add_lowering("aten::_pad_circular", lower_circular_pad);
}

}  // namespace aotc::ops

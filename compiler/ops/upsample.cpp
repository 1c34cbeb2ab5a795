// Upsampling as F.interpolate produces it: aten::upsample_nearest{1,2,3}d,
// aten::_upsample_nearest_exact{1,2,3}d, aten::upsample_linear1d, upsample_bilinear2d and
// upsample_trilinear3d, upsample_bicubic2d, in both overloads (the .vec form with output_size? and
// scale_factors?, and the older one with output_size and one optional scale per dim)
// -> IR "upsample" -> upsample_f32. Output sizes and torch's source-index ratios are
// computed here, in the precision torch uses, so that the kernel picks the same cells.
#include <aotc/rt/kernels.h>

#include <optional>

#include "spatial.h"

namespace aotc::ops {
namespace {

// torch's area_pixel_compute_scale<float>: the factor from output to source index.
float source_ratio(bool linear, bool align_corners, int64_t in, int64_t out, std::optional<double> scale) {
  if (linear && align_corners)
    return out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
  if (scale && *scale > 0.0) return static_cast<float>(1.0 / *scale);
  return static_cast<float>(in) / static_cast<float>(out);
}

void lower_upsample(LowerContext& ctx, size_t spatial, rt::UpsampleMode mode) {
  ctx.require_float32({0});
  // Linear and cubic modes take align_corners (argument 2) and share torch's ratio rules.
  const bool linear = mode == rt::UpsampleMode::Linear || mode == rt::UpsampleMode::Cubic;
  const ir::Shape x = ctx.value(0).shape;
  if (x.size() != spatial + 2)
    ctx.fail("input must be " + std::to_string(spatial + 2) + "-d (N, C and " + std::to_string(spatial) +
             " spatial dims), got " + ir::shape_str(x));
  const bool align_corners = linear && ctx.bool_arg(2);
  const size_t first_scale = linear ? 3 : 2;
  // Scales: one float[] (the .vec overload) or one optional float per dim (the older one).
  std::vector<std::optional<double>> scales(spatial);
  bool have_scales = false;
  if (first_scale < ctx.num_inputs() && ctx.arg(first_scale).kind == Operand::Kind::DoubleList) {
    const std::vector<double>& list = ctx.arg(first_scale).doubles;
    if (list.size() != spatial)
      ctx.fail("scale_factors must have " + std::to_string(spatial) + " values, got " +
               std::to_string(list.size()));
    for (size_t d = 0; d < spatial; ++d) scales[d] = list[d];
    have_scales = true;
  } else {
    for (size_t d = 0; d < spatial; ++d)
      if (!ctx.is_none(first_scale + d)) scales[d] = ctx.double_arg(first_scale + d), have_scales = true;
  }
  std::vector<int64_t> in(x.end() - static_cast<std::ptrdiff_t>(spatial), x.end()), out;
  if (!ctx.is_none(1)) {
    out = ctx.ints_arg(1);
    if (out.size() != spatial)
      ctx.fail("output_size must have " + std::to_string(spatial) + " values, got " + ir::shape_str(out));
  } else {
    if (!have_scales) ctx.fail("either output_size or scale_factors must be given");
    for (size_t d = 0; d < spatial; ++d) {
      if (!scales[d]) ctx.fail("scale_factors must give every dim a scale");
      // torch: the product in double, truncated.
      out.push_back(static_cast<int64_t>(static_cast<double>(in[d]) * *scales[d]));
    }
  }
  for (size_t d = 0; d < spatial; ++d)
    if (in[d] <= 0 || out[d] <= 0)
      ctx.fail("input and output sizes must be positive, got input " + ir::shape_str(x) +
               " and output size " + ir::shape_str(out));
  std::vector<double> ratio;
  for (size_t d = 0; d < spatial; ++d)
    ratio.push_back(source_ratio(linear, align_corners, in[d], out[d], scales[d]));
  ratio.insert(ratio.begin(), 3 - spatial, 1.0);
  ir::Shape y = {x[0], x[1]};
  y.insert(y.end(), out.begin(), out.end());
  const int result = ctx.new_value(ir::DType::Float32, y);
  ir::Op& op = ctx.add_op(ir::kind::upsample, {ctx.tensor(0)}, {result});
  op.attrs = {{"mode", static_cast<int64_t>(mode)},
              {"align_corners", align_corners},
              {"dims", static_cast<int64_t>(spatial)},
              {"planes", x[0] * x[1]},
              {"in", as_3d(in, 1)},
              {"out", as_3d(out, 1)},
              {"ratio", ratio}};
  rt::UpsampleParams p;
  p.mode = mode;
  p.out[2] = out.back();
  op.scratch_bytes = rt::upsample_scratch_bytes(p);
  ctx.set_tensor_output(0, result);
}

LowerFn upsample_lowering(size_t spatial, rt::UpsampleMode mode) {
  return [spatial, mode](LowerContext& ctx) { lower_upsample(ctx, spatial, mode); };
}

std::string emit_upsample(const EmitContext& e, const ir::Op& op) {
  return kernel_call(op, upsample_params_code(op).str(),
                     "aotc::rt::upsample_f32(pool, p, " + e.in(op.inputs[0]) + ", " + e.out(op.outputs[0]) +
                         ", " + e.scratch(op) + ");");
}

}  // namespace

ParamsCode upsample_params_code(const ir::Op& op) {
  ParamsCode p("aotc::rt::UpsampleParams");
  const auto& ratio = std::get<std::vector<double>>(op.attrs.at("ratio"));
  p.raw("mode", "static_cast<aotc::rt::UpsampleMode>(" + std::to_string(op.i("mode")) + ")")
      .set_bool("align_corners", op.b("align_corners"))
      .set("dims", op.i("dims"))
      .set("planes", op.i("planes"))
      .set_array("in", op.ints("in"))
      .set_array("out", op.ints("out"));
  for (size_t d = 0; d < 3; ++d) p.set_f32("ratio[" + std::to_string(d) + "]", ratio[d]);
  return p;
}

void register_upsample(Registry& r) {
  using M = rt::UpsampleMode;
  r.add_lowering("aten::upsample_nearest1d", upsample_lowering(1, M::Nearest));
  r.add_lowering("aten::upsample_nearest2d", upsample_lowering(2, M::Nearest));
  r.add_lowering("aten::upsample_nearest3d", upsample_lowering(3, M::Nearest));
  r.add_lowering("aten::_upsample_nearest_exact1d", upsample_lowering(1, M::NearestExact));
  r.add_lowering("aten::_upsample_nearest_exact2d", upsample_lowering(2, M::NearestExact));
  r.add_lowering("aten::_upsample_nearest_exact3d", upsample_lowering(3, M::NearestExact));
  r.add_lowering("aten::upsample_linear1d", upsample_lowering(1, M::Linear));
  r.add_lowering("aten::upsample_bilinear2d", upsample_lowering(2, M::Linear));
  r.add_lowering("aten::upsample_trilinear3d", upsample_lowering(3, M::Linear));
  r.add_lowering("aten::upsample_bicubic2d", upsample_lowering(2, M::Cubic));
  r.add_ir_op(ir::kind::upsample, emit_upsample);
}

}  // namespace aotc::ops

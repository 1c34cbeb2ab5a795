// expand, expand_as, broadcast_to: a stride-0 strided view (strided_view.h). Consumers get
// the broadcast tensor materialised densely by copy_strided.
#include "strided_view.h"

namespace aotc::ops {
namespace {

void expand_to(LowerContext& ctx, std::vector<int64_t> sizes) {
  const StridedView x = view_of(ctx.graph, ctx.tensor(0));
  if (sizes.size() < x.sizes.size())
    ctx.fail("the number of sizes " + ir::shape_str(sizes) + " must be at least the tensor's rank " +
             std::to_string(x.rank()) + " (shape " + ir::shape_str(x.sizes) + ")");
  const size_t lead = sizes.size() - x.sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i < lead) {
      if (sizes[i] < 0)
        ctx.fail("expanded size " + std::to_string(sizes[i]) + " is not allowed in a leading, new dimension");
      continue;
    }
    const int64_t have = x.sizes[i - lead];
    if (sizes[i] == -1) sizes[i] = have;
    if (sizes[i] != have && have != 1)
      ctx.fail("the expanded size " + std::to_string(sizes[i]) + " must match the existing size " +
               std::to_string(have) + " at non-singleton dimension " + std::to_string(i) + "; target sizes " +
               ir::shape_str(sizes) + ", tensor shape " + ir::shape_str(x.sizes));
    if (sizes[i] < 0) ctx.fail("invalid expanded size " + std::to_string(sizes[i]));
  }
  set_view_output(ctx, expand_view(x, sizes));
}

void lower_expand(LowerContext& ctx) { expand_to(ctx, ctx.ints_arg(1)); }
void lower_expand_as(LowerContext& ctx) { expand_to(ctx, ctx.value(1).shape); }

}  // namespace

void register_expand(Registry& r) {
  r.add_lowering("aten::expand", lower_expand);
  r.add_lowering("aten::broadcast_to", lower_expand);
  r.add_lowering("aten::expand_as", lower_expand_as);
  r.add_lowering("aten::expand_copy", lower_expand);
}

}  // namespace aotc::ops

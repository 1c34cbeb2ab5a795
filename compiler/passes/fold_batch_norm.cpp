// fold_batch_norm: conv2d / conv3d / conv_transpose -> channel_affine becomes one
// convolution with scaled weights:
//   w'[o] = w[o] * scale[o],  b'[o] = b[o] * scale[o] + shift[o]
// where w[o] is every weight of output channel o (a contiguous block for convolutions; for
// transposed ones, whose weight is c_in x c_out/groups x kernel, one block per input channel).
// Freezing already folds the common cases; this catches the rest (e.g. batch norms that
// torch.jit.freeze could not see through).
#include <cmath>
#include <string>

#include "passes.h"

namespace aotc::passes {

void fold_batch_norm(ir::Graph& graph) {
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    ir::Op& affine = graph.ops[i];
    if (affine.kind != ir::kind::channel_affine || affine.f(ir::attr::clamp_lo) != -INFINITY ||
        affine.f(ir::attr::clamp_hi) != INFINITY)
      continue;
    const int p = producer_of(graph, affine.inputs[0]);
    if (p < 0) continue;
    const std::string conv_kind = graph.ops[static_cast<size_t>(p)].kind;
    if (conv_kind != ir::kind::conv2d && conv_kind != ir::kind::conv3d &&
        conv_kind != ir::kind::conv_transpose)
      continue;
    ir::Op& conv = graph.ops[static_cast<size_t>(p)];
    // The affine alone reads all of the conv's output (not a slice of it, which the conv
    // would overrun once it writes the affine's smaller result).
    const int whole = sole_whole_read(graph, affine.inputs[0]);
    if (whole < 0 || conv.outputs[0] != whole || conv.f(ir::attr::clamp_lo) != -INFINITY ||
        conv.f(ir::attr::clamp_hi) != INFINITY)
      continue;
    if (!graph.is_constant(conv.inputs[1]) || (conv.inputs[2] >= 0 && !graph.is_constant(conv.inputs[2])))
      continue;
    const int64_t c_out = conv.i("c_out");
    if (affine.i("c") != c_out) continue;
    const int w_id = conv.inputs[1], b_id = conv.inputs[2], scale_id = affine.inputs[1],
              shift_id = affine.inputs[2];
    const bool transposed = conv_kind == ir::kind::conv_transpose;
    const int64_t c_in = transposed ? conv.i("c_in") : 0, groups = transposed ? conv.i("groups") : 0;
    const std::string recipe = "fold_batch_norm " + conv_kind + " c_out=" + std::to_string(c_out) +
                               " c_in=" + std::to_string(c_in) + " groups=" + std::to_string(groups);
    auto folded_weights = [&] {
      const float* scale = graph.constant_of(scale_id).f32();
      const ir::Constant& w = graph.constant_of(w_id);
      std::vector<float> weights(w.f32(), w.f32() + ir::numel(w.shape));
      if (transposed) {
        const int64_t cout_g = c_out / groups, cin_g = c_in / groups;
        const int64_t taps = ir::numel(w.shape) / (c_in * cout_g);
        for (int64_t ci = 0; ci < c_in; ++ci)
          for (int64_t og = 0; og < cout_g; ++og) {
            const int64_t o = (ci / cin_g) * cout_g + og;
            float* block = weights.data() + (ci * cout_g + og) * taps;
            for (int64_t j = 0; j < taps; ++j) block[j] *= scale[o];
          }
      } else {
        const int64_t per_out = ir::numel(w.shape) / c_out;
        for (int64_t o = 0; o < c_out; ++o)
          for (int64_t j = 0; j < per_out; ++j) weights[static_cast<size_t>(o * per_out + j)] *= scale[o];
      }
      return weights;
    };
    auto folded_bias = [&] {
      const float* scale = graph.constant_of(scale_id).f32();
      const float* shift = graph.constant_of(shift_id).f32();
      std::vector<float> bias(static_cast<size_t>(c_out), 0.0f);
      if (b_id >= 0) {
        const float* b = graph.constant_of(b_id).f32();
        bias.assign(b, b + c_out);
      }
      for (int64_t o = 0; o < c_out; ++o)
        bias[static_cast<size_t>(o)] = bias[static_cast<size_t>(o)] * scale[o] + shift[o];
      return bias;
    };
    const ir::Shape w_shape = graph.value(w_id).shape;
    const int new_w =
        add_derived_f32_constant(graph, recipe + " weights", {w_id, scale_id}, w_shape, folded_weights);
    const int new_b =
        add_derived_f32_constant(graph, recipe + " bias", {b_id, scale_id, shift_id}, {c_out}, folded_bias);
    ir::Op& conv_again = graph.ops[static_cast<size_t>(p)];  // add_* may not move ops, but be safe
    conv_again.inputs[1] = new_w;
    conv_again.inputs[2] = new_b;
    // The conv now writes the batch norm's result directly.
    conv_again.outputs[0] = graph.ops[i].outputs[0];
    graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(i));
    --i;
  }
}

}  // namespace aotc::passes

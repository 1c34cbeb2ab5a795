// aten::lstm / aten::gru (the .input overloads, flat weights): per layer, one GEMM per
// direction for the input projection of every time step, then IR "recurrent" -> one
// recurrent_f32 call per direction for the time loop. Outputs are written in place through
// strides: batch_first, the two directions' halves of each output row, and each layer's
// rows of h_n / c_n (aliases into them), so no transposes, cats or stacks are needed.
#include <aotc/rt/kernels.h>

#include "gemm.h"
#include "op_helpers.h"
#include "sequence_ops.h"

namespace aotc::ops {
namespace {

struct RnnArgs {
  rt::RecurrentCell cell;
  int input;
  int h0 = -1, c0 = -1;  // [L * D, B, H] (or [L * D, H] unbatched), -1 for zeros
  std::vector<int> params;
  bool has_biases;
  int64_t num_layers;
  bool bidirectional, batch_first;
};

// Rows [index * rows, (index + 1) * rows) of a dense tensor's leading dim, as [rows, ...].
int slice_rows(LowerContext& ctx, int id, int64_t first_elem, const ir::Shape& shape) {
  return ctx.graph.add_alias(id, shape, first_elem * ir::dtype_size(ctx.graph.value(id).dtype));
}

void lower_rnn(LowerContext& ctx, const RnnArgs& a, std::vector<int>& results) {
  const ir::Value& x = ctx.graph.value(a.input);
  if (x.dtype != ir::DType::Float32) ctx.fail("input must be float32");
  const bool batched = x.shape.size() == 3;
  if (!batched && x.shape.size() != 2) ctx.fail("input must be 2-d or 3-d, got " + ir::shape_str(x.shape));
  const bool batch_first = batched && a.batch_first;
  const int64_t T = batch_first ? x.shape[1] : x.shape[0];
  const int64_t B = batched ? (batch_first ? x.shape[0] : x.shape[1]) : 1;
  const int64_t D = a.bidirectional ? 2 : 1, L = a.num_layers;
  const int64_t per_dir = a.has_biases ? 4 : 2;
  if (L < 1 || static_cast<int64_t>(a.params.size()) != L * D * per_dir)
    ctx.fail("expected " + std::to_string(L * D * per_dir) + " weight tensors for " + std::to_string(L) +
             " layer(s), got " + std::to_string(a.params.size()) +
             " (projections, proj_size > 0, are not supported)");
  const int64_t gates = rt::recurrent_gate_count(a.cell);
  const ir::Shape w_hh0 = ctx.graph.value(a.params[1]).shape;
  if (w_hh0.size() != 2 || w_hh0[0] % gates || w_hh0[1] != w_hh0[0] / gates)
    ctx.fail("weight_hh of shape " + ir::shape_str(w_hh0) + " is not [" + std::to_string(gates) + " * H, H]" +
             " (LSTM projections are not supported)");
  const int64_t H = w_hh0[1], G = gates * H;
  for (int id : a.params)
    if (ctx.graph.value(id).dtype != ir::DType::Float32) ctx.fail("weights must be float32");
  const ir::Shape state_shape = batched ? ir::Shape{L * D, B, H} : ir::Shape{L * D, H};
  for (int s : {a.h0, a.c0})
    if (s >= 0 && ctx.graph.value(s).shape != state_shape)
      ctx.fail("initial state of shape " + ir::shape_str(ctx.graph.value(s).shape) + " is not " +
               ir::shape_str(state_shape));

  const bool lstm = a.cell == rt::RecurrentCell::Lstm;
  const int h_n = ctx.new_value(ir::DType::Float32, state_shape);
  const int c_n = lstm ? ctx.new_value(ir::DType::Float32, state_shape) : -1;
  const ir::Shape layer_state = {D, B, H};
  int layer_in = a.input;
  for (int64_t l = 0; l < L; ++l) {
    const ir::Shape in_shape = ctx.graph.value(layer_in).shape;
    const int64_t I = in_shape.back();
    ir::Shape y_shape = in_shape;
    y_shape.back() = D * H;
    const int y = ctx.new_value(ir::DType::Float32, y_shape);
    std::vector<int> inputs;
    for (int64_t d = 0; d < D; ++d) {  // gates_x of each direction
      const size_t base = static_cast<size_t>((l * D + d) * per_dir);
      const int w_ih = a.params[base], b_ih = a.has_biases ? a.params[base + 2] : -1;
      if (ctx.graph.value(w_ih).shape != ir::Shape{G, I})
        ctx.fail("weight_ih of layer " + std::to_string(l) + " has shape " +
                 ir::shape_str(ctx.graph.value(w_ih).shape) + ", expected " + ir::shape_str({G, I}));
      GemmShape g;
      g.m = T * B;
      g.n = G;
      g.k = I;
      g.trans_b = true;
      g.bias_kind = b_ih >= 0 ? rt::BiasKind::PerColumn : rt::BiasKind::None;
      ir::Shape gx_shape = in_shape;
      gx_shape.back() = G;
      const int gx = ctx.new_value(ir::DType::Float32, gx_shape);
      make_gemm(ctx, g, layer_in, w_ih, b_ih, gx);
      inputs.push_back(gx);
    }
    for (int64_t d = 0; d < D; ++d) {
      const size_t base = static_cast<size_t>((l * D + d) * per_dir);
      if (ctx.graph.value(a.params[base + 1]).shape != ir::Shape{G, H})
        ctx.fail("weight_hh of layer " + std::to_string(l) + " has an unexpected shape");
      inputs.push_back(a.params[base + 1]);
      inputs.push_back(a.has_biases ? a.params[base + 3] : -1);
    }
    const int64_t first = l * D * B * H;
    inputs.push_back(a.h0 >= 0 ? slice_rows(ctx, a.h0, first, layer_state) : -1);
    inputs.push_back(a.c0 >= 0 ? slice_rows(ctx, a.c0, first, layer_state) : -1);
    std::vector<int> outputs = {y, slice_rows(ctx, h_n, first, layer_state)};
    if (lstm) outputs.push_back(slice_rows(ctx, c_n, first, layer_state));

    rt::RecurrentParams p;
    p.cell = a.cell;
    p.steps = T;
    p.batch = B;
    p.hidden = H;
    ir::Op& op = ctx.add_op(ir::kind::recurrent, inputs, outputs);
    op.attrs = {{"cell", static_cast<int64_t>(a.cell)},
                {"steps", T},
                {"batch", B},
                {"hidden", H},
                {"directions", D},
                {"gx_step_stride", batch_first ? G : B * G},
                {"gx_batch_stride", batch_first ? T * G : G},
                {"y_step_stride", batch_first ? D * H : B * D * H},
                {"y_batch_stride", batch_first ? T * D * H : D * H}};
    op.scratch_bytes = rt::recurrent_scratch_bytes(p);
    op.thread_scratch_bytes = rt::recurrent_thread_scratch_bytes(p);
    layer_in = y;
  }
  results = {layer_in, h_n};
  if (lstm) results.push_back(c_n);
}

void check_inference(LowerContext& ctx, size_t train_arg) {
  if (ctx.bool_arg(train_arg)) ctx.fail("training mode (dropout between layers) is not supported");
}

// lstm.input(input, hx[], params[], has_biases, num_layers, dropout, train, bidirectional, batch_first)
void lower_lstm(LowerContext& ctx) {
  if (ctx.arg(1).kind != Operand::Kind::TensorList)
    ctx.fail("packed sequences (the lstm.data overload) are not supported");
  check_inference(ctx, 6);
  RnnArgs a;
  a.cell = rt::RecurrentCell::Lstm;
  a.input = ctx.tensor(0);
  const std::vector<int>& hx = ctx.arg(1).tensors;
  if (hx.size() != 2) ctx.fail("hx must hold h0 and c0");
  a.h0 = hx[0];
  a.c0 = hx[1];
  if (ctx.arg(2).kind != Operand::Kind::TensorList) ctx.fail("params must be a list of tensors");
  a.params = ctx.arg(2).tensors;
  a.has_biases = ctx.bool_arg(3);
  a.num_layers = ctx.int_arg(4);
  a.bidirectional = ctx.bool_arg(7);
  a.batch_first = ctx.bool_arg(8);
  std::vector<int> r;
  lower_rnn(ctx, a, r);
  for (size_t i = 0; i < 3; ++i) ctx.set_tensor_output(i, r[i]);
}

// gru.input(input, hx, params[], has_biases, num_layers, dropout, train, bidirectional, batch_first)
void lower_gru(LowerContext& ctx) {
  if (ctx.arg(2).kind != Operand::Kind::TensorList)
    ctx.fail("packed sequences (the gru.data overload) are not supported");
  check_inference(ctx, 6);
  RnnArgs a;
  a.cell = rt::RecurrentCell::Gru;
  a.input = ctx.tensor(0);
  a.h0 = ctx.tensor(1);
  a.params = ctx.arg(2).tensors;
  a.has_biases = ctx.bool_arg(3);
  a.num_layers = ctx.int_arg(4);
  a.bidirectional = ctx.bool_arg(7);
  a.batch_first = ctx.bool_arg(8);
  std::vector<int> r;
  lower_rnn(ctx, a, r);
  for (size_t i = 0; i < 2; ++i) ctx.set_tensor_output(i, r[i]);
}

// inputs: gates_x per direction, then (w_hh, b_hh) per direction, then h0, c0 (layer slices);
// outputs: y, h_n, c_n (layer slices [D, B, H]).
std::string emit_recurrent(const EmitContext& e, const ir::Op& op) {
  std::string code;
  for (int64_t d = 0; d < op.i("directions"); ++d)
    code += kernel_call(
        op, recurrent_params_code(op, d == 1).str(),
        "aotc::rt::recurrent_f32(pool, p, " + recurrent_operands(e, op, d) + ", " + e.scratch(op) + ");");
  return code;
}

}  // namespace

ParamsCode recurrent_params_code(const ir::Op& op, bool reverse) {
  ParamsCode p("aotc::rt::RecurrentParams");
  p.raw("cell", "static_cast<aotc::rt::RecurrentCell>(" + std::to_string(op.i("cell")) + ")")
      .set("steps", op.i("steps"))
      .set("batch", op.i("batch"))
      .set("hidden", op.i("hidden"))
      .set_bool("reverse", reverse)
      .set("gx_step_stride", op.i("gx_step_stride"))
      .set("gx_batch_stride", op.i("gx_batch_stride"))
      .set("y_step_stride", op.i("y_step_stride"))
      .set("y_batch_stride", op.i("y_batch_stride"));
  return p;
}

std::string recurrent_operands(const EmitContext& e, const ir::Op& op, int64_t direction) {
  const int64_t D = op.i("directions"), B = op.i("batch"), H = op.i("hidden"), d = direction;
  const bool lstm = op.i("cell") == static_cast<int64_t>(rt::RecurrentCell::Lstm);
  const int h0 = op.inputs[static_cast<size_t>(3 * D)], c0 = op.inputs[static_cast<size_t>(3 * D + 1)];
  const auto offset_ptr = [](const std::string& ptr, int64_t offset) {
    return offset ? "(" + ptr + " + " + std::to_string(offset) + ")" : ptr;
  };
  const int64_t state = d * B * H;
  return e.in(op.inputs[static_cast<size_t>(d)]) + ", " + e.in(op.inputs[static_cast<size_t>(D + 2 * d)]) +
         ", " + e.in(op.inputs[static_cast<size_t>(D + 2 * d + 1)]) + ", " +
         (h0 >= 0 ? offset_ptr(e.in(h0), state) : "nullptr") + ", " +
         (c0 >= 0 ? offset_ptr(e.in(c0), state) : "nullptr") + ", " +
         offset_ptr(e.out(op.outputs[0]), d * H) + ", " + offset_ptr(e.out(op.outputs[1]), state) + ", " +
         (lstm ? offset_ptr(e.out(op.outputs[2]), state) : "nullptr");
}

void register_recurrent(Registry& r) {
  r.add_lowering("aten::lstm", lower_lstm);
  r.add_lowering("aten::gru", lower_gru);
  r.add_ir_op(ir::kind::recurrent, emit_recurrent);
}

}  // namespace aotc::ops

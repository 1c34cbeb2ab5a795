// IR "max_pool2d" / "avg_pool2d" on CUDA -> aotc::rt::cuda::max_pool2d_f32 / avg_pool2d_f32.
#include "cuda_registry.h"

namespace aotc::ops::cuda {
namespace {

CudaCode emit_pool(const EmitContext& e, const ir::Op& op, size_t) {
  ParamsCode p("aotc::rt::Pool2dParams");
  p.set("n", op.i("n"))
      .set("c", op.i("c"))
      .set("h_in", op.i("h_in"))
      .set("w_in", op.i("w_in"))
      .set("h_out", op.i("h_out"))
      .set("w_out", op.i("w_out"))
      .set("kernel_h", op.ints("kernel")[0])
      .set("kernel_w", op.ints("kernel")[1])
      .set("stride_h", op.ints("stride")[0])
      .set("stride_w", op.ints("stride")[1])
      .set("pad_h", op.ints("padding")[0])
      .set("pad_w", op.ints("padding")[1])
      .set("dilation_h", op.ints("dilation")[0])
      .set("dilation_w", op.ints("dilation")[1])
      .set_bool("count_include_pad", op.b("count_include_pad"))
      .set("divisor_override", op.i("divisor_override"));
  return {"", kernel_call(op, p.str(),
                          "aotc::rt::cuda::" + op.kind + "_f32(stream, p, " + e.in(op.inputs[0]) + ", " +
                              e.out(op.outputs[0]) + ");")};
}

}  // namespace

void register_pool2d_cuda(CudaRegistry& r) {
  r.add("max_pool2d", emit_pool);
  r.add("avg_pool2d", emit_pool);
}

}  // namespace aotc::ops::cuda

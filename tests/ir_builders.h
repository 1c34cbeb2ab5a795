// ir_builders.h - small IR graphs for the compiler's unit tests (tests/unit and tests/cuda).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "../compiler/ir/graph.h"

namespace aotc::test {

// A k x k, stride-1, "same"-padded conv2d of hw x hw planes (batch 1) with every attribute
// that conv2d_params_of reads; no clamp.
inline ir::Op& add_conv(ir::Graph& g, int x, int w, int bias, int y, int64_t c_in, int64_t c_out, int64_t hw,
                        int64_t k, int64_t groups, ir::SourceLocation loc = {}) {
  ir::Op& conv = g.add_op(ir::kind::conv2d, {x, w, bias}, {y}, std::move(loc));
  conv.attrs = {{"n", int64_t{1}},
                {"c_in", c_in},
                {"h_in", hw},
                {"w_in", hw},
                {"c_out", c_out},
                {"h_out", hw},
                {"w_out", hw},
                {"kernel", std::vector<int64_t>{k, k}},
                {"stride", std::vector<int64_t>{1, 1}},
                {"padding", std::vector<int64_t>{k / 2, k / 2}},
                {"dilation", std::vector<int64_t>{1, 1}},
                {"groups", groups},
                {ir::attr::clamp_lo, -INFINITY},
                {ir::attr::clamp_hi, INFINITY}};
  return conv;
}

}  // namespace aotc::test

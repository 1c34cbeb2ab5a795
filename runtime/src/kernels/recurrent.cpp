// recurrent.cpp - the time loop of one direction of one LSTM or GRU layer. The input
// projection of all steps (gates_x = x W_ih^T + b_ih) is a single large GEMM made by the
// compiler before this kernel; here each step costs one small GEMM, h W_hh^T + b_hh (split
// over the pool when it is large enough), and the gate math, in torch's formulation:
//   LSTM: i, f, g, o = sigma, sigma, tanh, sigma (gx + gh);  c = f c + i g;  h = o tanh(c)
//   GRU:  r, z = sigma(gx + gh);  n = tanh(gx_n + r gh_n);    h = (1 - z) n + z h
// (gh_n includes b_hn, which is why b_hh stays with the recurrent product).
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include <cmath>
#include <cstring>

#include "kernel_util.h"

namespace aotc::rt {
namespace {

inline float sigmoid(float x) { return 1.0f / (1.0f + detail::exp_f32(-x)); }

void lstm_cell(int64_t hidden, const float* gx, const float* gh, float* h, float* c) {
  const float* gx_i = gx;
  const float* gx_f = gx + hidden;
  const float* gx_g = gx + 2 * hidden;
  const float* gx_o = gx + 3 * hidden;
  for (int64_t j = 0; j < hidden; ++j) {
    const float i = sigmoid(gx_i[j] + gh[j]);
    const float f = sigmoid(gx_f[j] + gh[hidden + j]);
    const float g = std::tanh(gx_g[j] + gh[2 * hidden + j]);
    const float o = sigmoid(gx_o[j] + gh[3 * hidden + j]);
    c[j] = f * c[j] + i * g;
    h[j] = o * std::tanh(c[j]);
  }
}

void gru_cell(int64_t hidden, const float* gx, const float* gh, float* h) {
  for (int64_t j = 0; j < hidden; ++j) {
    const float r = sigmoid(gx[j] + gh[j]);
    const float z = sigmoid(gx[hidden + j] + gh[hidden + j]);
    const float n = std::tanh(gx[2 * hidden + j] + r * gh[2 * hidden + j]);
    h[j] = (1.0f - z) * n + z * h[j];
  }
}

}  // namespace

void recurrent_f32(ThreadPool& pool, const RecurrentParams& p, const float* gates_x, const float* w_hh,
                   const float* b_hh, const float* h0, const float* c0, float* y, float* h_n, float* c_n,
                   float* scratch) {
  const int64_t B = p.batch, H = p.hidden, G = recurrent_gate_count(p.cell) * H;
  if (B <= 0 || H <= 0) return;
  const bool lstm = p.cell == RecurrentCell::Lstm;
  float* gh = scratch;    // B x G: h W_hh^T + b_hh of the current step
  float* h = gh + B * G;  // B x H: the running hidden state
  float* c = h + B * H;   // B x H: the running cell state (LSTM)
  const size_t state_bytes = static_cast<size_t>(B * H) * sizeof(float);
  if (h0) {
    std::memcpy(h, h0, state_bytes);
  } else {
    std::memset(h, 0, state_bytes);
  }
  if (lstm) {
    if (c0) {
      std::memcpy(c, c0, state_bytes);
    } else {
      std::memset(c, 0, state_bytes);
    }
  }

  GemmParams rec;  // gh (B x G) = h (B x H) W_hh^T (W_hh stored G x H) + b_hh
  rec.m = B;
  rec.n = G;
  rec.k = H;
  rec.trans_b = true;
  rec.bias_kind = b_hh ? BiasKind::PerColumn : BiasKind::None;

  for (int64_t s = 0; s < p.steps; ++s) {
    const int64_t t = p.reverse ? p.steps - 1 - s : s;
    gemm_f32(pool, rec, h, w_hh, b_hh, gh);
    for (int64_t b = 0; b < B; ++b) {
      const float* gx = gates_x + t * p.gx_step_stride + b * p.gx_batch_stride;
      float* hb = h + b * H;
      if (lstm) {
        lstm_cell(H, gx, gh + b * G, hb, c + b * H);
      } else {
        gru_cell(H, gx, gh + b * G, hb);
      }
      std::memcpy(y + t * p.y_step_stride + b * p.y_batch_stride, hb, static_cast<size_t>(H) * sizeof(float));
    }
  }
  if (h_n) std::memcpy(h_n, h, state_bytes);
  if (lstm && c_n) std::memcpy(c_n, c, state_bytes);
}

}  // namespace aotc::rt

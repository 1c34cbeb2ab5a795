// recurrent_f32 (the time loop of LSTM and GRU layers) against a naive double-precision
// reference, with batch-first and time-major strides, both directions, and with and
// without initial states and recurrent bias.
#include <doctest/doctest.h>

#include "kernel_reference.h"

using aotc::rt::RecurrentCell;
using aotc::rt::RecurrentParams;
using aotc::rt::ThreadPool;
using namespace aotc::test;

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct RefOut {
  std::vector<double> y, h, c;
};

RefOut reference(const RecurrentParams& p, const float* gx, const float* w_hh, const float* b_hh,
                 const float* h0, const float* c0, size_t y_size) {
  const int64_t B = p.batch, H = p.hidden, G = aotc::rt::recurrent_gate_count(p.cell) * H;
  RefOut r;
  r.y.assign(y_size, std::nan(""));
  r.h.assign(static_cast<size_t>(B * H), 0.0);
  r.c.assign(static_cast<size_t>(B * H), 0.0);
  for (size_t i = 0; i < r.h.size(); ++i) {
    if (h0) r.h[i] = h0[i];
    if (c0) r.c[i] = c0[i];
  }
  std::vector<double> gh(static_cast<size_t>(G));
  for (int64_t s = 0; s < p.steps; ++s) {
    const int64_t t = p.reverse ? p.steps - 1 - s : s;
    std::vector<double> h_next = r.h;
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t g = 0; g < G; ++g) {
        double acc = b_hh ? b_hh[g] : 0.0;
        for (int64_t j = 0; j < H; ++j) acc += double(w_hh[g * H + j]) * r.h[static_cast<size_t>(b * H + j)];
        gh[static_cast<size_t>(g)] = acc;
      }
      const float* x = gx + t * p.gx_step_stride + b * p.gx_batch_stride;
      for (int64_t j = 0; j < H; ++j) {
        const size_t idx = static_cast<size_t>(b * H + j);
        if (p.cell == RecurrentCell::Lstm) {
          const double i = sigmoid(x[j] + gh[static_cast<size_t>(j)]);
          const double f = sigmoid(x[H + j] + gh[static_cast<size_t>(H + j)]);
          const double g = std::tanh(x[2 * H + j] + gh[static_cast<size_t>(2 * H + j)]);
          const double o = sigmoid(x[3 * H + j] + gh[static_cast<size_t>(3 * H + j)]);
          r.c[idx] = f * r.c[idx] + i * g;
          h_next[idx] = o * std::tanh(r.c[idx]);
        } else {
          const double rr = sigmoid(x[j] + gh[static_cast<size_t>(j)]);
          const double z = sigmoid(x[H + j] + gh[static_cast<size_t>(H + j)]);
          const double n = std::tanh(x[2 * H + j] + rr * gh[static_cast<size_t>(2 * H + j)]);
          h_next[idx] = (1.0 - z) * n + z * r.h[idx];
        }
      }
    }
    r.h = h_next;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < H; ++j)
        r.y[static_cast<size_t>(t * p.y_step_stride + b * p.y_batch_stride + j)] =
            r.h[static_cast<size_t>(b * H + j)];
  }
  return r;
}

}  // namespace

TEST_CASE("recurrent_f32: LSTM and GRU, layouts, directions, states") {
  struct Case {
    RecurrentCell cell;
    int64_t steps, batch, hidden;
    bool batch_first, reverse, states, bias;
  };
  const Case cases[] = {
      {RecurrentCell::Lstm, 1, 1, 1, false, false, false, false},
      {RecurrentCell::Lstm, 7, 3, 16, true, false, true, true},
      {RecurrentCell::Lstm, 9, 2, 33, false, true, true, true},
      {RecurrentCell::Lstm, 5, 4, 80, true, true, false, true},  // gh large enough to split over threads
      {RecurrentCell::Gru, 1, 1, 1, false, false, false, true},
      {RecurrentCell::Gru, 7, 3, 16, true, false, true, true},
      {RecurrentCell::Gru, 9, 2, 33, false, true, true, false},
      {RecurrentCell::Gru, 6, 5, 70, true, true, false, true},
  };
  for (int threads : kThreadCounts) {
    ThreadPool pool(threads);
    uint32_t seed = 3000;
    for (const Case& c : cases) {
      RecurrentParams p;
      p.cell = c.cell;
      p.steps = c.steps;
      p.batch = c.batch;
      p.hidden = c.hidden;
      p.reverse = c.reverse;
      const int64_t T = c.steps, B = c.batch, H = c.hidden, G = aotc::rt::recurrent_gate_count(c.cell) * H;
      // gates_x padded per row; y as one direction of a bidirectional output (row stride 2H).
      const int64_t gx_row = G + 5, y_row = 2 * H;
      p.gx_step_stride = c.batch_first ? gx_row : B * gx_row;
      p.gx_batch_stride = c.batch_first ? T * gx_row : gx_row;
      p.y_step_stride = c.batch_first ? y_row : B * y_row;
      p.y_batch_stride = c.batch_first ? T * y_row : y_row;
      const auto gx = random_floats(static_cast<size_t>(T * B * gx_row), ++seed, -2.0f, 2.0f);
      const auto w_hh = random_floats(static_cast<size_t>(G * H), ++seed, -0.5f, 0.5f);
      const auto b_hh = random_floats(static_cast<size_t>(G), ++seed);
      const auto h0 = random_floats(static_cast<size_t>(B * H), ++seed);
      const auto c0 = random_floats(static_cast<size_t>(B * H), ++seed);
      Guarded y(static_cast<size_t>(T * B * y_row),
                std::vector<float>(static_cast<size_t>(T * B * y_row), 0.0f));
      Guarded h_n(static_cast<size_t>(B * H)), c_n(static_cast<size_t>(B * H));
      std::vector<float> scratch(static_cast<size_t>(aotc::rt::recurrent_scratch_bytes(p)) / sizeof(float));
      PoolScratch pool_scratch(pool, aotc::rt::recurrent_thread_scratch_bytes(p));
      const bool lstm = c.cell == RecurrentCell::Lstm;
      aotc::rt::recurrent_f32(pool, p, gx.data(), w_hh.data(), c.bias ? b_hh.data() : nullptr,
                              c.states ? h0.data() : nullptr, c.states && lstm ? c0.data() : nullptr,
                              y.data(), h_n.data(), lstm ? c_n.data() : nullptr, scratch.data());
      const RefOut want =
          reference(p, gx.data(), w_hh.data(), c.bias ? b_hh.data() : nullptr, c.states ? h0.data() : nullptr,
                    c.states && lstm ? c0.data() : nullptr, y.size());
      // The other direction's half of every y row stays as it was (zeros).
      std::vector<double> want_y = want.y;
      for (double& v : want_y)
        if (std::isnan(v)) v = 0.0;
      INFO("cell=" << int(c.cell) << " T=" << T << " B=" << B << " H=" << H
                   << " batch_first=" << c.batch_first << " reverse=" << c.reverse << " states=" << c.states
                   << " threads=" << threads);
      CHECK(rel_l2(y.values(), want_y) <= kTolerance);
      CHECK(rel_l2(h_n.values(), want.h) <= kTolerance);
      if (lstm) CHECK(rel_l2(c_n.values(), want.c) <= kTolerance);
      CHECK(y.guards_intact());
      CHECK(h_n.guards_intact());
      CHECK(pool_scratch.guard_intact());
    }
  }
}

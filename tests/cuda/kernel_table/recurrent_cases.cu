// The recurrent layers (IR "recurrent"): LSTM and GRU time loops against the CPU kernel, one
// CPU call per direction; both directions in one CUDA call. Outputs are written through the
// strides of a time-major or batch-first y whose rows hold both directions' halves, as the
// compiler lays them out.
#include <cmath>
#include <cstdlib>

#include "kernel_table.h"

namespace aotc::test {
namespace {

using rt::RecurrentCell;
using rt::RecurrentParams;

struct RnnCase {
  RecurrentCell cell = RecurrentCell::Lstm;
  int64_t hidden = 1, batch = 1, steps = 1;
  bool bidirectional = false, reverse = false, batch_first = false;
  bool b_hh = true, h0 = true, c0 = true;
  bool specials = false;  // NaN, infinities, -0 and float32's largest among gates_x
  bool graph = false;     // the CUDA steps captured as a graph and replayed (as a model runs them)
  bool no_pdl = false;    // AOTC_CUDA_RNN_NO_PDL: plain launches
};

std::string case_name(const RnnCase& c) {
  std::string s =
      "H" + std::to_string(c.hidden) + " B" + std::to_string(c.batch) + " T" + std::to_string(c.steps);
  if (c.bidirectional) s += " bidir";
  if (c.reverse) s += " reverse";
  if (c.batch_first) s += " batch_first";
  if (!c.b_hh) s += " no_b_hh";
  if (!c.h0) s += " no_h0";
  if (c.cell == RecurrentCell::Lstm && !c.c0) s += " no_c0";
  if (c.specials) s += " specials";
  if (c.graph) s += " graph";
  if (c.no_pdl) s += " no_pdl";
  return s;
}

void run_case(KernelTable& t, const RnnCase& c) {
  const bool lstm = c.cell == RecurrentCell::Lstm;
  const int64_t H = c.hidden, B = c.batch, T = c.steps, D = c.bidirectional ? 2 : 1;
  const int64_t G = rt::recurrent_gate_count(c.cell) * H;
  RecurrentParams p;
  p.cell = c.cell;
  p.steps = T;
  p.batch = B;
  p.hidden = H;
  p.reverse = c.reverse;
  p.gx_step_stride = c.batch_first ? G : B * G;
  p.gx_batch_stride = c.batch_first ? T * G : G;
  p.y_step_stride = c.batch_first ? D * H : B * D * H;
  p.y_batch_stride = c.batch_first ? T * D * H : D * H;
  const float w_scale = 1.0f / std::sqrt(static_cast<float>(H));

  std::vector<std::vector<float>> gx(D), w_hh(D), b_hh(D);
  for (int64_t d = 0; d < D; ++d) {
    gx[d] = t.floats(static_cast<size_t>(T * B * G), c.specials);
    w_hh[d] = t.floats(static_cast<size_t>(G * H), false, w_scale);
    if (c.b_hh) b_hh[d] = t.floats(static_cast<size_t>(G), false, 0.5f);
  }
  const size_t state = static_cast<size_t>(D * B * H);
  const std::vector<float> h0 = c.h0 ? t.floats(state) : std::vector<float>();
  const std::vector<float> c0 = lstm && c.c0 ? t.floats(state) : std::vector<float>();

  // CPU: one call per direction, the second reversed relative to the first.
  const size_t y_size = static_cast<size_t>(T * B * D * H);
  std::vector<float> y(y_size), h_n(state), c_n(lstm ? state : 0);
  std::vector<float> scratch(static_cast<size_t>(rt::recurrent_scratch_bytes(p)) / sizeof(float));
  for (int64_t d = 0; d < D; ++d) {
    RecurrentParams pd = p;
    pd.reverse = c.reverse != (d == 1);
    const int64_t off = d * B * H;
    rt::recurrent_f32(t.pool(), pd, gx[d].data(), w_hh[d].data(), c.b_hh ? b_hh[d].data() : nullptr,
                      c.h0 ? h0.data() + off : nullptr, lstm && c.c0 ? c0.data() + off : nullptr,
                      y.data() + d * H, h_n.data() + off, lstm ? c_n.data() + off : nullptr, scratch.data());
  }

  // CUDA: both directions in one call.
  const float* d_h0 = c.h0 ? t.upload(h0) : nullptr;
  const float* d_c0 = lstm && c.c0 ? t.upload(c0) : nullptr;
  float* d_y = t.device<float>(y_size);
  float* d_h_n = t.device<float>(state);
  float* d_c_n = lstm ? t.device<float>(state) : nullptr;
  float* d_scratch = lstm ? t.device<float>(state) : nullptr;  // poisoned: the first step must not read it
  rt::cuda::RecurrentOperands ops[2];
  for (int64_t d = 0; d < D; ++d) {
    const int64_t off = d * B * H;
    ops[d].gates_x = t.upload(gx[d]);
    ops[d].w_hh = t.upload(w_hh[d]);
    ops[d].b_hh = c.b_hh ? t.upload(b_hh[d]) : nullptr;
    ops[d].h0 = d_h0 ? d_h0 + off : nullptr;
    ops[d].c0 = d_c0 ? d_c0 + off : nullptr;
    ops[d].y = d_y + d * H;
    ops[d].h_n = d_h_n + off;
    ops[d].c_n = d_c_n ? d_c_n + off : nullptr;
  }
  if (c.no_pdl) setenv("AOTC_CUDA_RNN_NO_PDL", "1", 1);
  if (c.graph) {
    t.sync();
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaStreamBeginCapture(t.stream(), cudaStreamCaptureModeThreadLocal);
    rt::cuda::recurrent_f32(t.exec(), p, ops[0], ops[1], d_scratch);
    if (cudaStreamEndCapture(t.stream(), &graph) != cudaSuccess ||
        cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
      rt::cuda::note_error("recurrent graph", "capture or instantiation failed");
    } else {
      for (int i = 0; i < 2; ++i) cudaGraphLaunch(exec, t.stream());  // a replay starts from h0 again
    }
    t.sync();
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  } else {
    rt::cuda::recurrent_f32(t.exec(), p, ops[0], ops[1], d_scratch);
  }
  if (c.no_pdl) unsetenv("AOTC_CUDA_RNN_NO_PDL");

  const std::string op = std::string(lstm ? "recurrent (lstm)" : "recurrent (gru)");
  const std::string what = case_name(c);
  if (T == 0) {  // h_n, c_n copied from h0, c0 (or zeros); y has no elements
    t.expect_equal(op + " h_n", what, h_n, t.download(d_h_n, state));
    if (lstm) t.expect_equal(op + " c_n", what, c_n, t.download(d_c_n, state));
    return;
  }
  t.expect_close(op + " y", what, y, t.download(d_y, y_size));
  t.expect_close(op + " h_n", what, h_n, t.download(d_h_n, state));
  if (lstm) t.expect_close(op + " c_n", what, c_n, t.download(d_c_n, state));
}

}  // namespace

void recurrent_cases(KernelTable& t) {
  // Every hidden size, batch and length; the options vary with the case's index so that each
  // appears with each cell and at short and long lengths.
  int index = 0;
  for (const RecurrentCell cell : {RecurrentCell::Lstm, RecurrentCell::Gru})
    for (const int64_t hidden : {1, 7, 33, 128, 256})
      for (const int64_t batch : {1, 3, 10})
        for (const int64_t steps : {1, 5, 40}) {
          RnnCase c;
          c.cell = cell;
          c.hidden = hidden;
          c.batch = batch;
          c.steps = steps;
          c.bidirectional = index % 3 == 1;
          c.reverse = index % 4 == 2;
          c.batch_first = index % 2 == 1;
          c.b_hh = index % 5 != 3;
          c.h0 = index % 3 != 2;
          c.c0 = index % 7 != 4;
          run_case(t, c);
          ++index;
        }
  // Batch tiles: 2 rows, 8 rows exactly, 8 + 1 rows, several tiles.
  for (const RecurrentCell cell : {RecurrentCell::Lstm, RecurrentCell::Gru})
    for (const int64_t batch : {2, 8, 9, 17}) {
      RnnCase c;
      c.cell = cell;
      c.hidden = 65;
      c.batch = batch;
      c.steps = 6;
      c.bidirectional = true;
      c.batch_first = batch % 2 == 1;
      run_case(t, c);
    }
  // Non-finite gates_x; no steps; a long sequence; in a graph; without programmatic launches.
  for (const RecurrentCell cell : {RecurrentCell::Lstm, RecurrentCell::Gru}) {
    RnnCase c;
    c.cell = cell;
    c.hidden = 33;
    c.batch = 3;
    c.steps = 5;
    c.specials = true;
    c.bidirectional = true;
    run_case(t, c);
    c.specials = false;
    c.steps = 0;
    run_case(t, c);
    c.h0 = c.c0 = false;
    run_case(t, c);
    c.h0 = c.c0 = true;
    c.hidden = 256;
    c.batch = 4;
    c.steps = 100;
    c.batch_first = true;
    run_case(t, c);
    c.graph = true;
    run_case(t, c);
    c.graph = false;
    c.no_pdl = true;
    c.steps = 40;
    run_case(t, c);
    c.graph = true;
    run_case(t, c);
  }
}

}  // namespace aotc::test

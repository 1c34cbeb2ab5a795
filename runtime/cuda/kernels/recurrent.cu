// recurrent.cu - the time loop of one LSTM or GRU layer (RecurrentParams, as the CPU kernel
// takes it), in torch's formulation:
//   LSTM: i, f, g, o = sigma, sigma, tanh, sigma (gx + gh);  c = f c + i g;  h = o tanh(c)
//   GRU:  r, z = sigma(gx + gh);  n = tanh(gx_n + r gh_n);    h = (1 - z) n + z h
// with gh = h_{t-1} W_hh^T + b_hh. The input projection gx of every step is a GEMM done
// before. One launch per time step, covering both directions of the layer (blockIdx.y):
// a warp owns one hidden unit j and up to 8 batch rows, so all the gates of (b, j) are its
// own and the gate math needs no other block. Its lanes stride over k (the W_hh rows of
// the unit's gates are read coalesced, once for the batch rows, which they multiply from
// registers), the sums are combined with shuffles and lane b applies the gates of row b.
//
// h_{t-1} is read from y at the previous step (h0, or zeros, at the first), so h needs no
// buffer of its own; the LSTM's c lives in the scratch, each value read and written by the
// lane that owns it. Small batches are bound by reading W_hh (from L2, where it stays
// between steps) and by the launch latency, so on compute capability 9.0 and later each
// step is launched as a programmatic dependent of the one before (unless
// AOTC_CUDA_RNN_NO_PDL is set): it starts while the previous step finishes, loads its
// gates_x and b_hh and prefetches its W_hh rows into L1, and waits (griddepcontrol.wait)
// before it reads anything the previous step writes.
#include <aotc/rt/cuda/kernels_cuda.h>

#include <cstdlib>

namespace aotc::rt::cuda {
namespace {

constexpr int kWarps = 4;  // hidden units per block, one per warp

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// Returns once the previous step's grid has finished and its writes are visible (at once
// when the launch was not programmatic); then lets the next step's grid start.
__device__ __forceinline__ void wait_for_previous_step() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// kGates: 4 (LSTM) or 3 (GRU); kRows: batch rows per warp (blockIdx.z picks the tile).
template <int kGates, int kRows>
__global__ void __launch_bounds__(kWarps * 32)
    recurrent_step_kernel(RecurrentParams p, RecurrentOperands first, RecurrentOperands second, int64_t s,
                          float* c_state) {
  constexpr bool kLstm = kGates == 4;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t H = p.hidden, B = p.batch;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  const int dir = static_cast<int>(blockIdx.y);
  const RecurrentOperands o = dir == 0 ? first : second;
  const bool reverse = p.reverse != (dir == 1);
  const int64_t t = reverse ? p.steps - 1 - s : s;
  const int64_t b0 = static_cast<int64_t>(blockIdx.z) * kRows;
  const int rows = static_cast<int>(B - b0 < kRows ? B - b0 : kRows);
  const bool active = j < H;  // the block's last warps may have no unit (they still wait)
  const bool row_lane = active && lane < rows;
  const int64_t b = b0 + lane;  // the batch row whose gates this lane applies

  // What does not depend on the previous step: this lane's gates_x and b_hh, and the
  // unit's W_hh rows prefetched into L1. All of them were written before the first step,
  // which waited for their writers: from the second step on they are read before the wait.
  float gx[kGates] = {}, bias[kGates] = {};
  const float* w = o.w_hh + j * H;  // gate g's row at w + g * H * H
  const auto load_inputs = [&] {
    if (!active) return;
    for (int64_t k = lane * 32; k < H; k += 32 * 32)  // one prefetch per 128-byte line
#pragma unroll
      for (int g = 0; g < kGates; ++g) asm volatile("prefetch.global.L1 [%0];" ::"l"(w + g * H * H + k));
    if (lane >= rows) return;
    const float* gxp = o.gates_x + t * p.gx_step_stride + b * p.gx_batch_stride + j;
#pragma unroll
    for (int g = 0; g < kGates; ++g) {
      gx[g] = __ldg(gxp + g * H);
      bias[g] = o.b_hh ? __ldg(o.b_hh + g * H + j) : 0.0f;
    }
  };
  if (s > 0) load_inputs();
  wait_for_previous_step();
  if (s == 0) load_inputs();
  if (!active) return;

  // h_{t-1}: rows h_stride apart, null for zeros.
  const float* h_prev;
  int64_t h_stride;
  if (s == 0) {
    h_prev = o.h0 ? o.h0 + b0 * H : nullptr;
    h_stride = H;
  } else {
    h_prev = o.y + (reverse ? t + 1 : t - 1) * p.y_step_stride + b0 * p.y_batch_stride;
    h_stride = p.y_batch_stride;
  }
  // The GRU's own h_{t-1}[j] (for z h), read before the loop so that its latency overlaps.
  float h_own = 0.0f;
  if (!kLstm && row_lane && h_prev) h_own = h_prev[lane * h_stride + j];

  // acc[g][r] = sum over k of W_hh[g * H + j][k] h_{t-1}[b0 + r][k], this lane's k only. A
  // null h_prev multiplies zeros, as the CPU's GEMM does (a NaN in W_hh gives NaN).
  float acc[kGates][kRows];
#pragma unroll
  for (int g = 0; g < kGates; ++g)
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[g][r] = 0.0f;
#pragma unroll 4
  for (int64_t k = lane; k < H; k += 32) {
    float wv[kGates];
#pragma unroll
    for (int g = 0; g < kGates; ++g) wv[g] = __ldg(w + g * H * H + k);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r >= rows) break;
      const float hv = h_prev ? h_prev[r * h_stride + k] : 0.0f;
#pragma unroll
      for (int g = 0; g < kGates; ++g) acc[g][r] = fmaf(wv[g], hv, acc[g][r]);
    }
  }
  // Every lane gets every sum; lane r keeps row r's.
  float gh[kGates];
#pragma unroll
  for (int g = 0; g < kGates; ++g) gh[g] = 0.0f;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows) break;
#pragma unroll
    for (int g = 0; g < kGates; ++g) {
      float v = acc[g][r];
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
      if (lane == r) gh[g] = v;
    }
  }
  if (!row_lane) return;
  if (o.b_hh) {
#pragma unroll
    for (int g = 0; g < kGates; ++g) gh[g] += bias[g];
  }

  float h, c = 0.0f;
  if constexpr (kLstm) {
    const float i = sigmoid(gx[0] + gh[0]);
    const float f = sigmoid(gx[1] + gh[1]);
    const float g = tanhf(gx[2] + gh[2]);
    const float og = sigmoid(gx[3] + gh[3]);
    float* cp = c_state + (dir * B + b) * H + j;
    const float c_prev = s > 0 ? *cp : o.c0 ? __ldg(o.c0 + b * H + j) : 0.0f;
    c = f * c_prev + i * g;
    h = og * tanhf(c);
    *cp = c;
  } else {
    const float r = sigmoid(gx[0] + gh[0]);
    const float z = sigmoid(gx[1] + gh[1]);
    const float n = tanhf(gx[2] + r * gh[2]);
    h = (1.0f - z) * n + z * h_own;
  }
  o.y[t * p.y_step_stride + b * p.y_batch_stride + j] = h;
  if (s == p.steps - 1) {
    if (o.h_n) o.h_n[b * H + j] = h;
    if (kLstm && o.c_n) o.c_n[b * H + j] = c;
  }
}

// No steps: h_n = h0 and c_n = c0 (zeros where absent), as the CPU kernel leaves them.
__global__ void recurrent_no_steps_kernel(int64_t count, bool lstm, RecurrentOperands first,
                                          RecurrentOperands second) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const RecurrentOperands o = blockIdx.y == 0 ? first : second;
  if (o.h_n) o.h_n[i] = o.h0 ? o.h0[i] : 0.0f;
  if (lstm && o.c_n) o.c_n[i] = o.c0 ? o.c0[i] : 0.0f;
}

template <int kGates, int kRows>
void launch_steps(cudaStream_t stream, const RecurrentParams& p, const RecurrentOperands& first,
                  const RecurrentOperands& second, unsigned directions, float* c_state) {
  int device = 0, major = 0;
  const bool pdl = !std::getenv("AOTC_CUDA_RNN_NO_PDL") && cudaGetDevice(&device) == cudaSuccess &&
                   cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
                   major >= 9;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>((p.hidden + kWarps - 1) / kWarps), directions,
                        static_cast<unsigned>((p.batch + kRows - 1) / kRows));
  config.blockDim = dim3(kWarps * 32);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = pdl ? 1 : 0;
  for (int64_t s = 0; s < p.steps; ++s) {
    cudaLaunchKernelEx(&config, recurrent_step_kernel<kGates, kRows>, p, first, second, s, c_state);
    check_launch("recurrent_step_kernel");
  }
}

template <int kGates>
void launch_for_batch(cudaStream_t stream, const RecurrentParams& p, const RecurrentOperands& first,
                      const RecurrentOperands& second, unsigned directions, float* c_state) {
  if (p.batch == 1) {
    launch_steps<kGates, 1>(stream, p, first, second, directions, c_state);
  } else if (p.batch == 2) {
    launch_steps<kGates, 2>(stream, p, first, second, directions, c_state);
  } else if (p.batch <= 4) {
    launch_steps<kGates, 4>(stream, p, first, second, directions, c_state);
  } else {
    launch_steps<kGates, 8>(stream, p, first, second, directions, c_state);
  }
}

}  // namespace

void recurrent_f32(const Exec& ex, const RecurrentParams& p, const RecurrentOperands& first,
                   const RecurrentOperands& second, float* scratch) {
  if (p.batch <= 0 || p.hidden <= 0) return;
  const unsigned directions = second.w_hh ? 2 : 1;
  const bool lstm = p.cell == RecurrentCell::Lstm;
  if (p.steps <= 0) {
    const int64_t count = p.batch * p.hidden;
    recurrent_no_steps_kernel<<<dim3(blocks_for(count), directions), kThreads, 0, ex.stream>>>(count, lstm,
                                                                                               first, second);
    check_launch("recurrent_no_steps_kernel");
    return;
  }
  if (lstm) {
    launch_for_batch<4>(ex.stream, p, first, second, directions, scratch);
  } else {
    launch_for_batch<3>(ex.stream, p, first, second, directions, scratch);
  }
}

}  // namespace aotc::rt::cuda

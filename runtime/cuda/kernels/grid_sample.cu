// grid_sample.cu - 2-d grid sampling (GridSampleParams, as the CPU kernel takes it), bilinear
// or nearest, with zeros, border or reflection padding. One thread per output position
// (image, row, column: consecutive threads along an output row) computes its source cells
// and weights once, as the CPU kernel does (torch's grid_sampler_compute_source_index in
// float, the fused multiply-add where the CPU's compiler fuses one and nowhere else, so that
// nearest sampling picks the CPU's cells bit for bit), and applies them to the channels
// blockIdx.y, blockIdx.y + gridDim.y, ... (the grid's second dim spreads the channels where
// the positions alone would not fill the GPU).
#include <aotc/rt/cuda/kernels_cuda.h>

#include <algorithm>

namespace aotc::rt::cuda {
namespace {

// Reflects `in` into [twice_low / 2, twice_high / 2] (torch's reflect_coordinates).
__device__ float reflect(float in, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0.0f;
  const float min = static_cast<float>(twice_low) / 2.0f;
  const float span = static_cast<float>(twice_high - twice_low) / 2.0f;
  in = fabsf(__fsub_rn(in, min));
  const float extra = fmodf(in, span);
  // The CPU's static_cast<int> of the flips is x86's conversion, which gives INT_MIN (even)
  // for a value outside int's range or NaN; the GPU's saturates (INT_MAX is odd).
  const float flips = floorf(in / span);
  const bool even = !(flips >= -2147483648.0f && flips < 2147483648.0f) || static_cast<int>(flips) % 2 == 0;
  return even ? __fadd_rn(extra, min) : __fadd_rn(__fsub_rn(span, extra), min);
}

__device__ __forceinline__ float clip(float v, int64_t size) {
  const float hi = static_cast<float>(size - 1);
  return v < 0.0f ? 0.0f : (v > hi ? hi : v);
}

// The source coordinate of a normalised grid value along a dim of `size` cells.
__device__ float source_coordinate(const GridSampleParams& p, float coord, int64_t size) {
  const float shifted = __fadd_rn(coord, 1.0f);
  float v = p.align_corners ? __fmul_rn(__fmul_rn(shifted, 0.5f), static_cast<float>(size - 1))
                            : __fmul_rn(fmaf(shifted, static_cast<float>(size), -1.0f), 0.5f);
  if (p.padding == GridSamplePadding::Border) {
    v = clip(v, size);
  } else if (p.padding == GridSamplePadding::Reflection) {
    v = p.align_corners ? reflect(v, 0, 2 * (size - 1)) : reflect(v, -1, 2 * size - 1);
    v = clip(v, size);
  }
  // torch's safe_downgrade_to_int_range: far out (or NaN) becomes a cell no tap reaches.
  if (!(fabsf(v) < 1e9f)) v = -100.0f;
  return v;
}

__device__ __forceinline__ bool inside(int64_t i, int64_t size) { return i >= 0 && i < size; }

__global__ void grid_sample_kernel(int64_t positions, GridSampleParams p, const float* __restrict__ x,
                                   const float* __restrict__ grid, float* __restrict__ y) {
  const int64_t pos = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pos >= positions) return;
  const int64_t plane_in = p.h_in * p.w_in, plane_out = p.h_out * p.w_out;
  const int64_t img = pos / plane_out, at = pos - img * plane_out;
  float* yi = y + img * p.c * plane_out + at;
  if (plane_in <= 0) {  // an empty input: nothing to sample (the CPU kernel would read outside it)
    for (int64_t ch = blockIdx.y; ch < p.c; ch += gridDim.y) yi[ch * plane_out] = 0.0f;
    return;
  }
  const float ix = source_coordinate(p, grid[2 * pos], p.w_in);
  const float iy = source_coordinate(p, grid[2 * pos + 1], p.h_in);
  const float* xi = x + img * p.c * plane_in;
  if (p.mode == GridSampleMode::Nearest) {
    const auto cx = static_cast<int64_t>(rintf(ix)), cy = static_cast<int64_t>(rintf(iy));
    const bool ok = inside(cx, p.w_in) && inside(cy, p.h_in);
    const int64_t offset = ok ? cy * p.w_in + cx : 0;
    for (int64_t ch = blockIdx.y; ch < p.c; ch += gridDim.y)
      yi[ch * plane_out] = ok ? xi[ch * plane_in + offset] : 0.0f;
    return;
  }
  const float fx = floorf(ix), fy = floorf(iy);
  const auto x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
  const int64_t x1 = x0 + 1, y1 = y0 + 1;
  const float wx1 = __fsub_rn(ix, fx), wy1 = __fsub_rn(iy, fy);
  const float wx0 = __fsub_rn(1.0f, wx1), wy0 = __fsub_rn(1.0f, wy1);
  // Corners outside the input contribute nothing (zeros; border and reflection keep the
  // position inside, so only its +1 neighbours can fall outside).
  const float w00 = inside(x0, p.w_in) && inside(y0, p.h_in) ? __fmul_rn(wx0, wy0) : 0.0f;
  const float w01 = inside(x1, p.w_in) && inside(y0, p.h_in) ? __fmul_rn(wx1, wy0) : 0.0f;
  const float w10 = inside(x0, p.w_in) && inside(y1, p.h_in) ? __fmul_rn(wx0, wy1) : 0.0f;
  const float w11 = inside(x1, p.w_in) && inside(y1, p.h_in) ? __fmul_rn(wx1, wy1) : 0.0f;
  // Clamped cells for the loads (their weight is 0 when they were outside).
  const int64_t cx0 = min(max(x0, int64_t{0}), p.w_in - 1), cx1 = min(max(x1, int64_t{0}), p.w_in - 1);
  const int64_t cy0 = min(max(y0, int64_t{0}), p.h_in - 1), cy1 = min(max(y1, int64_t{0}), p.h_in - 1);
  const int64_t o00 = cy0 * p.w_in + cx0, o01 = cy0 * p.w_in + cx1;
  const int64_t o10 = cy1 * p.w_in + cx0, o11 = cy1 * p.w_in + cx1;
  for (int64_t ch = blockIdx.y; ch < p.c; ch += gridDim.y) {
    const float* xp = xi + ch * plane_in;
    // The CPU's sum as its compiler (g++ 12) fuses it: the (0, 1) corner's product, the
    // others added to it by fused multiply-adds.
    float v = __fmul_rn(xp[o01], w01);
    v = fmaf(xp[o00], w00, v);
    v = fmaf(xp[o10], w10, v);
    yi[ch * plane_out] = fmaf(xp[o11], w11, v);
  }
}

}  // namespace

void grid_sample_f32(cudaStream_t stream, const GridSampleParams& p, const float* x, const float* grid,
                     float* y) {
  if (p.n <= 0 || p.c <= 0 || p.h_out <= 0 || p.w_out <= 0) return;
  const int64_t positions = p.n * p.h_out * p.w_out;
  // About a million threads in all where the channels allow.
  const int64_t wanted = ((int64_t{1} << 20) + positions - 1) / positions;
  const auto channel_blocks =
      static_cast<unsigned>(std::max(int64_t{1}, std::min({wanted, p.c, int64_t{65535}})));
  grid_sample_kernel<<<dim3(blocks_for(positions), channel_blocks), kThreads, 0, stream>>>(positions, p, x,
                                                                                           grid, y);
  check_launch("grid_sample_kernel");
}

}  // namespace aotc::rt::cuda

// adaptive_avg_pool2d_nhwc.cu - adaptive average pooling of an NHWC tensor
// (convert_to_channels_last.cpp), bins as torch computes them (floor start, ceil end):
//   - a thread per output element, consecutive threads consecutive channels: the global
//     pooling that ends a CNN (7x7 -> 1x1 over 2048 channels) reads each pixel's channels
//     as one run;
//   - for bins of kBlockBin values or more (a squeeze-and-excitation block's pooling of a
//     112x112 plane), a block per output pixel and kGroup channels: its rows of threads take
//     the bin's pixels in turn, each row reading kGroup neighbouring channels (one 32-byte
//     sector), and the rows' sums add up in shared memory in a fixed order;
//   - global pooling (a 1x1 output), in blocks that each add a chunk of kChunk pixels for
//     32 lanes of channels, each lane V neighbouring channels read as one 16-byte load where
//     the channel count and the input's address allow (8 in 16 bits, 4 in float32); planes
//     of more than one chunk add the chunks' sums, kept in the scratch, in a second step
//     (global_pool_sum, also the last step of depthwise_conv2d_nhwc's pooling), 8 rows of
//     threads a channel in a fixed order. At batch 1 the block per output and 8 channels
//     left the GPU nearly idle (4 blocks for a 112x112 plane of 32 channels), and at batch
//     32 the thread per output read 7x7 planes 2 bytes at a time, at a third of the
//     bandwidth.
// An input kept in the 16-bit type of --precision fp16 / bf16 (store_activations_16bit.cpp:
// a squeeze-and-excitation block's activation) is read in it; sums and output in float32.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/pool2d_plan.h>
#include <aotc/rt/cuda/lowp.cuh>

#include <algorithm>
#include <cstdint>

namespace aotc::rt::cuda {
namespace {

template <class T>
__global__ void adaptive_avg_pool2d_nhwc_kernel(int64_t total, int64_t c, int64_t h_in, int64_t w_in,
                                                int64_t h_out, int64_t w_out, const T* __restrict__ x,
                                                float* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t ch = i % c;
  const int64_t pixel = i / c;
  const int64_t ow = pixel % w_out;
  const int64_t oh = (pixel / w_out) % h_out;
  const int64_t image = pixel / (w_out * h_out);
  const int64_t ih0 = (oh * h_in) / h_out, ih1 = ((oh + 1) * h_in + h_out - 1) / h_out;
  const int64_t iw0 = (ow * w_in) / w_out, iw1 = ((ow + 1) * w_in + w_out - 1) / w_out;
  const T* xp = x + image * h_in * w_in * c + ch;
  float sum = 0.0f;
  for (int64_t ih = ih0; ih < ih1; ++ih)
    for (int64_t iw = iw0; iw < iw1; ++iw) sum += widen(xp[(ih * w_in + iw) * c]);
  y[i] = sum / static_cast<float>((ih1 - ih0) * (iw1 - iw0));
}

constexpr int64_t kBlockBin = 128;
constexpr unsigned kGroup = 8;

// blockIdx.x: (image, output pixel, group of kGroup channels); threadIdx.x the channel in
// the group, threadIdx.y the row of threads (blockDim.y a power of two).
template <class T>
__global__ void adaptive_avg_pool2d_nhwc_block_kernel(int64_t c, int64_t h_in, int64_t w_in, int64_t h_out,
                                                      int64_t w_out, const T* __restrict__ x,
                                                      float* __restrict__ y) {
  extern __shared__ float partial[];  // blockDim.y x kGroup
  const int64_t groups = (c + kGroup - 1) / kGroup;
  const int64_t group = blockIdx.x % groups, pixel = blockIdx.x / groups;
  const int64_t ow = pixel % w_out, oh = (pixel / w_out) % h_out, image = pixel / (w_out * h_out);
  const int64_t ih0 = (oh * h_in) / h_out, ih1 = ((oh + 1) * h_in + h_out - 1) / h_out;
  const int64_t iw0 = (ow * w_in) / w_out, iw1 = ((ow + 1) * w_in + w_out - 1) / w_out;
  // The launch checks that a bin's pixel count fits 32 bits.
  const unsigned bw = static_cast<unsigned>(iw1 - iw0), count = static_cast<unsigned>((ih1 - ih0) * bw);
  const int64_t ch = group * kGroup + threadIdx.x;
  float sum = 0.0f;
  if (ch < c) {
    const T* xp = x + (image * h_in + ih0) * w_in * c + iw0 * c + ch;
    for (unsigned k = threadIdx.y; k < count; k += blockDim.y) {
      const unsigned row = k / bw, col = k - row * bw;
      sum += widen(xp[(static_cast<int64_t>(row) * w_in + col) * c]);
    }
  }
  float* mine = partial + threadIdx.y * kGroup + threadIdx.x;
  *mine = sum;
  __syncthreads();
  for (unsigned half = blockDim.y / 2; half > 0; half /= 2) {
    if (threadIdx.y < half) *mine += mine[half * kGroup];
    __syncthreads();
  }
  if (threadIdx.y == 0 && ch < c) y[pixel * c + ch] = *mine / static_cast<float>(count);
}

constexpr unsigned kChunk = static_cast<unsigned>(kGlobalPoolChunk);

// Step 1: blockIdx.x is (image, chunk of kChunk pixels, group of 32 lanes of V channels);
// threadIdx.x the lane, threadIdx.y one of 8 rows of threads taking every 8th pixel of the
// chunk. A plane of one chunk is done: its means go to y; otherwise the sums go to partial.
template <class T, int V>
__global__ void global_pool_chunks_kernel(unsigned c, unsigned pixels, unsigned chunks,
                                          const T* __restrict__ x, float* __restrict__ partial,
                                          float* __restrict__ y) {
  __shared__ float rows[8][V][32];
  const unsigned groups = (c + 32 * V - 1) / (32 * V);
  const unsigned group = blockIdx.x % groups, rest = blockIdx.x / groups;
  const unsigned chunk = rest % chunks, image = rest / chunks;
  const unsigned ch = (group * 32 + threadIdx.x) * V;  // c is a multiple of V
  float sum[V] = {};
  if (ch < c) {
    const unsigned end = min(pixels, (chunk + 1) * kChunk);
    for (unsigned px = chunk * kChunk + threadIdx.y; px < end; px += 8) {
      const Pack<T, V> p = *reinterpret_cast<const Pack<T, V>*>(x + (image * pixels + px) * c + ch);
#pragma unroll
      for (int k = 0; k < V; ++k) sum[k] += widen(p.v[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < V; ++k) rows[threadIdx.y][k][threadIdx.x] = sum[k];
  __syncthreads();
  if (threadIdx.y != 0 || ch >= c) return;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    float total = rows[0][k][threadIdx.x];
    for (int r = 1; r < 8; ++r) total += rows[r][k][threadIdx.x];
    if (chunks == 1)
      y[image * c + ch + k] = total / static_cast<float>(pixels);
    else
      partial[(image * chunks + chunk) * c + ch + k] = total;
  }
}

template <class T, int V>
void launch_global_pool_chunks(cudaStream_t stream, unsigned n, unsigned c, unsigned pixels, unsigned chunks,
                               const T* x, float* partial, float* y) {
  const unsigned blocks = n * chunks * ((c + 32 * V - 1) / (32 * V));
  global_pool_chunks_kernel<T, V><<<blocks, dim3(32, 8), 0, stream>>>(c, pixels, chunks, x, partial, y);
  check_launch("global_pool_chunks_kernel");
}

// Step 2: blockIdx.x is (image, group of 32 channels); threadIdx.x the channel in the
// group, threadIdx.y one of 8 rows of threads, each adding every 8th chunk in order; the rows'
// sums are then added in a fixed order, so every run gives the same result. (A thread per
// channel adding all of a 112x112 plane's 196 chunks left the GPU nearly idle.)
__global__ void global_pool_sum_kernel(unsigned c, unsigned pixels, unsigned chunks,
                                       const float* __restrict__ partial, float* __restrict__ y) {
  __shared__ float rows[8][32];
  const unsigned groups = (c + 31) / 32;
  const unsigned group = blockIdx.x % groups, image = blockIdx.x / groups;
  const unsigned ch = group * 32 + threadIdx.x;
  float sum = 0.0f;
  if (ch < c) {
    const float* p = partial + image * chunks * c + ch;
    for (unsigned k = threadIdx.y; k < chunks; k += 8) sum += p[k * c];
  }
  rows[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || ch >= c) return;
  float total = rows[0][threadIdx.x];
  for (int r = 1; r < 8; ++r) total += rows[r][threadIdx.x];
  y[image * c + ch] = total / static_cast<float>(pixels);
}

template <class T>
void pool(cudaStream_t stream, int64_t n, int64_t c, int64_t h_in, int64_t w_in, int64_t h_out, int64_t w_out,
          const T* x, float* y, float* scratch) {
  const int64_t total = n * c * h_out * w_out;
  if (total <= 0) return;
  const bool global = adaptive_avg_pool2d_nhwc_global(n, c, h_in, w_in, h_out, w_out);
  const auto pixels = global ? static_cast<unsigned>(h_in * w_in) : 0u,
             chunks = (pixels + kChunk - 1) / kChunk;
  if (global && (chunks == 1 || scratch)) {
    const auto images = static_cast<unsigned>(n), channels = static_cast<unsigned>(c);
    constexpr int kLanes = 16 / sizeof(T);
    if (channels % kLanes == 0 && pack_aligned(x, sizeof(Pack<T, kLanes>)))
      launch_global_pool_chunks<T, kLanes>(stream, images, channels, pixels, chunks, x, scratch, y);
    else
      launch_global_pool_chunks<T, 1>(stream, images, channels, pixels, chunks, x, scratch, y);
    if (chunks > 1) global_pool_sum(stream, n, c, pixels, chunks, scratch, y);
    return;
  }
  // The largest bin: every bin spans at most ceil(h_in / h_out) + 1 rows, likewise columns.
  const int64_t largest = std::min(h_in, h_in / h_out + 2) * std::min(w_in, w_in / w_out + 2);
  const int64_t smallest = (h_in / h_out) * (w_in / w_out);
  const int64_t blocks = n * h_out * w_out * ((c + kGroup - 1) / kGroup);
  if (smallest >= kBlockBin && largest < (int64_t{1} << 31) && blocks < (int64_t{1} << 31)) {
    const unsigned rows = largest >= 8192 ? 128 : largest >= 1024 ? 32 : 16;
    adaptive_avg_pool2d_nhwc_block_kernel<T>
        <<<static_cast<unsigned>(blocks), dim3(kGroup, rows), rows * kGroup * sizeof(float), stream>>>(
            c, h_in, w_in, h_out, w_out, x, y);
    check_launch("adaptive_avg_pool2d_nhwc_block_kernel");
    return;
  }
  adaptive_avg_pool2d_nhwc_kernel<T>
      <<<blocks_for(total), kThreads, 0, stream>>>(total, c, h_in, w_in, h_out, w_out, x, y);
  check_launch("adaptive_avg_pool2d_nhwc_kernel");
}

}  // namespace

void global_pool_sum(cudaStream_t stream, int64_t n, int64_t c, int64_t pixels, int64_t chunks,
                     const float* partial, float* y) {
  const int64_t total = n * c;
  if (total <= 0) return;
  if (pixels <= 0 || chunks <= 0) {
    note_error("global_pool_sum", "there are no pixels or no chunks to add");
    return;
  }
  if (n * chunks * c > INT32_MAX) {
    note_error("global_pool_sum", "the partial sums are too many for the kernel's 32-bit index arithmetic");
    return;
  }
  const auto blocks = static_cast<unsigned>(n * ((c + 31) / 32));
  global_pool_sum_kernel<<<blocks, dim3(32, 8), 0, stream>>>(
      static_cast<unsigned>(c), static_cast<unsigned>(pixels), static_cast<unsigned>(chunks), partial, y);
  check_launch("global_pool_sum_kernel");
}

void adaptive_avg_pool2d_nhwc_f32(cudaStream_t stream, int64_t n, int64_t c, int64_t h_in, int64_t w_in,
                                  int64_t h_out, int64_t w_out, const float* x, float* y, float* scratch) {
  pool(stream, n, c, h_in, w_in, h_out, w_out, x, y, scratch);
}

void adaptive_avg_pool2d_nhwc(cudaStream_t stream, Precision storage, int64_t n, int64_t c, int64_t h_in,
                              int64_t w_in, int64_t h_out, int64_t w_out, const void* x, float* y,
                              float* scratch) {
  if (storage == Precision::Fp16)
    pool(stream, n, c, h_in, w_in, h_out, w_out, static_cast<const __half*>(x), y, scratch);
  else if (storage == Precision::Bf16)
    pool(stream, n, c, h_in, w_in, h_out, w_out, static_cast<const __nv_bfloat16*>(x), y, scratch);
  else
    pool(stream, n, c, h_in, w_in, h_out, w_out, static_cast<const float*>(x), y, scratch);
}

}  // namespace aotc::rt::cuda

// vol2col.cu - unfolds the receptive fields of 3-d convolutions (conv3d.cu) into columns, so
// that each image-group is one GEMM: col[img][(c, kd, kh, kw)][j] is the input value that tap
// (kd, kh, kw) of channel c reads for output position first_column + j, zero in the padding.
// As im2col.cu: a thread writes kVec consecutive positions of one row, consecutive threads
// consecutive runs (coalesced stores, and coalesced loads at stride 1), row after row, so
// blocks stay full however short a row is; a thread divides once for its run and walks the
// output positions from there; rows of whole vectors are stored as float4. 32-bit index
// arithmetic within a row (the launcher checks that it fits), 64-bit offsets.
#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/cuda/index_nd.cuh>

#include <cstdint>

namespace aotc::rt::cuda {
namespace {

constexpr int kVec = 4;  // output positions per thread

struct Vol2colShape : Window3d {
  int c_in;
  int first_column, columns;
};

// Rows first_row.. of the columns, runs_per_row runs of kVec positions each, runs in all.
template <bool kVectorStore>
__global__ void vol2col_kernel(Vol2colShape s, int first_row, int runs_per_row, int runs,
                               const float* __restrict__ x, float* __restrict__ col) {
  const unsigned thread = blockIdx.x * blockDim.x + threadIdx.x;  // runs + 255 fits, int may not
  if (thread >= static_cast<unsigned>(runs)) return;
  const int run = static_cast<int>(thread);
  const int row_in_slice = run / runs_per_row;
  const int j0 = (run - row_in_slice * runs_per_row) * kVec;
  const int row = first_row + row_in_slice;  // (image * c_in + c) * taps + tap
  const int taps = s.kernel[0] * s.kernel[1] * s.kernel[2];
  const int plane = row / taps;  // image * c_in + c
  const int tap = row - plane * taps;
  const int kd = tap / (s.kernel[1] * s.kernel[2]);
  const int khw = tap - kd * s.kernel[1] * s.kernel[2];
  const int kh = khw / s.kernel[2], kw = khw - kh * s.kernel[2];
  const float* const xp = x + static_cast<int64_t>(plane) * s.in[0] * s.in[1] * s.in[2];
  const int pos = s.first_column + j0;
  // The walk below steps plain ints: stepping a Pos3d's fields compiles to more selects.
  const Pos3d first = out_pos3d(s, pos);
  int od = first.d, oh = first.h, ow = first.w;
  const int dd = kd * s.dilation[0] - s.pad[0], dh = kh * s.dilation[1] - s.pad[1],
            dw = kw * s.dilation[2] - s.pad[2];
  float v[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    float value = 0.0f;
    const int id = od * s.stride[0] + dd, ih = oh * s.stride[1] + dh, iw = ow * s.stride[2] + dw;
    if (j0 + j < s.columns && id >= 0 && id < s.in[0] && ih >= 0 && ih < s.in[1] && iw >= 0 && iw < s.in[2])
      value = xp[(id * s.in[1] + ih) * s.in[2] + iw];
    v[j] = value;
    if (++ow == s.out[2]) {
      ow = 0;
      if (++oh == s.out[1]) {
        oh = 0;
        ++od;
      }
    }
  }
  float* const out = col + static_cast<int64_t>(row) * s.columns + j0;
  if constexpr (kVectorStore) {
    // columns % kVec == 0: the run is whole and its address a multiple of kVec elements.
    *reinterpret_cast<float4*>(out) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      if (j0 + j < s.columns) out[j] = v[j];
  }
}

}  // namespace

void vol2col_f32(cudaStream_t stream, const ConvNdParams& p, int64_t images, int64_t first_column,
                 int64_t columns, const float* x, float* col) {
  const int64_t taps = conv_nd_volume(p.kernel);
  const int64_t rows = images * p.c_in * taps;
  if (rows <= 0 || columns <= 0) return;
  if (!window3d_fits_int32(p, false) || rows > kWindow3dMax || first_column < 0 ||
      first_column + columns > conv_nd_volume(p.out)) {
    note_error("vol2col", "the convolution is too large for the vol2col kernel");
    return;
  }
  Vol2colShape s{window3d(p)};
  s.c_in = static_cast<int>(p.c_in);
  s.first_column = static_cast<int>(first_column);
  s.columns = static_cast<int>(columns);
  // The vector store needs every row to start on a vector: the scratch is 256-byte aligned.
  const bool vector_store = columns % kVec == 0 && reinterpret_cast<uintptr_t>(col) % 16 == 0;
  const int64_t runs_per_row = (columns + kVec - 1) / kVec;
  // Run indices are 32-bit: more rows than that go in slices.
  const int64_t slice_rows = ((int64_t{1} << 31) - 1 - kThreads) / runs_per_row;
  for (int64_t first = 0; first < rows; first += slice_rows) {
    const int64_t runs = (rows - first < slice_rows ? rows - first : slice_rows) * runs_per_row;
    const auto launch = vector_store ? vol2col_kernel<true> : vol2col_kernel<false>;
    launch<<<blocks_for(runs), kThreads, 0, stream>>>(
        s, static_cast<int>(first), static_cast<int>(runs_per_row), static_cast<int>(runs), x, col);
    check_launch("vol2col_kernel");
  }
}

}  // namespace aotc::rt::cuda

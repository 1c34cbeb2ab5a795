// index_nd.cuh - index arithmetic that several library kernels (runtime/cuda/kernels/)
// share, so that each formula is written once: output positions and windows of the 3-d
// pooling and convolution kernels, the reading of index tensors, the layout of reductions
// over any set of dims. Each helper keeps the integer width its kernels use: 64-bit for
// the pooling kernels, 32-bit positions for the convolution kernels whose launcher checks
// that they fit (a 32-bit division costs several times less).
#pragma once

#include <aotc/rt/kernels.h>

#include <cstdint>

namespace aotc::rt::cuda {

// --- 3-d pooling over N x C x D x H x W planes, 64-bit ---------------------------------

// An output element's plane (image * channels + channel) and position in it.
struct OutElement3d {
  int64_t plane, d, h, w;
};
// The output element of flat index i, out the output's d, h, w sizes.
__device__ __forceinline__ OutElement3d out_element3d(int64_t i, const int64_t (&out)[3]) {
  OutElement3d o;
  o.w = i % out[2];
  o.h = (i / out[2]) % out[1];
  o.d = (i / (out[2] * out[1])) % out[0];
  o.plane = i / (out[2] * out[1] * out[0]);
  return o;
}

struct IndexRange {
  int64_t lo, hi;  // [lo, hi)
};
// Output bin o of an adaptive pool (out bins over in positions) covers the input positions
// [floor(o * in / out), ceil((o + 1) * in / out)), as in torch.
__device__ __forceinline__ IndexRange adaptive_bin(int64_t o, int64_t in, int64_t out) {
  return {(o * in) / out, ((o + 1) * in + out - 1) / out};
}

struct Bins3d {
  IndexRange d, h, w;
};
// The input window of adaptive pooling's output element o.
__device__ __forceinline__ Bins3d adaptive_bins3d(const OutElement3d& o, const AdaptivePoolParams& p) {
  return {adaptive_bin(o.d, p.in[0], p.out[0]), adaptive_bin(o.h, p.in[1], p.out[1]),
          adaptive_bin(o.w, p.in[2], p.out[2])};
}

// --- 3-d convolutions with 32-bit positions ---------------------------------------------

// Sizes of a convolution (ConvNdParams) as ints; valid where window3d_fits_int32 holds.
struct Window3d {
  int in[3], out[3], kernel[3], stride[3], pad[3], dilation[3];
};

inline Window3d window3d(const ConvNdParams& p) {
  Window3d g{};
  for (int d = 0; d < 3; ++d) {
    g.in[d] = static_cast<int>(p.in[d]);
    g.out[d] = static_cast<int>(p.out[d]);
    g.kernel[d] = static_cast<int>(p.kernel[d]);
    g.stride[d] = static_cast<int>(p.stride[d]);
    g.pad[d] = static_cast<int>(p.pad[d]);
    g.dilation[d] = static_cast<int>(p.dilation[d]);
  }
  return g;
}

// The bound on every volume and on every term of a position's sum (o * stride, pad,
// k * dilation, ...): two terms added or subtracted stay within an int.
constexpr int64_t kWindow3dMax = int64_t{1} << 30;

// Whether the 32-bit arithmetic of a convolution (transposed: of a transposed one, which
// divides o + pad - k * dilation by the stride) cannot overflow.
inline bool window3d_fits_int32(const ConvNdParams& p, bool transposed) {
  bool fits = conv_nd_volume(p.in) <= kWindow3dMax && conv_nd_volume(p.out) <= kWindow3dMax &&
              conv_nd_volume(p.kernel) <= kWindow3dMax;
  for (int d = 0; d < 3; ++d) {
    fits = fits && p.kernel[d] * p.dilation[d] <= kWindow3dMax;
    if (transposed)
      fits = fits && p.out[d] + p.pad[d] <= kWindow3dMax && p.in[d] * p.stride[d] <= kWindow3dMax &&
             p.stride[d] > 0;
    else
      fits = fits && p.out[d] * p.stride[d] <= kWindow3dMax && p.pad[d] <= kWindow3dMax;
  }
  return fits;
}

// Elements of a d x h x w volume, in 64 bits: n * volume overflows an int.
__device__ __forceinline__ int64_t volume3d(const int (&v)[3]) {
  return static_cast<int64_t>(v[0]) * v[1] * v[2];
}

struct Pos3d {
  int d, h, w;
};
// Position pos (flat within an output volume) as (d, h, w).
__device__ __forceinline__ Pos3d out_pos3d(const Window3d& g, int pos) {
  const int plane_out = g.out[1] * g.out[2];
  Pos3d o;
  o.d = pos / plane_out;
  o.h = (pos - o.d * plane_out) / g.out[2];
  o.w = pos - o.d * plane_out - o.h * g.out[2];
  return o;
}

// Calls f(t, id, ih, iw) for each tap t = (kd * kernel_h + kh) * kernel_w + kw of a
// transposed convolution that reaches output position o, in tap order (the CPU's order
// of additions), with the input position (id, ih, iw) it comes from. Along each dim
// o = i * stride - pad + k * dilation, so i * stride = o + pad - k * dilation: an input
// position where the stride divides it.
template <class F>
__device__ __forceinline__ void for_each_transposed_tap(const Window3d& g, Pos3d o, F&& f) {
  for (int kd = 0; kd < g.kernel[0]; ++kd) {
    const int sd = o.d + g.pad[0] - kd * g.dilation[0];
    if (sd < 0) break;  // and every later kd: sd falls as kd grows
    const int id = sd / g.stride[0];
    if (id * g.stride[0] != sd || id >= g.in[0]) continue;
    for (int kh = 0; kh < g.kernel[1]; ++kh) {
      const int sh = o.h + g.pad[1] - kh * g.dilation[1];
      if (sh < 0) break;
      const int ih = sh / g.stride[1];
      if (ih * g.stride[1] != sh || ih >= g.in[1]) continue;
      for (int kw = 0; kw < g.kernel[2]; ++kw) {
        const int sw = o.w + g.pad[2] - kw * g.dilation[2];
        if (sw < 0) break;
        const int iw = sw / g.stride[2];
        if (iw * g.stride[2] != sw || iw >= g.in[2]) continue;
        f((kd * g.kernel[1] + kh) * g.kernel[2] + kw, id, ih, iw);
      }
    }
  }
}

// --- index tensors (gather, scatter, index_gather) --------------------------------------

// An index value v made a position in [0, size): wrapped once when negative, then clamped,
// as on the CPU (runtime/src/kernels/index_util.h), so that no index reaches outside the
// tensor it indexes.
__device__ __forceinline__ int64_t wrap_index(int64_t v, int64_t size) {
  if (v < 0) v += size;
  return v < 0 ? 0 : (v >= size ? size - 1 : v);
}

// Element i of an index tensor of int64 or int32, made a position in [0, size).
template <class Index>
__device__ __forceinline__ int64_t read_index(const Index* __restrict__ index, int64_t i, int64_t size) {
  return wrap_index(static_cast<int64_t>(index[i]), size);
}

// --- the lines of a scatter (scatter, scatter_reduce) ----------------------------------

// The index space as [outer, line, inner]: `length` positions along dim. Only positions of
// one line (all coordinates but dim equal) can reach the same element of y.
struct ScatterLines {
  int64_t count = 0;  // outer * inner
  int64_t length = 0;
  int64_t inner = 1;
};

inline ScatterLines scatter_lines_of(const ScatterParams& p) {
  ScatterLines lines;
  lines.count = 1;
  for (int d = 0; d < p.rank; ++d) {
    if (d < p.dim) lines.count *= p.dims[d];
    if (d > p.dim) lines.inner *= p.dims[d];
  }
  lines.count *= lines.inner;
  lines.length = p.dims[p.dim];
  return lines;
}

// y's and src's offsets of line l's first position (dim's coordinate 0), and the index's
// through index_strides where given (scatter_reduce's broadcast index).
__device__ __forceinline__ void scatter_line_offsets(const ScatterParams& p, int64_t l, int64_t& y_off,
                                                     int64_t& s_off, const int64_t* index_strides = nullptr,
                                                     int64_t* x_off = nullptr) {
  y_off = s_off = 0;
  int64_t x = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    if (d == p.dim) continue;
    const int64_t c = l % p.dims[d];
    l /= p.dims[d];
    y_off += c * p.y_strides[d];
    s_off += c * p.src_strides[d];
    if (index_strides) x += c * index_strides[d];
  }
  if (x_off) *x_off = x;
}

// The index element of position k of line l.
__device__ __forceinline__ int64_t scatter_index_element(const ScatterLines& lines, int64_t l, int64_t k) {
  return (l / lines.inner) * lines.length * lines.inner + l % lines.inner + k * lines.inner;
}

// --- reductions over any set of dims (reduce, reduce_i64) -------------------------------

// The input split into kept dims (the output's, in order) and reduced dims, each with its
// input stride.
struct ReduceLayout {
  int kept_rank = 0, reduced_rank = 0;
  int64_t kept_dims[8] = {}, kept_strides[8] = {};
  int64_t reduced_dims[8] = {}, reduced_strides[8] = {};
  int64_t outputs = 1, count = 1;  // output elements; input elements per output
};

// The layout of a reduction over p's dims (rank at most 8): size-1 dims dropped, and a dim
// merged into the previous one of the same role (dense row-major: the pair steps through
// memory as one dim of the inner one's stride).
inline ReduceLayout reduce_layout_of(const ReduceParams& p) {
  int64_t strides[8] = {};
  int64_t stride = 1;
  for (int d = p.rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= p.dims[d];
  }
  ReduceLayout l;
  int last = -1;  // role of the previous dim kept in the layout: 0 kept, 1 reduced
  for (int d = 0; d < p.rank; ++d) {
    const int64_t n = p.dims[d];
    if (p.reduce_mask[d]) {
      l.count *= n;
    } else {
      l.outputs *= n;
    }
    if (n == 1) continue;
    const int role = p.reduce_mask[d] ? 1 : 0;
    int64_t* dims = role ? l.reduced_dims : l.kept_dims;
    int64_t* dim_strides = role ? l.reduced_strides : l.kept_strides;
    int& rank = role ? l.reduced_rank : l.kept_rank;
    if (last == role) {
      dims[rank - 1] *= n;
      dim_strides[rank - 1] = strides[d];
    } else {
      dims[rank] = n;
      dim_strides[rank++] = strides[d];
    }
    last = role;
  }
  return l;
}

// The input offset of output element out's first input (every reduced coordinate 0).
__device__ __forceinline__ int64_t kept_offset(const ReduceLayout& l, int64_t out) {
  int64_t base = 0;
  for (int d = l.kept_rank - 1; d >= 0; --d) {
    base += (out % l.kept_dims[d]) * l.kept_strides[d];
    out /= l.kept_dims[d];
  }
  return base;
}

// The input offset of an output's j-th input (row-major over the reduced dims), base its
// kept_offset.
__device__ __forceinline__ int64_t reduced_offset(const ReduceLayout& l, int64_t base, int64_t j) {
  for (int d = l.reduced_rank - 1; d >= 0; --d) {
    base += (j % l.reduced_dims[d]) * l.reduced_strides[d];
    j /= l.reduced_dims[d];
  }
  return base;
}

}  // namespace aotc::rt::cuda

// conv2d_expand_depthwise.cpp - a 1x1 expansion and the depthwise convolution that alone
// reads it, in one pass (kernels/conv.h, "A 1x1 expansion fused with the depthwise
// convolution"). Why: mobilenet_v2's expansions write 4.8 MB (96 x 112 x 112) or 1.8 MB
// (144 x 56 x 56) that the depthwise convolution reads back, and the depthwise kernel then
// interleaves 8 planes at a time into lanes; here the expansion writes its rows straight
// into the lane layout, in a ring of rows that stays in L2.
//
// Work item: one image, a part of its output rows (all of them unless the units are few for
// the threads) and a chunk of expanded channels (units of 8). Its ring holds rows
// of the zero-padded expanded image, one ring per unit, position-major as the 8-channel
// depthwise kernel's buffer: padded row r, column c, lane l of unit u at
// ring[u * unit_floats + ((r % ring_rows) * cols + c) * 8 + l]. For a strip of output rows
// the rows they read that are not in the ring yet are computed: positions of those image
// rows, 6 at a time, times the packed weight's 16-channel panels on the CPU micro-kernel
// (the positions are the broadcast operand, gathered from the channel planes of x 48 at a
// time by 8 x 8 transposes; a tile's two 8-channel halves go to two units), straight into
// the rings. Then each output row runs depthwise_lanes_row on a unit's rows, which stay in
// L1 (a whole-chunk position-major layout made those reads strided: slower than the two
// separate convolutions on mobilenet_v2's first blocks).
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>

#include "gemm_micro_kernel.h"
#include "kernel_util.h"

namespace aotc::rt {
namespace {

using detail::ceil_div;
using detail::kMr;
using detail::kNr;
using detail::max_i64;
using detail::min_i64;
constexpr int64_t kLanes = expand_depthwise::kLanes;
constexpr int64_t kMaxTaps = expand_depthwise::kMaxTaps;
constexpr int64_t kPiece = expand_depthwise::kPiece;

// What every work item of one call shares.
struct Layer {
  const Conv2dParams& pw;
  const Conv2dParams& dw;
  const float* x;
  const float* w1;  // packed: depth blocks of kc, 16-channel panels
  const float* b1;
  const float* w2;
  const float* b2;
  float* y;
  int64_t cols, span, kc, n16;
  bool expand_silu;
};

// One chunk of channels [c0, c0 + cw) of one image, output rows [oh_begin, oh_end), with its
// ring in `ring`.
struct Chunk {
  int64_t img, c0, cw;
  int64_t oh_begin, oh_end;
  int64_t ring_rows;
  int64_t unit_floats;  // one unit's ring: ring_rows * cols positions of 8, then slack
  float* ring;
  float* pack;  // kPiece x kc
};

// Positions [p0, p0 + count) of x's planes from `planes` (plane stride hw), depth [k0, k0 +
// kcur), as rows of kcur floats: pack[(p - p0) * kcur + kk]. 8 x 8 blocks go through a vector
// transpose (the scalar gather was a third of the expansion's overhead).
void pack_positions(const float* planes, int64_t hw, int64_t p0, int64_t count, int64_t k0, int64_t kcur,
                    float* pack) {
  int64_t kk = 0;
#if AOTC_KERNELS_AVX2
  for (; kk + kLanes <= kcur; kk += kLanes) {
    int64_t p = 0;
    for (; p + kLanes <= count; p += kLanes) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(planes + (k0 + kk + i) * hw + p0 + p);
      detail::transpose8x8(r);  // r[i]: position p + i, channels kk .. kk + 7
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(pack + (p + i) * kcur + kk, r[i]);
    }
    for (; p < count; ++p)
      for (int64_t i = 0; i < kLanes; ++i) pack[p * kcur + kk + i] = planes[(k0 + kk + i) * hw + p0 + p];
  }
#endif
  for (; kk < kcur; ++kk) {
    const float* src = planes + (k0 + kk) * hw + p0;
    for (int64_t p = 0; p < count; ++p) pack[p * kcur + kk] = src[p];
  }
}

// Expanded image rows [ih0, ih1) of the chunk into the ring: clamp(W1 x + b1) per position.
// The positions run flat over those rows, in pieces of kPiece (packed once per depth block)
// and 6 to a tile; where a tile's positions are consecutive columns of one ring row (the
// common case) the micro-kernel writes them in place (ldc 8, the tile's second 8 channels
// one unit further), else through tile_out and a copy per position (a tile across the end of
// an image row, or over columns that the depthwise never reads). Positions are followed by
// steps: a division per position cost 40% of the layer.
void expand_rows(const Layer& l, const Chunk& ch, int64_t ih0, int64_t ih1) {
  const Conv2dParams& pw = l.pw;
  const int64_t hw = pw.h_in * pw.w_in, k = pw.c_in;
  const int64_t positions = (ih1 - ih0) * pw.w_in;
  const float* xi = l.x + ch.img * pw.c_in * hw + ih0 * pw.w_in;
  detail::Tile t{};
  t.ldb = kNr;
  t.lo = pw.clamp_lo;
  t.hi = pw.clamp_hi;
  t.clamp = detail::has_clamp(pw.clamp_lo, pw.clamp_hi);
  alignas(32) float tile_out[kMr * kNr], col_pad[kNr], res_pad[kMr * kNr];
  float* at[kPiece];  // each position's place in the ring (unit 0), or null: not read
  int64_t ix = 0, ring_row = (ih0 + l.dw.pad_h) % ch.ring_rows;  // where the next position goes
  for (int64_t q0 = 0; q0 < positions; q0 += kPiece) {
    const int64_t count = min_i64(kPiece, positions - q0);
    for (int64_t q = 0; q < count; ++q) {
      const int64_t col = ix + l.dw.pad_w;
      at[q] = col < l.cols ? ch.ring + (ring_row * l.cols + col) * kLanes : nullptr;
      if (++ix == pw.w_in) {
        ix = 0;
        ring_row = ring_row + 1 == ch.ring_rows ? 0 : ring_row + 1;
      }
    }
    for (int64_t k0 = 0; k0 < k; k0 += l.kc) {
      const int64_t kcur = min_i64(l.kc, k - k0);
      pack_positions(xi, hw, q0, count, k0, kcur, ch.pack);
      t.lda = kcur;
      t.kc = kcur;
      t.first = k0 == 0;
      t.last = k0 + kcur >= k;
      const float* block = l.w1 + k0 * l.n16;
      for (int64_t p0 = 0; p0 < count; p0 += kMr) {
        const int64_t rows = min_i64(kMr, count - p0);
        float* const* tile_at = at + p0;
        bool direct = tile_at[0] != nullptr;
        for (int64_t r = 1; r < rows; ++r) direct = direct && tile_at[r] == tile_at[0] + r * kLanes;
        t.a = ch.pack + p0 * kcur;
        for (int64_t c = ch.c0; c < ch.c0 + ch.cw;) {
          // A unit of 8 may start half way into a 16-channel panel: then an 8-wide tile.
          const int64_t j0 = c % kNr, cols = min_i64(kNr - j0, ch.c0 + ch.cw - c);
          t.b = block + c / kNr * kcur * kNr + j0;
          t.cols = cols;
          t.bias = nullptr;
          t.col_bias = l.b1 ? l.b1 + c : nullptr;
          t.res = nullptr;
          const int64_t unit_offset = (c - ch.c0) / kLanes * ch.unit_floats;
          if (direct) {
            t.c = tile_at[0] + unit_offset;
            t.ldc = kLanes;
            t.c_half = ch.unit_floats;
          } else {
            t.c = tile_out;
            t.ldc = kNr;
            t.c_half = kLanes;
          }
          // Through tile_out: half h of row r (channels 8h ..) is 8 floats of unit h's lane run.
          auto copy = [&](bool to_ring) {
            for (int64_t r = 0; r < rows; ++r) {
              if (!tile_at[r]) continue;
              for (int64_t h = 0; h * kLanes < cols; ++h) {
                float* ring = tile_at[r] + unit_offset + h * ch.unit_floats;
                float* out = tile_out + r * kNr + h * kLanes;
                const int64_t n = min_i64(kLanes, cols - h * kLanes);
                for (int64_t j = 0; j < n; ++j) (to_ring ? ring[j] : out[j]) = (to_ring ? out[j] : ring[j]);
              }
            }
          };
          if (!direct && !t.first) copy(false);  // the sums so far, back from the rings
          detail::pad_ragged_operands(t, rows, col_pad, res_pad);
          (cols > kLanes ? detail::tile_fn<2>(rows) : detail::tile_fn<1>(rows))(t);
          if (!direct) copy(true);
          c += cols;
        }
      }
    }
  }
}

void run_chunk(const Layer& l, const Chunk& ch, float* w8) {
  const Conv2dParams& dw = l.dw;
  const int64_t taps = dw.kernel_h * dw.kernel_w;
  const int64_t units = ceil_div(ch.cw, kLanes);
  float* b8 = w8 + units * taps * kLanes;
  for (int64_t u = 0; u < units; ++u)
    for (int64_t lane = 0; lane < kLanes; ++lane) {
      const int64_t c = ch.c0 + u * kLanes + lane;
      const bool in = c < ch.c0 + ch.cw;
      for (int64_t t = 0; t < taps; ++t) w8[(u * taps + t) * kLanes + lane] = in ? l.w2[c * taps + t] : 0.0f;
      b8[u * kLanes + lane] = in && l.b2 ? l.b2[c] : 0.0f;
    }
  // Zero once what the expansion never writes and the depthwise reads: padding columns,
  // padding rows above the image, the slack past the last row, and the lanes past the chunk
  // (its whole last unit when the chunk ends inside one). Every other ring position holds an
  // image row's expansion before it is read; rows below the image are zeroed as they enter.
  // Zeroing the whole ring (256 KiB a chunk on mobilenet_v2's large layers) was 6x more.
  const int64_t row_floats = l.cols * kLanes, rows_floats = ch.ring_rows * row_floats;
  const int64_t img_lo = min_i64(dw.pad_w, l.cols), img_hi = min_i64(dw.pad_w + dw.w_in, l.cols);
  const int64_t top_rows = min_i64(dw.pad_h, ch.ring_rows);
  auto zero = [](float* at, int64_t floats) {
    for (int64_t i = 0; i < floats; ++i) at[i] = 0.0f;
  };
  for (int64_t u = 0; u < units; ++u) {
    float* ring = ch.ring + u * ch.unit_floats;
    if ((u + 1) * kLanes > ch.cw) {
      zero(ring, ch.unit_floats);
      continue;
    }
    zero(ring, top_rows * row_floats);
    for (int64_t r = top_rows; r < ch.ring_rows; ++r) {
      zero(ring + r * row_floats, img_lo * kLanes);
      zero(ring + r * row_floats + img_hi * kLanes, (l.cols - img_hi) * kLanes);
    }
    zero(ring + rows_floats, ch.unit_floats - rows_floats);
  }
  const int64_t strip = (ch.ring_rows - l.span) / dw.stride_h + 1;
  const bool clamp = detail::has_clamp(dw.clamp_lo, dw.clamp_hi);
  const int64_t hw_out = dw.h_out * dw.w_out;
  int64_t next = 0;  // the next padded row to enter the ring
  for (int64_t oh0 = ch.oh_begin; oh0 < ch.oh_end; oh0 += strip) {
    const int64_t rows_out = min_i64(strip, ch.oh_end - oh0);
    const int64_t end = (oh0 + rows_out - 1) * dw.stride_h + l.span;  // padded rows needed: [.., end)
    next = max_i64(next, oh0 * dw.stride_h);
    if (next < end) {
      // Image rows among [next, end) are expanded; padding rows below the image zeroed.
      const int64_t ih0 = max_i64(0, next - dw.pad_h), ih1 = min_i64(dw.h_in, end - dw.pad_h);
      if (ih0 < ih1) {
        expand_rows(l, ch, ih0, ih1);
        // silu over the new rows whole: their padding columns and the lanes past the chunk
        // are 0, and silu(0) is 0.
        if (l.expand_silu)
          for (int64_t u = 0; u < units; ++u)
            for (int64_t ih = ih0; ih < ih1; ++ih) {
              float* row = ch.ring + u * ch.unit_floats + ((ih + dw.pad_h) % ch.ring_rows) * l.cols * kLanes;
              detail::silu_f32(row, row, l.cols * kLanes);
            }
      }
      for (int64_t r = max_i64(next, dw.pad_h + dw.h_in); r < end; ++r)
        for (int64_t u = 0; u < units; ++u) {
          float* row = ch.ring + u * ch.unit_floats + (r % ch.ring_rows) * l.cols * kLanes;
          for (int64_t i = 0; i < l.cols * kLanes; ++i) row[i] = 0.0f;
        }
      next = end;
    }
    for (int64_t u = 0; u < units; ++u) {
      const int64_t lanes = min_i64(kLanes, ch.cw - u * kLanes);
      float* yplanes[kLanes];
      for (int64_t lane = 0; lane < lanes; ++lane)
        yplanes[lane] = l.y + (ch.img * dw.c_out + ch.c0 + u * kLanes + lane) * hw_out;
      for (int64_t oh = oh0; oh < oh0 + rows_out; ++oh) {
        const float* rows[kMaxTaps];
        for (int64_t i = 0; i < dw.kernel_h; ++i) {
          const int64_t r = (oh * dw.stride_h + i * dw.dilation_h) % ch.ring_rows;
          rows[i] = ch.ring + u * ch.unit_floats + r * l.cols * kLanes;
        }
        detail::depthwise_lanes_row(dw, rows, kLanes, w8 + u * taps * kLanes, b8 + u * kLanes, oh, lanes,
                                    clamp, yplanes);
      }
    }
  }
}

}  // namespace

void conv2d_expand_depthwise_f32(ThreadPool& pool, const Conv2dParams& pw, const Conv2dParams& dw,
                                 const float* x, const float* w1_packed, const float* b1, const float* w2,
                                 const float* b2, float* y, bool expand_silu) {
  if (dw.n <= 0 || dw.c_out <= 0 || dw.h_out <= 0 || dw.w_out <= 0) return;
  Layer l{pw, dw, x, w1_packed,  pw.has_bias ? b1 : nullptr, w2, dw.has_bias ? b2 : nullptr, y, 0,
          0,  0,  0, expand_silu};
  l.cols = expand_depthwise_cols(dw);
  l.span = expand_depthwise_span(dw);
  int64_t nc;
  conv2d_gemm_blocking(pw.c_in, pw.c_out, l.kc, nc);
  l.n16 = ceil_div(pw.c_out, kNr) * kNr;
  const int64_t units = ceil_div(dw.c_in, kLanes), chunk_units = expand_depthwise_chunk_units(dw);
  const int64_t capacity = expand_depthwise_ring_capacity(dw);
  // Work items: (image, part of the output rows, unit), units fastest so that a thread's
  // range is mostly units of one part, expanded from one packing of its input positions.
  // Parts where units are few: each at least 4 input rows' worth of output rows per row that
  // two parts both expand, so that no more than a quarter of the expansion is done twice.
  const int64_t halo = max_i64(0, l.span - dw.stride_h);
  const int64_t parts =
      detail::row_parts_for(dw.n * units, pool.size(), dw.h_out, max_i64(1, ceil_div(4 * halo, dw.stride_h)));
  const double unit_flops =
      2.0 * static_cast<double>(
                kLanes * (pw.c_in * pw.h_in * pw.w_in + dw.kernel_h * dw.kernel_w * dw.h_out * dw.w_out));
  const int64_t min_units =
      static_cast<int64_t>(detail::kGemmMinFlopsPerRange * static_cast<double>(parts) / unit_flops) + 1;
  // Each thread takes a contiguous range of items and runs it in chunks of at most
  // chunk_units units of one image and part.
  pool.parallel_for(dw.n * parts * units, min_units, [&](int64_t q0, int64_t q1, int thread) {
    // The scratch's parts, 32-byte aligned: ring, pack, then weights and bias in lanes.
    auto align = [](float* p) {
      return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(p) + 31) / 32 * 32);
    };
    float* ring = align(reinterpret_cast<float*>(pool.thread_scratch(thread)));
    float* pack = align(ring + capacity);
    float* w8 = align(pack + kPiece * l.kc);
    for (int64_t q = q0; q < q1;) {
      const int64_t row = q / units, u0 = q % units;  // row: image * parts + part
      const int64_t img = row / parts, part = row % parts;
      const int64_t u1 = min_i64(min_i64(units, u0 + chunk_units), q1 - row * units);
      Chunk ch{};
      ch.img = img;
      ch.c0 = u0 * kLanes;
      ch.cw = min_i64(dw.c_in, u1 * kLanes) - ch.c0;
      ch.oh_begin = part * dw.h_out / parts;
      ch.oh_end = (part + 1) * dw.h_out / parts;
      // As many output rows at a time as the ring holds (at least one: capacity covers it).
      const int64_t rows_out = ch.oh_end - ch.oh_begin;
      int64_t strip = 1;
      while (strip < rows_out && expand_depthwise_ring_floats(dw, u1 - u0, strip + 1) <= capacity) ++strip;
      ch.ring_rows = (strip - 1) * dw.stride_h + l.span;
      ch.unit_floats = expand_depthwise_ring_floats(dw, 1, strip);
      ch.ring = ring;
      ch.pack = pack;
      run_chunk(l, ch, w8);
      q = row * units + u1;
    }
  });
}

}  // namespace aotc::rt

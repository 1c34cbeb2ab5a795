// fuse_row_gathers: a chain of strided copies (IR "copy" and "assemble") that, taken
// together, only reorders the rows of a float32 tensor becomes one row order, an int32
// constant: out row r = source row (r / period) * src_period + index[r % period].
//
// A Swin transformer block shifts its tokens cyclically (torch.roll: an assembly of four
// pieces), cuts them into windows (a permute and a copy) and undoes both after the
// attention: ten launches and four passes over the activations per shifted block, two
// per block without the shift. Each of those chains is a reordering of the tokens, whole
// rows of channels. The order is found by running the chain on element indices at compile
// time, so any composition of views, rolls, pads by zero that became aliases and crops
// qualifies (a broadcast of whole rows too: its rows repeat), and anything else (a fill
// that stays, a broadcast within rows, another dtype) does not.
//
// Then, in order of preference:
//   - the chain reads a layer_norm's result and nothing else does: the layer_norm reads its
//     input rows in that order and writes the chain's result (layer_norm_cuda.cpp), and the
//     copies go. A Swin block's norm1 -> shift -> partition.
//   - the chain's result is read only by an add of the same shape (alpha 1, no clamp): one
//     gather_rows op writes the add's result, the residual added in the same pass. A Swin
//     block's reverse -> unshift -> x + attention.
//   - a chain of two launches or more: one gather_rows op.
// A single copy that neither fusion takes is left alone. Not in a --dim build (the order
// depends on the sizes). AOTC_CUDA_ROW_GATHERS=0 (read when compiling) turns the pass off,
// for comparisons.
#include <aotc/rt/kernels.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <set>

#include "../../ops/op_helpers.h"
#include "../passes.h"
#include "cuda_passes.h"

namespace aotc::passes::cuda {
namespace {

// The element maps are simulated: larger tensors are left alone (compile time, memory).
constexpr int64_t kMaxElements = int64_t{1} << 26;
// Rows narrower than a 32-byte sector gather no faster than copy_strided moves elements
// (a transpose or an NCHW <-> NHWC permute is a "row order" of single elements). The
// gather gives each row a warp, so rows of 8 to 124 floats leave lanes idle: worth it for
// the launches and passes a chain saves (Swin's narrowest stage has rows of 96 floats).
constexpr int64_t kMinRowLength = 8;
// A chain that moves long runs (a clone, a cat along the batch) is cut into rows of at
// most this many floats, so that the warps a row each fill the GPU.
constexpr int64_t kMaxRowLength = 1024;
// An order repeating after more rows than this is not worth its table in the weights.
constexpr int64_t kMaxPeriod = int64_t{1} << 20;

using Map = std::vector<int32_t>;  // per element of a value: the source element it holds, -1 none

// Runs fn(src, dst) over every index of dims, src and dst the strided element offsets;
// false (and stops) where an offset falls outside [0, src_count) or [0, dst_count).
template <typename Fn>
bool for_each_offset(const std::vector<int64_t>& dims, const int64_t* src_strides, int64_t src,
                     const int64_t* dst_strides, int64_t dst, int64_t src_count, int64_t dst_count, Fn fn) {
  for (int64_t d : dims)
    if (d <= 0) return true;
  std::vector<int64_t> index(dims.size(), 0);
  while (true) {
    if (src < 0 || src >= src_count || dst < 0 || dst >= dst_count) return false;
    fn(src, dst);
    int d = static_cast<int>(dims.size()) - 1;
    for (; d >= 0; --d) {
      const auto k = static_cast<size_t>(d);
      if (++index[k] < dims[k]) {
        src += src_strides[k];
        dst += dst_strides[k];
        break;
      }
      src -= src_strides[k] * (dims[k] - 1);
      dst -= dst_strides[k] * (dims[k] - 1);
      index[k] = 0;
    }
    if (d < 0) return true;
  }
}

bool is_float32(const ir::Graph& g, int id) { return g.value(id).dtype == ir::DType::Float32; }

// The input a copy or assemble op moves elements from (every piece reads it or the
// output), or -1 for other ops and for assemblies of several inputs.
int moved_input(const ir::Graph& g, const ir::Op& op) {
  if (op.outputs.size() != 1 || !is_float32(g, op.outputs[0])) return -1;
  if (op.kind == ir::kind::copy) return op.inputs.size() == 1 && op.i("elem_size") == 4 ? op.inputs[0] : -1;
  if (op.kind != ir::kind::assemble) return -1;
  int input = -1;
  for (int64_t k : op.ints("piece_input")) {
    if (k < 0) continue;
    const int id = op.inputs.at(static_cast<size_t>(k));
    if (input >= 0 && id != input) return -1;
    input = id;
  }
  return input >= 0 && is_float32(g, input) ? input : -1;
}

// The launches op makes (a copy: one; an assembly: its fill and one per piece).
int launches(const ir::Op& op) {
  if (op.kind == ir::kind::copy) return 1;
  return static_cast<int>(op.ints("piece_rank").size()) + (op.has("fill") ? 1 : 0);
}

// op's output as a map of the elements its input holds (`in`: that input's map).
std::optional<Map> simulate(const ir::Graph& g, const ir::Op& op, const Map& in) {
  const auto count = static_cast<int64_t>(in.size());
  Map out(static_cast<size_t>(ir::numel(g.value(op.outputs[0]).shape)), -1);
  const auto out_count = static_cast<int64_t>(out.size());
  if (op.kind == ir::kind::copy) {
    const bool ok = for_each_offset(
        op.ints("dims"), op.ints("src_strides").data(), op.has("src_offset") ? op.i("src_offset") : 0,
        op.ints("dst_strides").data(), 0, count, out_count, [&](int64_t s, int64_t d) { out[d] = in[s]; });
    if (!ok) return std::nullopt;
    return out;
  }
  // An assembly: the fill holds no source element (out stays -1 where nothing overwrites it).
  const auto& inputs = op.ints("piece_input");
  const auto& ranks = op.ints("piece_rank");
  const auto& dims = op.ints("piece_dims");
  const auto& src_strides = op.ints("piece_src_strides");
  const auto& dst_strides = op.ints("piece_dst_strides");
  size_t first = 0;
  for (size_t p = 0; p < ranks.size(); first += static_cast<size_t>(ranks[p]), ++p) {
    const std::vector<int64_t> piece_dims(dims.begin() + static_cast<std::ptrdiff_t>(first),
                                          dims.begin() + static_cast<std::ptrdiff_t>(first) + ranks[p]);
    Map earlier;  // a piece reading the output reads what the pieces before it wrote
    if (inputs[p] < 0) earlier = out;
    const Map& from = inputs[p] < 0 ? earlier : in;
    const bool ok = for_each_offset(piece_dims, src_strides.data() + first, op.ints("piece_src_offset")[p],
                                    dst_strides.data() + first, op.ints("piece_dst_offset")[p],
                                    static_cast<int64_t>(from.size()), out_count,
                                    [&](int64_t s, int64_t d) { out[d] = from[s]; });
    if (!ok) return std::nullopt;
  }
  return out;
}

// The widest row length c such that map holds whole rows of c source elements, in order
// (source rows of a source of `source_count` elements); 0 when an element holds none.
int64_t row_length(const Map& map, int64_t source_count) {
  if (map.empty()) return 0;
  for (int32_t s : map)
    if (s < 0) return 0;
  auto width = static_cast<int64_t>(map.size());
  for (size_t i = 1; i < map.size(); ++i)
    if (map[i] != map[i - 1] + 1) width = std::gcd(width, static_cast<int64_t>(i));
  int64_t c = std::gcd(width, source_count);
  for (size_t i = 0; i < map.size(); i += static_cast<size_t>(width))
    c = std::gcd(c, static_cast<int64_t>(map[i]));
  return c;
}

struct RowOrder {
  int64_t rows = 0, cols = 0, period = 0, src_period = 0;
  std::vector<int32_t> index;  // period entries
};

// map read in rows of cols elements (cols divides row_length(map)): the shortest period
// after which the order repeats, shifted by a whole number of source rows.
RowOrder row_order(const Map& map, int64_t source_count, int64_t cols) {
  RowOrder o;
  o.cols = cols;
  o.rows = static_cast<int64_t>(map.size()) / cols;
  const int64_t source_rows = source_count / cols;
  std::vector<int64_t> from(static_cast<size_t>(o.rows));
  for (int64_t r = 0; r < o.rows; ++r)
    from[static_cast<size_t>(r)] = map[static_cast<size_t>(r * cols)] / cols;
  const int64_t common = std::gcd(o.rows, source_rows);
  std::vector<int64_t> repeats;  // divisors of common, largest first
  for (int64_t d = 1; d * d <= common; ++d)
    if (common % d == 0) repeats.insert(repeats.end(), {d, common / d});
  std::sort(repeats.rbegin(), repeats.rend());
  for (int64_t b : repeats) {
    const int64_t period = o.rows / b, shift = source_rows / b;
    bool repeats_here = true;
    for (int64_t r = period; r < o.rows && repeats_here; ++r)
      repeats_here = from[static_cast<size_t>(r)] == from[static_cast<size_t>(r - period)] + shift;
    if (!repeats_here) continue;
    o.period = period;
    o.src_period = shift;
    o.index.assign(from.begin(), from.begin() + static_cast<std::ptrdiff_t>(period));
    break;
  }
  return o;
}

int add_order_constant(ir::Graph& g, const RowOrder& o) {
  std::vector<uint8_t> bytes(o.index.size() * sizeof(int32_t));
  if (!bytes.empty()) std::memcpy(bytes.data(), o.index.data(), bytes.size());
  return g.add_constant(ir::DType::Int32, {o.period}, std::move(bytes), "row_order");
}

void set_order_attrs(ir::Op& op, const RowOrder& o) {
  op.attrs["row_period"] = o.period;
  op.attrs["row_src_period"] = o.src_period;
}

// A chain of copies from `source` to `result`, the ops in graph order.
struct Chain {
  std::vector<size_t> ops;
  int source = -1, result = -1;
  Map map;  // per element of result: the element of source it holds
};

// The chain of at most max_links ops starting at op `head`, each link's result read by the
// next link alone.
std::optional<Chain> chain_from(const ir::Graph& g, size_t head, size_t max_links) {
  Chain c;
  c.source = moved_input(g, g.ops[head]);
  if (c.source < 0 || ir::numel(g.value(c.source).shape) > kMaxElements) return std::nullopt;
  Map in(static_cast<size_t>(ir::numel(g.value(c.source).shape)));
  std::iota(in.begin(), in.end(), 0);
  size_t at = head;
  while (true) {
    const ir::Op& op = g.ops[at];
    const int out = op.outputs[0];
    if (g.storage_root(out) != out || g.value(out).storage != ir::Storage::Arena ||
        ir::numel(g.value(out).shape) > kMaxElements)
      break;
    std::optional<Map> result = simulate(g, op, in);
    if (!result) break;
    c.ops.push_back(at);
    c.result = out;
    c.map = std::move(*result);
    if (c.ops.size() == max_links) break;
    // The next link: the only reader of this result, reading (a view of) it alone.
    const std::vector<int> readers = readers_of_storage(g, out);
    if (readers.size() != 1 || readers[0] < 0) break;
    const auto next = static_cast<size_t>(readers[0]);
    const int next_in = moved_input(g, g.ops[next]);
    if (next_in < 0 || g.storage_root(next_in) != out) break;
    const int64_t offset = g.root_byte_offset(next_in) / 4, n = ir::numel(g.value(next_in).shape);
    if (offset < 0 || offset + n > static_cast<int64_t>(c.map.size())) break;
    in.assign(c.map.begin() + offset, c.map.begin() + offset + n);
    at = next;
  }
  if (c.ops.empty()) return std::nullopt;
  return c;
}

void erase_ops(ir::Graph& g, const std::vector<size_t>& ops) {
  const std::set<size_t> gone(ops.begin(), ops.end());
  std::vector<ir::Op> kept;
  kept.reserve(g.ops.size());
  for (size_t i = 0; i < g.ops.size(); ++i)
    if (!gone.count(i)) kept.push_back(std::move(g.ops[i]));
  g.ops = std::move(kept);
}

// The layer_norm op whose whole result is the chain's source and is read by the chain
// alone, or -1.
int layer_norm_before(const ir::Graph& g, const Chain& c) {
  const int producer = producer_of(g, c.source);
  if (producer < 0) return -1;
  const ir::Op& ln = g.ops[static_cast<size_t>(producer)];
  if (ln.kind != ir::kind::layer_norm || ln.outputs.size() != 1 || ln.inputs.size() != 3 ||
      g.root_byte_offset(c.source) != 0 ||
      ir::numel(g.value(c.source).shape) != ir::numel(g.value(ln.outputs[0]).shape))
    return -1;
  const std::vector<int> readers = readers_of_storage(g, c.source);
  return readers.size() == 1 && readers[0] == static_cast<int>(c.ops.front()) ? producer : -1;
}

// The add op that alone reads the chain's whole result, with an operand of its own shape
// as the other term, or -1; `addend` is set to that operand.
int add_after(const ir::Graph& g, const Chain& c, int& addend) {
  const std::vector<int> readers = readers_of_storage(g, c.result);
  if (readers.size() != 1 || readers[0] < 0) return -1;
  const ir::Op& add = g.ops[static_cast<size_t>(readers[0])];
  if (add.kind != ir::kind::binary || add.i("op") != static_cast<int64_t>(rt::BinaryOp::Add) ||
      add.f("alpha") != 1.0 || add.has(ir::attr::clamp_lo) || add.inputs.size() != 2)
    return -1;
  const ir::Shape& shape = g.value(add.outputs[0]).shape;
  const bool first = g.storage_root(add.inputs[0]) == c.result;
  const int read = add.inputs[first ? 0 : 1], other = add.inputs[first ? 1 : 0];
  if (g.storage_root(read) != c.result || g.storage_root(other) == c.result ||
      g.root_byte_offset(read) != 0 || g.value(read).shape != shape || g.value(other).shape != shape ||
      !is_float32(g, other) || !is_float32(g, add.outputs[0]) ||
      ir::numel(shape) != static_cast<int64_t>(c.map.size()))
    return -1;
  addend = other;
  return readers[0];
}

// Rewrites the longest chain at head that is a row order; true when the graph changed.
bool fuse_chain(ir::Graph& g, size_t head) {
  std::optional<Chain> chain = chain_from(g, head, SIZE_MAX);
  int64_t width = 0;
  while (chain) {
    width = row_length(chain->map, ir::numel(g.value(chain->source).shape));
    if (width >= kMinRowLength || chain->ops.size() == 1) break;
    chain = chain_from(g, head, chain->ops.size() - 1);
  }
  if (!chain || width < kMinRowLength) return false;
  const Chain& c = *chain;
  const int64_t source_count = ir::numel(g.value(c.source).shape);

  if (const int ln = layer_norm_before(g, c); ln >= 0) {
    const int64_t cols = g.ops[static_cast<size_t>(ln)].i("cols");
    const RowOrder o =
        cols >= kMinRowLength && width % cols == 0 ? row_order(c.map, source_count, cols) : RowOrder{};
    if (o.period > 0 && o.period <= kMaxPeriod) {
      const int index = add_order_constant(g, o);
      ir::Op& op = g.ops[static_cast<size_t>(ln)];
      op.inputs.push_back(index);
      op.outputs[0] = c.result;
      op.attrs["rows"] = o.rows;
      set_order_attrs(op, o);
      erase_ops(g, c.ops);
      return true;
    }
  }
  // Rows of the widest length up to kMaxRowLength that divides width (every divisor of a
  // row length is one), a multiple of 4 floats where width is (16-byte vectors).
  int64_t cols = 0;
  for (int64_t d = 1; d <= std::min(width, kMaxRowLength); ++d)
    if (width % d == 0 && (width % 4 != 0 || d % 4 == 0)) cols = d;
  if (cols < kMinRowLength) return false;
  const RowOrder o = row_order(c.map, source_count, cols);
  if (o.period > kMaxPeriod) return false;
  int addend = -1;
  const int add = add_after(g, c, addend);
  int total = 0;
  for (size_t i : c.ops) total += launches(g.ops[i]);
  if (add < 0 && total < 2) return false;
  // The gather takes the place of the add, or of the chain's last op.
  const size_t at = add >= 0 ? static_cast<size_t>(add) : c.ops.back();
  const int out = add >= 0 ? g.ops[at].outputs[0] : c.result;
  const int index = add_order_constant(g, o);
  ir::Op gather;
  gather.kind = ir::kind::gather_rows;
  gather.inputs = {c.source, index, addend};
  gather.outputs = {out};
  gather.loc = g.ops[at].loc;
  gather.attrs = {{"rows", o.rows}, {"cols", o.cols}};
  set_order_attrs(gather, o);
  g.ops[at] = std::move(gather);
  std::vector<size_t> gone = c.ops;
  if (add < 0) gone.pop_back();
  erase_ops(g, gone);
  return true;
}

}  // namespace

void fuse_row_gathers(ir::Graph& graph) {
  if (graph.sizes_vary) return;
  if (const char* v = std::getenv("AOTC_CUDA_ROW_GATHERS"); v && std::strcmp(v, "0") == 0) return;
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    const ir::Op& op = graph.ops[i];
    if (op.kind != ir::kind::copy && op.kind != ir::kind::assemble) continue;
    // Ops in graph order: a chain is met at its first copy. After a rewrite, position i
    // holds the op after the chain's first (or the gather itself): look at it again.
    if (fuse_chain(graph, i)) --i;
  }
}

}  // namespace aotc::passes::cuda

// dynamic_build.cpp - see dynamic_build.h.
#include "dynamic_build.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "../../runtime/include/aotc/rt/model_desc.h"
#include "../ir/error.h"
#include "../ops/cuda/cuda_registry.h"
#include "../passes/passes.h"
#include "dim_polynomial.h"
#include "fit_generated_code.h"

namespace aotc::driver {
namespace {

// Generated code names a dim's size of this run prefix + its name.
constexpr const char* kDimPrefix = "aotc_dim_";
// At most this many named dims: the grid of samples has 3^dims points.
constexpr size_t kMaxDims = 3;
// At most this many sizes of a dim (1 and the smallest ones) get code of their own.
constexpr size_t kMaxSingleSizes = 3;
// The steps tried when a dim's sizes are not all valid (a view that splits it evenly).
constexpr int64_t kSteps[] = {2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 24, 32, 48, 64};

std::vector<std::string> dim_names(const DynamicSignature& signature) {
  std::vector<std::string> names;
  for (const DimRange& d : signature.dims) names.push_back(d.name);
  return names;
}

// The op a frontend error is about ("aten::view at model.py:12"), else its first line.
std::string op_of_error(const std::string& text) {
  const size_t at = text.find(" at ");
  const size_t colon = at == std::string::npos ? std::string::npos : text.find(": ", at);
  if (colon != std::string::npos && colon < text.find('\n')) return text.substr(0, colon);
  const std::string line = text.substr(0, text.find('\n'));
  return line.size() > 200 ? line.substr(0, 200) + "..." : line;
}

std::string first_line(const std::string& text) {
  const std::string line = text.substr(0, text.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

// The valid sizes of a dim: a multiple of step in its range.
struct DimSizes {
  int64_t lo = 0;  // smallest valid size
  int64_t hi = 0;  // largest valid size
  int64_t step = 1;
  int64_t first = 0;     // the range's smallest valid size, before any size is split off
  std::string step_why;  // the frontend's complaint about sizes that are not multiples

  // Up to three sizes for the grid, largest first: the largest, the smallest other than 1
  // (a size of 1 is often special: it is a check point instead), and one between.
  // The lowest is kept a few steps above the smallest where the range allows: a size derived
  // from the smallest may be 1 (S / 2 at S = 2), special again; the smallest is a check point.
  std::vector<int64_t> grid() const {
    // From the range's own smallest size, not the bucket's: the grid stays where it was when
    // smaller sizes are split off, and the samples compiled before the split serve again.
    std::vector<int64_t> sizes{hi};
    int64_t low = hi >= first + 6 * step ? first + 2 * step : hi >= first + 3 * step ? first + step : first;
    low = std::max(low, lo);
    const int64_t mid = (low + (hi - low) / 2) / step * step;
    for (int64_t v : {low, mid})
      if (v >= lo && v <= hi && std::find(sizes.begin(), sizes.end(), v) == sizes.end()) sizes.push_back(v);
    return sizes;
  }
};

DimSizes sizes_of(const DimRange& range, int64_t step, std::string why) {
  DimSizes s;
  s.step = step;
  s.lo = (range.min + step - 1) / step * step;
  s.hi = range.max / step * step;
  s.first = s.lo;
  s.step_why = std::move(why);
  return s;
}

// A bucket's smallest size of a dim is special (a size derived from it is 1, ...): it gets
// a bucket of its own, and the build starts again.
struct SplitRequest {
  size_t dim;
  int64_t size;
  std::string why;
};

// What a sample's compile gives the fit: the varying part of its source, its outputs'
// shapes and the bytes each of its bucket's arena buffers needs at its sizes.
struct SampleResult {
  std::string text;
  std::vector<ir::Shape> outputs;
  std::vector<int64_t> buffer_sizes;
};

// Samples already compiled, kept across restarts: a split leaves the other buckets'
// largest sizes, memory plans and weights as they were. Key: (the bucket's largest sizes,
// the sample's sizes).
using SampleCache = std::map<std::pair<std::vector<int64_t>, std::vector<int64_t>>, SampleResult>;

// The sizes compiled as one piece of code. A size of 1 is often special (a transpose of
// a size-1 dim is no copy, a broadcast takes another stride): a dim whose range holds 1
// and more gets a bucket of its own for 1, the others range from 2 (torch.export
// specialises 1 likewise); each combination is a bucket with its own run function.
struct Bucket {
  std::vector<DimSizes> dims;
  std::vector<int64_t> base_sizes;  // the largest sizes of the bucket: its memory plan
  ir::Graph base;
  std::vector<int64_t> base_scratch;  // each op's scratch before the plan
  int64_t base_thread_scratch = 0;    // the largest per-thread scratch
  std::string base_text;              // the base's generated source
  std::vector<ir::Shape> base_outputs;
  std::string body;         // the fitted run function's body
  std::string output_code;  // statements filling out[][] from the dims
  std::string condition;    // when the bucket runs ("" for the general one)
  // The arena buffers of the base's plan in the order of their offsets: buffer k is
  // aotc_offsets[k] in the generated code, placed per context (rt::ArenaPlan).
  std::vector<passes::PlannedBuffer> buffers;
  size_t first_offset = 0;  // where its offsets start in the context's table
  std::string sizes_code;   // statements filling sizes[k] from the dims
};

class DynamicBuilder {
 public:
  DynamicBuilder(const LowerModel& lower, const DynamicSignature& signature, const ModelBuild& build,
                 std::vector<std::vector<int64_t>> singles, std::vector<DimSizes>* steps, SampleCache* cache)
      : lower_(lower),
        signature_(signature),
        build_(build),
        names_(dim_names(signature)),
        singles_(std::move(singles)),
        steps_(steps),
        cache_(cache) {
    quiet_ = build;
    quiet_.verbose = false;
    for (const DimRange& d : signature.dims) dims_.push_back(sizes_of(d, 1, ""));
  }

  void run();

 private:
  ir::Graph lower_at(const std::vector<int64_t>& sizes) {
    ir::Graph graph = lower_(specs_at(signature_, sizes));
    graph.sizes_vary = true;
    run_target_pipeline(graph, quiet_);
    return graph;
  }
  void find_steps();
  void check_weights(ir::Graph& sample, const std::vector<int64_t>& sizes);
  void align(ir::Graph& sample, const Bucket& bucket, const std::vector<int64_t>& sizes);
  std::string generate(ir::Graph& sample);
  void fit_bucket(Bucket& bucket);
  std::string dynamic_desc(const std::vector<Bucket>& buckets);
  std::string bucket_prologue(const Bucket& bucket) const;
  std::string cpu_source(const std::string& base_text, const std::vector<Bucket>& buckets) const;
  std::string cuda_source(const std::string& base_text, const std::vector<Bucket>& buckets) const;
  void log(const char* what, const std::vector<int64_t>& sizes) const {
    if (build_.verbose)
      std::fprintf(stderr, "aotc: dynamic: %s at %s\n", what, describe_sizes(names_, sizes).c_str());
  }
  CompileError mismatch(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                        const std::string& what) const {
    std::string dims;
    for (size_t d = 0; d < names_.size(); ++d)
      if (a[d] != b[d]) dims += (dims.empty() ? "" : " or ") + names_[d];
    return CompileError("the model is not the same at " + describe_sizes(names_, a) + " and at " +
                        describe_sizes(names_, b) + ": " + what + ". It changes with " + dims +
                        " in a way that is not a size (a branch, loop or kernel choice on " + dims +
                        "): give " + dims + " a fixed size, or a narrower --dim range");
  }

  const LowerModel& lower_;
  const DynamicSignature& signature_;
  const ModelBuild& build_;
  ModelBuild quiet_;
  std::vector<std::string> names_;
  std::vector<DimSizes> dims_;
  // Per dim, the smallest sizes that get buckets of their own (found by SplitRequest).
  std::vector<std::vector<int64_t>> singles_;
  std::vector<DimSizes>* steps_;            // the dims' steps, found once for every restart
  SampleCache* cache_;                      // the samples compiled before a restart
  std::vector<int64_t> weights_sizes_;      // where the weights come from: the largest sizes
  std::vector<ir::ConstantBytes> weights_;  // their constants, moved out after their layout
                                            // (empty: not in the blob)
  std::vector<ir::DType> weights_dtypes_;
  std::vector<int64_t> weights_offsets_;
  const ir::Graph* weights_graph_ = nullptr;  // the graph they are from
};

// Sizes where the frontend refuses some values of a dim (x.view(b, s // 4, 4 * d)): the
// step it needs, found by trying steps at the dim's grid sizes.
void DynamicBuilder::find_steps() {
  std::vector<int64_t> largest;
  for (const DimSizes& d : dims_) largest.push_back(d.hi);
  for (size_t d = 0; d < dims_.size(); ++d) {
    std::string refused, refused_op;
    // The grid, the ends and sizes next to them: a step shows as a refused neighbour.
    std::vector<int64_t> probes = dims_[d].grid();
    for (int64_t v : {dims_[d].lo, dims_[d].lo + 1, dims_[d].hi - 1})
      if (v >= dims_[d].lo && v <= dims_[d].hi && std::find(probes.begin(), probes.end(), v) == probes.end())
        probes.push_back(v);
    for (int64_t v : probes) {
      std::vector<int64_t> sizes = largest;
      sizes[d] = v;
      try {
        lower_(specs_at(signature_, sizes));
      } catch (const CompileError& e) {
        refused = first_line(e.what());
        refused_op = op_of_error(e.what());
        break;
      }
    }
    if (refused.empty()) continue;
    bool found = false;
    for (int64_t step : kSteps) {
      DimSizes candidate = sizes_of(signature_.dims[d], step, refused_op);
      if (candidate.lo > candidate.hi) break;
      bool all = true;
      std::vector<int64_t> tries = candidate.grid();
      tries.push_back(candidate.lo);
      for (int64_t v : tries) {
        std::vector<int64_t> sizes = largest;
        sizes[d] = v;
        try {
          lower_(specs_at(signature_, sizes));
        } catch (const CompileError&) {
          all = false;
          break;
        }
      }
      if (!all) continue;
      dims_[d] = candidate;
      largest[d] = candidate.hi;
      found = true;
      if (build_.verbose)
        std::fprintf(stderr, "aotc: dynamic: %s must be a multiple of %lld: %s\n", names_[d].c_str(),
                     static_cast<long long>(step), refused.c_str());
      break;
    }
    if (!found)
      throw CompileError("the model cannot be compiled for every size of " + names_[d] + " in " +
                         std::to_string(signature_.dims[d].min) + ".." +
                         std::to_string(signature_.dims[d].max) + ": " + refused);
  }
}

// The first `if` or loop the frontend decided otherwise in b than in a, described; "" if none.
std::string decision_difference(const ir::Graph& a, const ir::Graph& b) {
  for (size_t i = 0; i < std::min(a.decisions.size(), b.decisions.size()); ++i) {
    const ir::Graph::Decision& x = a.decisions[i];
    const ir::Graph::Decision& y = b.decisions[i];
    if (x.what != y.what || x.loc.str() != y.loc.str())
      return "the " + x.what.substr(0, x.what.find(':')) + " at " + x.loc.str() +
             (x.loc.text.empty() ? "" : " (" + x.loc.text + ")") + " decides '" + x.what +
             "' at the first sizes and '" + y.what + "'" +
             (x.loc.str() == y.loc.str() ? "" : " at " + y.loc.str()) + " at the second";
  }
  return "";
}

// Weights: every constant the sample reads is one at the largest sizes, or (a constant
// folded from a dim's size, like positions sliced to the sequence length) the start of
// one, which serves every size: the sample reads it at that one's offset in the blob.
void DynamicBuilder::check_weights(ir::Graph& sample, const std::vector<int64_t>& sizes) {
  std::set<int> read;
  auto visit = [&](int id) {
    if (id >= 0 && sample.is_constant(id)) read.insert(sample.value(sample.storage_root(id)).constant_index);
  };
  for (const ir::Op& op : sample.ops)
    for (int in : op.inputs) visit(in);
  for (const ir::GraphOutput& out : sample.outputs) visit(out.value);
  // A constant holding a weight's very buffer (the samples share the model file's and what
  // passes derive from them: ir::ConstantBytes) is that weight unread; only the others (a
  // constant folded from a size) are compared byte by byte.
  auto starts = [&](const ir::Constant& k, size_t g) {
    return g < weights_.size() && k.dtype == weights_dtypes_[g] && k.bytes.size() <= weights_[g].size() &&
           !weights_[g].empty() &&
           (k.bytes.same_buffer(weights_[g]) ||
            std::memcmp(k.bytes.data(), weights_[g].data(), k.bytes.size()) == 0);
  };
  for (int c : read) {
    ir::Constant& k = sample.constants[static_cast<size_t>(c)];
    size_t g = static_cast<size_t>(c);
    if (!starts(k, g))  // the same weights in another order (another bucket's graph)
      for (g = 0; g < weights_.size() && !starts(k, g); ++g) {
      }
    if (g == weights_.size()) {
      if (std::string d = decision_difference(*weights_graph_, sample); !d.empty())
        throw mismatch(weights_sizes_, sizes, d);
      std::string reader = "an op";
      for (const ir::Op& op : sample.ops)
        for (int in : op.inputs)
          if (in >= 0 && reader == "an op" && sample.is_constant(in) &&
              sample.value(sample.storage_root(in)).constant_index == c)
            reader = op.kind + " at " + op.loc.str();
      throw mismatch(weights_sizes_, sizes,
                     "the constant " + reader + " reads (" + ir::dtype_name(k.dtype) +
                         ir::shape_str(k.shape) +
                         ") is computed from the sizes, and is not the start of one at the largest sizes");
    }
    k.offset = weights_offsets_[g];
  }
  for (ir::Constant& k : sample.constants) k.bytes.release();
  sample.weights_placed = true;
}

// Makes a sample use its bucket's memory plan, after checking that it is the same graph
// with sizes that fit the bucket's largest.
void DynamicBuilder::align(ir::Graph& sample, const Bucket& bucket, const std::vector<int64_t>& sizes) {
  const ir::Graph& base = bucket.base;
  auto differ = [&](const std::string& what) { return mismatch(bucket.base_sizes, sizes, what); };
  // Control flow first: its message names the line that decides.
  if (std::string d = decision_difference(base, sample); !d.empty()) throw differ(d);
  const size_t ops = std::min(base.ops.size(), sample.ops.size());
  for (size_t i = 0; i < ops; ++i) {
    const ir::Op& a = base.ops[i];
    const ir::Op& b = sample.ops[i];
    if (a.kind != b.kind || a.inputs != b.inputs || a.outputs != b.outputs)
      throw differ("op " + std::to_string(i) + " is " + a.kind + " at " + a.loc.str() +
                   " at the first sizes, " + b.kind + " at " + b.loc.str() + " at the second");
    for (const auto& [key, value] : a.attrs) {
      auto other = b.attrs.find(key);
      const bool integral =
          std::holds_alternative<int64_t>(value) || std::holds_alternative<std::vector<int64_t>>(value);
      if (other == b.attrs.end() || (!integral && other->second != value))
        throw differ(a.kind + " at " + a.loc.str() + " has another '" + key + "'");
    }
    if (b.scratch_bytes > bucket.base_scratch[i] || b.thread_scratch_bytes > bucket.base_thread_scratch)
      throw differ(a.kind + " at " + a.loc.str() + " needs more scratch memory at the smaller sizes");
  }
  if (base.ops.size() != sample.ops.size()) {
    const ir::Op& extra = base.ops.size() > sample.ops.size() ? base.ops[ops] : sample.ops[ops];
    throw differ("it has " + std::to_string(base.ops.size()) + " ops at the first sizes and " +
                 std::to_string(sample.ops.size()) + " at the second, from " + extra.kind + " at " +
                 extra.loc.str() + " on");
  }
  if (base.values.size() != sample.values.size() || base.outputs.size() != sample.outputs.size())
    throw differ("its values differ");
  for (size_t i = 0; i < base.values.size(); ++i) {
    const ir::Value& a = base.values[i];
    ir::Value& b = sample.values[i];
    if (a.dtype != b.dtype || a.storage != b.storage || a.alias_of != b.alias_of || a.view_of != b.view_of ||
        a.constant_index != b.constant_index || a.input_index != b.input_index ||
        a.shape.size() != b.shape.size())
      throw differ("value %" + std::to_string(i) + " (" + a.name + ") differs");
    if (b.bytes() > a.bytes())
      throw differ("value %" + std::to_string(i) + " (" + a.name + ") is larger at the smaller sizes");
    b.arena_offset = a.arena_offset;
    b.arena_slot = a.arena_slot;
  }
  for (size_t i = 0; i < base.ops.size(); ++i) {
    sample.ops[i].scratch_bytes = base.ops[i].scratch_bytes;
    sample.ops[i].scratch_offset = base.ops[i].scratch_offset;
    sample.ops[i].scratch_slot = base.ops[i].scratch_slot;
    sample.ops[i].thread_scratch_bytes = base.ops[i].thread_scratch_bytes;
  }
  sample.arena_bytes = base.arena_bytes;
  sample.arena_lower_bound = base.arena_lower_bound;
  check_weights(sample, sizes);
}

// Numbers the bucket's arena buffers in the order of their offsets in its plan (the order a
// context places them in) and makes its base address them through the offset table.
void number_buffers(Bucket& bucket) {
  bucket.buffers = passes::planned_buffers(bucket.base);
  std::sort(bucket.buffers.begin(), bucket.buffers.end(),
            [](const passes::PlannedBuffer& a, const passes::PlannedBuffer& b) {
              return std::tie(a.offset, a.first, a.last, a.value, a.op) <
                     std::tie(b.offset, b.first, b.last, b.value, b.op);
            });
  for (size_t k = 0; k < bucket.buffers.size(); ++k) {
    const passes::PlannedBuffer& b = bucket.buffers[k];
    if (b.value >= 0)
      bucket.base.value(b.value).arena_slot = static_cast<int>(k);
    else
      bucket.base.ops[static_cast<size_t>(b.op)].scratch_slot = static_cast<int>(k);
  }
}

// The bytes each of the bucket's arena buffers needs in a sample (scratch: the ops' own
// needs, before align() gives them the base's).
std::vector<int64_t> buffer_sizes(const ir::Graph& sample, const Bucket& bucket,
                                  const std::vector<int64_t>& scratch) {
  std::vector<int64_t> sizes;
  for (const passes::PlannedBuffer& b : bucket.buffers)
    sizes.push_back(b.value >= 0 ? sample.value(b.value).bytes() : scratch[static_cast<size_t>(b.op)]);
  return sizes;
}

// Whether p, at the largest valid sizes a context allows, covers every smaller valid size:
// not smaller at a lattice point than at the one before it along any dim (up to 9 points a
// dim, ends included). A size that fails keeps the plan's constant.
bool grows_with_dims(const DimPolynomial& p, const std::vector<DimSizes>& dims) {
  std::vector<std::vector<int64_t>> axes;
  size_t points = 1;
  for (const DimSizes& d : dims) {
    std::vector<int64_t> axis;
    const int64_t steps = (d.hi - d.lo) / d.step;
    for (int64_t i = 0; i <= 8; ++i) {
      const int64_t v = d.lo + (steps * i / 8) * d.step;
      if (axis.empty() || axis.back() != v) axis.push_back(v);
    }
    points *= axis.size();
    axes.push_back(std::move(axis));
  }
  std::vector<int64_t> values(points);
  std::vector<int64_t> sizes(dims.size());
  for (size_t q = 0; q < points; ++q) {
    for (size_t d = dims.size(), rest = q; d-- > 0;) {
      sizes[d] = axes[d][rest % axes[d].size()];
      rest /= axes[d].size();
    }
    const std::optional<int64_t> v = p.evaluate(sizes);
    if (!v || *v < 0) return false;
    values[q] = *v;
  }
  for (size_t q = 0, stride = 1; q < dims.size(); ++q) {
    const size_t d = dims.size() - 1 - q;  // the last dim is the fastest
    for (size_t i = 0; i < points; ++i)
      if ((i / stride) % axes[d].size() > 0 && values[i] < values[i - stride]) return false;
    stride *= axes[d].size();
  }
  return true;
}

// The sample's generated source (its weights placed by check_weights).
std::string DynamicBuilder::generate(ir::Graph& sample) {
  return generate_target_sources(sample, build_).model_cpp;
}

// The generated run function's first line, per target.
constexpr const char* kCpuRunOpen = "void run_model(const aotc::rt::RunArgs& args) {\n";
constexpr const char* kCudaRunOpen = "void run_model(const aotc::rt::cuda::CudaRunArgs& args) {\n";
// Where the generated CUDA kernels start (templates/model.cu.in).
constexpr const char* kCudaKernelsStart = "// Kernels generated for this model's ops";

// The part of a generated source that varies with the sizes: on the CPU the run
// function's body; on CUDA the generated kernels and the whole run function.
std::string run_part(const std::string& text, bool cuda, size_t* begin, size_t* end) {
  const std::string open = cuda ? kCudaRunOpen : kCpuRunOpen;
  const size_t run = text.find(open);
  *begin = cuda ? text.find(kCudaKernelsStart) : run + open.size();
  if (run == std::string::npos || *begin == std::string::npos)
    throw CompileError("internal: generated code has no run_model");
  *end = text.find("\n}\n", run) + (cuda ? 3 : 0);
  return text.substr(*begin, *end - *begin);
}

std::string run_part(const std::string& text, bool cuda) {
  size_t b = 0, e = 0;
  return run_part(text, cuda, &b, &e);
}

// Compiles the bucket's grid and check points and fits its run function and output dims.
void DynamicBuilder::fit_bucket(Bucket& bucket) {
  const std::vector<DimSizes>& dims = bucket.dims;
  std::vector<std::vector<int64_t>> grid_values;
  size_t points = 1;
  for (const DimSizes& d : dims) {
    grid_values.push_back(d.grid());
    points *= grid_values.back().size();
  }
  std::vector<std::vector<int64_t>> grid_sizes(points);
  for (size_t p = 0; p < points; ++p) {
    grid_sizes[p].resize(dims.size());
    for (size_t d = dims.size(), rest = p; d-- > 0;) {
      grid_sizes[p][d] = grid_values[d][rest % grid_values[d].size()];
      rest /= grid_values[d].size();
    }
  }
  // Check points: the smallest sizes, each dim at its smallest, two random points.
  std::set<std::vector<int64_t>> seen(grid_sizes.begin(), grid_sizes.end());
  std::vector<std::vector<int64_t>> check_sizes;
  auto add_check = [&](std::vector<int64_t> sizes) {
    if (seen.insert(sizes).second) check_sizes.push_back(std::move(sizes));
  };
  // Each dim at its three smallest sizes first (outside the grid: the special ones): a
  // failure there names the dim to split off.
  for (size_t d = 0; d < dims.size(); ++d)
    for (int64_t k = 0; k < 3; ++k) {
      std::vector<int64_t> one = bucket.base_sizes;
      one[d] = dims[d].lo + k * dims[d].step;
      if (one[d] <= dims[d].hi) add_check(one);
    }
  std::vector<int64_t> smallest;
  for (const DimSizes& d : dims) smallest.push_back(d.lo);
  add_check(smallest);
  uint64_t random = 0x9e3779b97f4a7c15ull;
  for (int r = 0; r < 2; ++r) {
    std::vector<int64_t> sizes;
    for (const DimSizes& d : dims) {
      random = random * 6364136223846793005ull + 1442695040888963407ull;
      const int64_t steps = (d.hi - d.first) / d.step + 1;
      sizes.push_back(std::max(
          d.lo, d.first + static_cast<int64_t>((random >> 33) % static_cast<uint64_t>(steps)) * d.step));
    }
    add_check(sizes);
  }
  std::vector<CodeSample> grid(points), checks;
  std::vector<std::vector<ir::Shape>> grid_outputs(points), check_outputs;
  std::vector<std::vector<int64_t>> grid_buffers(points), check_buffers;
  // A failure at one of a dim's smallest sizes splits the smallest off (singles stay the
  // bottom of the range; the next start splits the next if it still fails).
  auto split_at = [&](const std::vector<int64_t>& sizes, const CompileError& e) {
    for (size_t d = 0; d < dims.size(); ++d)
      if (sizes[d] < dims[d].lo + 3 * dims[d].step && sizes[d] < bucket.base_sizes[d] &&
          dims[d].hi > dims[d].lo)
        throw SplitRequest{d, dims[d].lo, e.what()};
  };
  auto compile = [&](const std::vector<int64_t>& sizes) -> const SampleResult& {
    auto cached = cache_->find({bucket.base_sizes, sizes});
    if (cached != cache_->end()) return cached->second;
    log("compiling", sizes);
    ir::Graph sample = lower_at(sizes);
    std::vector<int64_t> scratch;
    for (const ir::Op& op : sample.ops) scratch.push_back(op.scratch_bytes);
    try {
      align(sample, bucket, sizes);
    } catch (const CompileError& e) {
      split_at(sizes, e);
      throw;
    }
    SampleResult result;
    for (const ir::GraphOutput& out : sample.outputs) result.outputs.push_back(sample.value(out.value).shape);
    result.buffer_sizes = buffer_sizes(sample, bucket, scratch);
    result.text = run_part(generate(sample), build_.cuda);
    return cache_->emplace(std::make_pair(bucket.base_sizes, sizes), std::move(result)).first->second;
  };
  // The check points first: a graph that changes at a smallest size is split off early.
  for (const std::vector<int64_t>& sizes : check_sizes) {
    const SampleResult& result = compile(sizes);
    check_outputs.push_back(result.outputs);
    check_buffers.push_back(result.buffer_sizes);
    checks.push_back({sizes, result.text});
  }
  size_t base_index = 0;
  for (size_t p = 0; p < points; ++p) {
    grid[p].sizes = grid_sizes[p];
    if (grid_sizes[p] == bucket.base_sizes) {
      base_index = p;
      grid[p].text = run_part(bucket.base_text, build_.cuda);
      grid_outputs[p] = bucket.base_outputs;
      for (const passes::PlannedBuffer& b : bucket.buffers) grid_buffers[p].push_back(b.size);
    } else {
      const SampleResult& result = compile(grid_sizes[p]);
      grid[p].text = result.text;
      grid_outputs[p] = result.outputs;
      grid_buffers[p] = result.buffer_sizes;
    }
  }
  std::vector<int64_t> failed_at;
  try {
    bucket.body = fit_generated_code(grid_values, grid, checks, base_index, names_, kDimPrefix, &failed_at);
  } catch (const CompileError& e) {
    if (!failed_at.empty()) split_at(failed_at, e);
    throw;
  }
  for (size_t o = 0; o < bucket.base_outputs.size(); ++o) {
    for (size_t d = 0; d < bucket.base_outputs[o].size(); ++d) {
      std::vector<int64_t> at_grid;
      for (const auto& shapes : grid_outputs) at_grid.push_back(shapes[o][d]);
      auto poly = DimPolynomial::interpolate(grid_values, at_grid);
      for (size_t c = 0; poly && c < check_sizes.size(); ++c) {
        auto v = poly->evaluate(check_sizes[c]);
        if (!v || *v != check_outputs[c][o][d]) {
          poly.reset();
          split_at(check_sizes[c], CompileError("an output's size is not a polynomial in the dims"));
        }
      }
      if (!poly)
        throw CompileError(
            "dim " + std::to_string(d) + " of output " + std::to_string(o) +
            " is not a polynomial in the named dims: give them a fixed size or a narrower range");
      bucket.output_code += "    out[" + std::to_string(o) + "][" + std::to_string(d) +
                            "] = " + poly->expression(names_, kDimPrefix) + ";\n";
    }
  }
  // Each arena buffer's size in the dims, for contexts with smaller largest sizes; one that
  // is no polynomial, or not largest at the largest sizes, keeps its size in the plan.
  for (size_t k = 0; k < bucket.buffers.size(); ++k) {
    std::vector<int64_t> at_grid;
    for (const auto& sizes : grid_buffers) at_grid.push_back(sizes[k]);
    auto poly = DimPolynomial::interpolate(grid_values, at_grid);
    for (size_t c = 0; poly && c < check_sizes.size(); ++c) {
      auto v = poly->evaluate(check_sizes[c]);
      if (!v || *v != check_buffers[c][k]) poly.reset();
    }
    const bool fits =
        poly && grows_with_dims(*poly, dims) && poly->evaluate(bucket.base_sizes) == bucket.buffers[k].size;
    bucket.sizes_code +=
        "  sizes[" + std::to_string(k) +
        "] = " + (fits ? poly->expression(names_, kDimPrefix) : std::to_string(bucket.buffers[k].size)) +
        ";\n";
  }
}

std::string cpp_row(const std::vector<std::string>& cells) {
  std::string row = "{";
  for (size_t d = 0; d < cells.size(); ++d) row += (d ? ", " : "") + cells[d];
  return row + "}";
}

std::string dim_variables(const std::vector<std::string>& names, const std::string& from) {
  std::string code;
  for (size_t d = 0; d < names.size(); ++d)
    code += "  const int64_t " + std::string(kDimPrefix) + names[d] + " = " + from + "[" + std::to_string(d) +
            "];\n  (void)" + kDimPrefix + names[d] + ";\n";
  return code;
}

// The DynamicDesc: the dims, which input dims they are, each output's dims.
std::string DynamicBuilder::dynamic_desc(const std::vector<Bucket>& buckets) {
  std::string code = "const aotc::rt::DimDesc kDims[] = {\n";
  for (size_t d = 0; d < dims_.size(); ++d)
    code += "    {" + codegen::cpp_string_literal(names_[d]) + ", " + std::to_string(dims_[d].lo) + ", " +
            std::to_string(dims_[d].hi) + ", " + std::to_string(dims_[d].step) + ", " +
            codegen::cpp_string_literal(dims_[d].step_why) + "},\n";
  code += "};\n\nconst int32_t kInputDims[][AOTC_MAX_RANK] = {\n";
  for (const InputSignature& in : signature_.inputs) {
    std::vector<std::string> cells;
    for (const std::string& name : in.dim_names) {
      int index = -1;
      for (size_t d = 0; d < names_.size(); ++d)
        if (names_[d] == name) index = static_cast<int>(d);
      cells.push_back(std::to_string(index));
    }
    while (cells.size() < AOTC_MAX_RANK) cells.push_back("-1");
    code += "    " + cpp_row(cells) + ",\n";
  }
  // An output dim's name: its polynomial in the general bucket, when not a constant.
  const Bucket& general = buckets.front();
  std::string rows;
  for (size_t o = 0; o < general.base_outputs.size(); ++o) {
    std::vector<std::string> cells;
    for (size_t d = 0; d < general.base_outputs[o].size(); ++d) {
      const std::string line = "out[" + std::to_string(o) + "][" + std::to_string(d) + "] = ";
      const size_t at = general.output_code.find(line) + line.size();
      std::string expr = general.output_code.substr(at, general.output_code.find(';', at) - at);
      if (expr.find(kDimPrefix) == std::string::npos) {
        cells.push_back("nullptr");
        continue;
      }
      for (size_t p; (p = expr.find(kDimPrefix)) != std::string::npos;)
        expr.erase(p, std::strlen(kDimPrefix));
      cells.push_back(codegen::cpp_string_literal(expr));
    }
    while (cells.size() < AOTC_MAX_RANK) cells.push_back("nullptr");
    rows += "    " + cpp_row(cells) + ",\n";
  }
  if (rows.empty()) rows = "    {nullptr},\n";
  code += "};\n\nconst char* const kOutputDimNames[][AOTC_MAX_RANK] = {\n" + rows + "};\n\n";
  code += "void output_dims(const int64_t* dims, int64_t (*out)[AOTC_MAX_RANK]) {\n" +
          dim_variables(names_, "dims") + "  (void)out;\n";
  for (size_t b = buckets.size(); b-- > 0;) {
    const Bucket& bucket = buckets[b];
    code += bucket.condition.empty() ? "  {\n" : "  if (" + bucket.condition + ") {\n";
    code += bucket.output_code + "    return;\n  }\n";
  }
  code += "}\n\n";
  // Each bucket's arena plan, placed again by every context for its largest sizes.
  std::string plans;
  size_t offsets = 0;
  for (size_t b = 0; b < buckets.size(); ++b) {
    const Bucket& bucket = buckets[b];
    const std::string n = std::to_string(b);
    std::vector<std::string> lo, hi;
    for (const DimSizes& d : bucket.dims) {
      lo.push_back(std::to_string(d.lo));
      hi.push_back(std::to_string(d.hi));
    }
    code += "const int64_t kArenaMin" + n + "[] = " + cpp_row(lo) + ";\nconst int64_t kArenaMax" + n +
            "[] = " + cpp_row(hi) + ";\n";
    code +=
        "// Bucket " + n + "'s arena buffers in the order of their offsets: {first op, last op, bytes}.\n";
    code += "const aotc::rt::ArenaBuffer kArenaBuffers" + n + "[] = {\n";
    for (const passes::PlannedBuffer& buffer : bucket.buffers)
      code += "    {" + std::to_string(buffer.first) + ", " + std::to_string(buffer.last) + ", " +
              std::to_string(buffer.size) + "},\n";
    if (bucket.buffers.empty()) code += "    {0, 0, 0},\n";
    code += "};\n\nvoid arena_sizes_" + n + "(const int64_t* dims, int64_t* sizes) {\n" +
            dim_variables(names_, "dims") + "  (void)sizes;\n" + bucket.sizes_code + "}\n\n";
    plans += "    {kArenaMin" + n + ", kArenaMax" + n + ", kArenaBuffers" + n + ", " +
             std::to_string(bucket.buffers.size()) + ", &arena_sizes_" + n + "},\n";
    offsets += bucket.buffers.size();
  }
  code += "const aotc::rt::ArenaPlan kArenaPlans[] = {\n" + plans + "};\n\n";
  code += "const aotc::rt::DynamicDesc kDynamic = {kDims, " + std::to_string(dims_.size()) +
          ", kInputDims, kOutputDimNames, &output_dims, kArenaPlans, " + std::to_string(buckets.size()) +
          ", " + std::to_string(offsets) + "};\n\n";
  return code;
}

// A comment on the sizes a bucket's code is for, then the dims' variables from args.dims.
std::string DynamicBuilder::bucket_prologue(const Bucket& bucket) const {
  std::string prologue;
  for (size_t d = 0; d < names_.size(); ++d) {
    const DimSizes& r = bucket.dims[d];
    prologue += "  // " + names_[d] + " in " + std::to_string(r.lo) + ".." + std::to_string(r.hi) +
                (r.step > 1 ? ", a multiple of " + std::to_string(r.step) : "") + "\n";
  }
  return prologue + dim_variables(names_, "args.dims") +
         "  // This bucket's arena offsets, placed for the context's largest sizes.\n"
         "  const int64_t* const aotc_offsets = args.arena_offsets + " +
         std::to_string(bucket.first_offset) + ";\n  (void)aotc_offsets;\n";
}

// The run function dispatching to the buckets' (the general one last).
std::string dispatch_body(const std::vector<Bucket>& buckets, const std::vector<std::string>& names,
                          const std::string& prefix, const std::string& suffix) {
  std::string dispatch = dim_variables(names, "args.dims");
  for (size_t b = buckets.size(); b-- > 1;)
    dispatch +=
        "  if (" + buckets[b].condition + ") return " + prefix + std::to_string(b) + suffix + "(args);\n";
  return dispatch + "  " + prefix + "0" + suffix + "(args);";
}

// CPU: a run function per bucket (run_model_<b>) before the dispatching run_model.
std::string DynamicBuilder::cpu_source(const std::string& base_text,
                                       const std::vector<Bucket>& buckets) const {
  std::string functions;
  for (size_t b = 0; b < buckets.size(); ++b)
    functions += "void run_model_" + std::to_string(b) + "(const aotc::rt::RunArgs& args) {\n" +
                 bucket_prologue(buckets[b]) + buckets[b].body + "\n}\n\n";
  size_t begin = 0, end = 0;
  run_part(base_text, false, &begin, &end);
  const std::string open = kCpuRunOpen;
  return base_text.substr(0, begin - open.size()) + functions + open +
         dispatch_body(buckets, names_, "run_model_", "") + base_text.substr(end);
}

// CUDA: each bucket's kernels and run function in a namespace of its own (bucket_<b>),
// then the dispatching run_model. The kernels read the dims from their KernelDims argument.
std::string DynamicBuilder::cuda_source(const std::string& base_text,
                                        const std::vector<Bucket>& buckets) const {
  std::string kernel_dims = "{{";
  for (size_t d = 0; d < names_.size(); ++d)
    kernel_dims += (d ? ", " : "") + std::string(kDimPrefix) + names_[d];
  kernel_dims += "}}";
  const std::string kernel_open = std::string(ops::cuda::kKernelDimsParam) + ") {\n";
  const std::string kernel_variables = dim_variables(names_, "aotc_dims.size");
  std::string namespaces;
  for (size_t b = 0; b < buckets.size(); ++b) {
    std::string code = buckets[b].body;
    auto replace_all = [&](const std::string& from, const std::string& to) {
      for (size_t at = code.find(from); at != std::string::npos; at = code.find(from, at + to.size()))
        code.replace(at, from.size(), to);
    };
    replace_all(kernel_open, kernel_open + kernel_variables);
    replace_all(kCudaRunOpen, kCudaRunOpen + bucket_prologue(buckets[b]));
    replace_all("{/*named dims*/}", kernel_dims);
    namespaces += "namespace bucket_" + std::to_string(b) + " {\n\n" + code + "\n}  // namespace bucket_" +
                  std::to_string(b) + "\n\n";
  }
  size_t begin = 0, end = 0;
  run_part(base_text, true, &begin, &end);
  return base_text.substr(0, begin) + namespaces + kCudaRunOpen +
         dispatch_body(buckets, names_, "bucket_", "::run_model") + "\n}\n" + base_text.substr(end);
}

void DynamicBuilder::run() {
  const auto start = std::chrono::steady_clock::now();
  if (steps_->empty()) {
    find_steps();
    *steps_ = dims_;
  } else {
    dims_ = *steps_;
  }
  // Buckets: the general one first, then one per combination of the single sizes that
  // SplitRequest found (most often 1).
  for (size_t d = 0; d < dims_.size(); ++d) {
    std::vector<int64_t>& singles = singles_[d];
    std::erase_if(singles, [&](int64_t v) { return v < dims_[d].lo || v >= dims_[d].hi; });
    std::sort(singles.begin(), singles.end());
  }
  std::vector<Bucket> buckets;
  size_t combinations = 1;
  for (const auto& singles : singles_) combinations *= singles.size() + 1;
  for (size_t c = 0; c < combinations; ++c) {
    Bucket bucket;
    bucket.dims = dims_;
    for (size_t d = 0, rest = c; d < dims_.size(); ++d) {
      const size_t choice = rest % (singles_[d].size() + 1);
      rest /= singles_[d].size() + 1;
      DimSizes& r = bucket.dims[d];
      if (choice == 0) {
        if (!singles_[d].empty()) r.lo = singles_[d].back() + r.step;
      } else {
        r.lo = r.hi = singles_[d][choice - 1];
        bucket.condition += (bucket.condition.empty() ? "" : " && ") + std::string(kDimPrefix) + names_[d] +
                            " == " + std::to_string(r.lo);
      }
    }
    for (const DimSizes& d : bucket.dims) bucket.base_sizes.push_back(d.hi);
    buckets.push_back(std::move(bucket));
  }
  // Each bucket's largest sizes: its memory plan; the arena is the largest plan.
  int64_t arena = 0, thread_scratch = 0;
  for (Bucket& bucket : buckets) {
    log("compiling (memory planned here)", bucket.base_sizes);
    bucket.base = lower_at(bucket.base_sizes);
    for (const ir::Op& op : bucket.base.ops) {
      bucket.base_scratch.push_back(op.scratch_bytes);
      bucket.base_thread_scratch = std::max(bucket.base_thread_scratch, op.thread_scratch_bytes);
    }
    passes::plan_memory(bucket.base);
    number_buffers(bucket);
    arena = std::max(arena, bucket.base.arena_bytes);
    for (const ir::Op& op : bucket.base.ops)
      thread_scratch = std::max(thread_scratch, op.thread_scratch_bytes);
    for (const ir::GraphOutput& out : bucket.base.outputs)
      bucket.base_outputs.push_back(bucket.base.value(out.value).shape);
  }
  for (size_t b = 1; b < buckets.size(); ++b)
    buckets[b].first_offset = buckets[b - 1].first_offset + buckets[b - 1].buffers.size();
  // The general bucket's base holds the weights and the model's desc.
  Bucket& general = buckets.front();
  general.base.arena_bytes = arena;
  // The model's per-thread scratch is its ops' largest (generate_sources): make the general
  // base's first op carry every bucket's largest, which no run function reads.
  if (!general.base.ops.empty())
    general.base.ops.front().thread_scratch_bytes =
        std::max(general.base.ops.front().thread_scratch_bytes, thread_scratch);
  codegen::Sources sources = generate_target_sources(general.base, build_);
  general.base_text = sources.model_cpp;
  weights_sizes_ = general.base_sizes;
  weights_graph_ = &general.base;
  for (ir::Constant& c : general.base.constants) {
    weights_dtypes_.push_back(c.dtype);
    weights_offsets_.push_back(c.offset);
    weights_.push_back(std::move(c.bytes));
  }
  for (size_t b = 1; b < buckets.size(); ++b) {
    check_weights(buckets[b].base, buckets[b].base_sizes);
    buckets[b].base_text = generate(buckets[b].base);
  }
  for (Bucket& bucket : buckets) fit_bucket(bucket);

  // The model source: the general one's, its run function dispatching to the buckets'.
  std::string text =
      build_.cuda ? cuda_source(general.base_text, buckets) : cpu_source(general.base_text, buckets);
  const std::string desc_at = "const aotc::rt::ModelDesc kModel = {";
  const size_t at = text.find(desc_at);
  const std::string marker = "/*dynamic=*/nullptr";
  const size_t mark = text.find(marker);
  if (at == std::string::npos || mark == std::string::npos)
    throw CompileError("internal: generated code has no ModelDesc to extend");
  text.replace(mark, marker.size(), "&kDynamic");
  text.insert(at, dynamic_desc(buckets));
  sources.model_cpp = text;
  if (build_.verbose)
    std::fprintf(stderr, "aotc: dynamic: %zu bucket(s) compiled and fitted in %.2f s\n", buckets.size(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  build_sources(sources, build_);
}

}  // namespace

namespace {

// An --input as the user wrote it: "ids:BxS:int64".
std::string input_text(const InputSignature& in) {
  std::string dims;
  for (size_t d = 0; d < in.spec.shape.size(); ++d)
    dims += (d ? "x" : "") + (in.dim_names[d].empty() ? std::to_string(in.spec.shape[d]) : in.dim_names[d]);
  return in.spec.name + ":" + dims + ":" + ir::dtype_name(in.spec.dtype);
}

}  // namespace

void check_dynamic_signature(const DynamicSignature& signature) {
  std::set<std::string> given, used;
  for (const DimRange& d : signature.dims) {
    if (!given.insert(d.name).second) throw std::invalid_argument("--dim " + d.name + " is given twice");
  }
  for (const InputSignature& in : signature.inputs)
    for (const std::string& name : in.dim_names) {
      if (name.empty()) continue;
      used.insert(name);
      if (!given.count(name))
        throw std::invalid_argument("--input '" + input_text(in) + "' names dim " + name +
                                    ", which has no range: add --dim " + name +
                                    "=MIN..MAX (the arena is planned for MAX)");
    }
  for (const DimRange& d : signature.dims)
    if (!used.count(d.name)) throw std::invalid_argument("--dim " + d.name + " is in no --input's dims");
  if (signature.dims.size() > kMaxDims)
    throw std::invalid_argument("at most " + std::to_string(kMaxDims) + " named dims are supported, got " +
                                std::to_string(signature.dims.size()));
  std::vector<int64_t> largest;
  for (const DimRange& d : signature.dims) largest.push_back(d.max);
  for (const frontend::InputSpec& spec : specs_at(signature, largest)) {
    int64_t total = 1;
    for (int64_t size : spec.shape) {
      if (total > (int64_t{1} << 40) / size)
        throw std::invalid_argument("--input " + spec.name + " is too large at the --dim maxima");
      total *= size;
    }
  }
}

std::vector<frontend::InputSpec> specs_at(const DynamicSignature& signature,
                                          const std::vector<int64_t>& sizes) {
  std::vector<frontend::InputSpec> specs;
  for (const InputSignature& in : signature.inputs) {
    frontend::InputSpec spec = in.spec;
    for (size_t d = 0; d < in.dim_names.size(); ++d)
      for (size_t k = 0; k < signature.dims.size(); ++k)
        if (in.dim_names[d] == signature.dims[k].name) spec.shape[d] = sizes[k];
    specs.push_back(std::move(spec));
  }
  return specs;
}

void build_dynamic_model(const LowerModel& lower, const DynamicSignature& signature,
                         const ModelBuild& build) {
  codegen::resolve_target(build.target_triple);
  // Size 1 gets code of its own from the start where the range holds it: it is special in
  // most models (a broadcast's stride, a transpose that is no copy), and finding that out
  // costs a restart.
  std::vector<std::vector<int64_t>> singles(signature.dims.size());
  for (size_t d = 0; d < signature.dims.size(); ++d)
    if (signature.dims[d].min == 1 && signature.dims[d].max > 1) singles[d].push_back(1);
  std::vector<DimSizes> steps;
  SampleCache cache;
  for (;;) {
    try {
      DynamicBuilder(lower, signature, build, singles, &steps, &cache).run();
      return;
    } catch (const SplitRequest& split) {
      // At most a few special sizes per dim: beyond, the model changes with it too much.
      if (singles[split.dim].size() >= kMaxSingleSizes ||
          std::find(singles[split.dim].begin(), singles[split.dim].end(), split.size) !=
              singles[split.dim].end())
        throw CompileError(split.why);
      if (build.verbose)
        std::fprintf(stderr, "aotc: dynamic: %s = %lld gets code of its own: %s\n",
                     signature.dims[split.dim].name.c_str(), static_cast<long long>(split.size),
                     split.why.c_str());
      singles[split.dim].push_back(split.size);
    }
  }
}

}  // namespace aotc::driver

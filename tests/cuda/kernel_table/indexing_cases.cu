// Indexing, scans and arg reductions: gather (and take_along_dim's broadcast strides),
// index_gather, scatter (src and scalar, repeated indices on both of its paths),
// scatter_reduce (every reduction, both paths), tril_triu,
// arg_reduce, sort_lines, cumsum and scan, against the CPU kernels. Byte-moving kernels run for
// every element size on random bytes (every bit pattern, NaNs included) with int64 and
// int32 indices that are negative and out of range; everything is compared bit for bit
// except the float cumsum's block scan (another order of additions) and logcumsumexp (log1p
// and exp in double, glibc's and CUDA's).
#include <aotc/rt/cuda/scatter_plan.h>
#include <aotc/rt/cuda/sort_plan.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include <limits>
#include <type_traits>

#include "kernel_table.h"

namespace aotc::test {
namespace {

std::vector<int64_t> dense_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string dims_of(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t d = 0; d < dims.size(); ++d) s += (d ? "x" : "") + std::to_string(dims[d]);
  return s;
}

std::string elem_what(int64_t elem, int64_t index_bytes) {
  return " e" + std::to_string(elem) + (index_bytes ? " i" + std::to_string(index_bytes * 8) : "");
}

std::vector<uint8_t> random_bytes(KernelTable& t, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(t.rng()() >> 56);
  return v;
}

// An index tensor of n values in [lo, hi], as int64 or int32 bytes.
std::vector<uint8_t> index_bytes(KernelTable& t, size_t n, int64_t lo, int64_t hi, int64_t elem) {
  const std::vector<int64_t> v = t.ints(n, lo, hi);
  std::vector<uint8_t> b(n * static_cast<size_t>(elem));
  for (size_t i = 0; i < n; ++i) {
    if (elem == 4) {
      const auto v32 = static_cast<int32_t>(v[i]);
      std::memcpy(b.data() + i * 4, &v32, 4);
    } else {
      std::memcpy(b.data() + i * 8, &v[i], 8);
    }
  }
  return b;
}

// ---- gather: out dims (the index's), x dims (1 along take_along_dim's broadcast dims)
void gather_case(KernelTable& t, const std::vector<int64_t>& out, const std::vector<int64_t>& xd, int dim,
                 int64_t elem, int64_t ibytes) {
  rt::GatherParams p;
  p.rank = static_cast<int32_t>(out.size());
  p.dim = dim;
  const std::vector<int64_t> xs = dense_strides(xd);
  bool broadcast = false;
  for (size_t d = 0; d < out.size(); ++d) {
    p.dims[d] = out[d];
    const bool b = static_cast<int>(d) != dim && xd[d] != out[d];
    p.x_strides[d] = b ? 0 : xs[d];
    broadcast = broadcast || b;
  }
  p.x_dim_size = xd[static_cast<size_t>(dim)];
  p.elem_size = elem;
  p.index_elem_size = ibytes;
  const size_t n = static_cast<size_t>(numel(out)), e = static_cast<size_t>(elem);
  const std::vector<uint8_t> x = random_bytes(t, static_cast<size_t>(numel(xd)) * e);
  const std::vector<uint8_t> idx = index_bytes(t, n, -2 * p.x_dim_size, 2 * p.x_dim_size - 1, ibytes);
  std::vector<uint8_t> cpu(n * e);
  rt::gather(t.pool(), p, x.data(), idx.data(), cpu.data());
  uint8_t* y = t.device<uint8_t>(n * e);
  rt::cuda::gather(t.stream(), p, t.upload(x), t.upload(idx), y);
  t.expect_equal(
      broadcast ? "gather (broadcast)" : "gather",
      dims_of(out) + " from " + dims_of(xd) + " dim " + std::to_string(dim) + elem_what(elem, ibytes), cpu,
      t.download(y, n * e));
}

void gather_cases(KernelTable& t) {
  for (const int64_t elem : {1, 2, 4, 8})
    for (const int64_t ib : {8, 4}) {
      gather_case(t, {5, 7}, {5, 9}, 1, elem, ib);
      gather_case(t, {3, 4, 6}, {5, 4, 7}, 0, elem, ib);
      gather_case(t, {13}, {1}, 0, elem, ib);
      gather_case(t, {2, 3, 5, 11}, {2, 4, 5, 11}, 3, elem, ib);
      gather_case(t, {2, 3, 1, 11}, {2, 3, 7, 13}, 2, elem, ib);
      gather_case(t, {4, 6, 5}, {1, 6, 1}, 1, elem, ib);  // take_along_dim: x broadcast on dims 0, 2
      gather_case(t, {3, 2, 257}, {3, 1, 300}, 2, elem, ib);
    }
  gather_case(t, {3, 1000, 7}, {3, 1001, 7}, 1, 4, 8);
}

// ---- index_gather: x as [outer, sizes..., inner]
void index_gather_case(KernelTable& t, int64_t outer, int64_t count, int64_t inner,
                       std::vector<int64_t> sizes, int64_t elem, std::vector<int64_t> ibytes,
                       int64_t misalign = 0) {
  rt::IndexGatherParams p;
  p.outer = outer, p.count = count, p.inner = inner, p.elem_size = elem;
  p.num_indices = static_cast<int32_t>(sizes.size());
  int64_t blocks = 1;
  std::vector<std::vector<uint8_t>> idx;
  std::vector<const void*> host, device;
  for (size_t k = 0; k < sizes.size(); ++k) {
    p.sizes[k] = sizes[k];
    p.index_elem_size[k] = ibytes[k];
    blocks *= sizes[k];
    idx.push_back(index_bytes(t, static_cast<size_t>(count), -sizes[k] - 2, sizes[k] + 2, ibytes[k]));
  }
  for (const auto& v : idx) {
    host.push_back(v.data());
    device.push_back(t.upload(v));
  }
  const size_t e = static_cast<size_t>(elem), m = static_cast<size_t>(misalign) * e;
  const size_t nx = static_cast<size_t>(outer * blocks * inner) * e,
               ny = static_cast<size_t>(outer * count * inner) * e;
  const std::vector<uint8_t> x = random_bytes(t, nx + m);
  std::vector<uint8_t> cpu(ny);
  rt::index_gather(t.pool(), p, x.data() + m, host.data(), cpu.data());
  uint8_t* y = t.device<uint8_t>(ny + m);
  rt::cuda::index_gather(t.stream(), p, t.upload(x) + m, device.data(), y + m);
  std::string what = std::to_string(outer) + "x[" + dims_of(sizes) + "]x" + std::to_string(inner) +
                     " count " + std::to_string(count) + " e" + std::to_string(elem) + " i";
  for (int64_t b : ibytes) what += std::to_string(b * 8);
  if (misalign) what += " misaligned";
  std::vector<uint8_t> gpu = t.download(y, ny + m);
  t.expect_equal("index_gather", what, cpu,
                 std::vector<uint8_t>(gpu.begin() + static_cast<std::ptrdiff_t>(m), gpu.end()));
}

void index_gather_cases(KernelTable& t) {
  for (const int64_t elem : {1, 2, 4, 8}) {
    index_gather_case(t, 1, 13, 1, {7}, elem, {8});
    index_gather_case(t, 3, 5, 7, {11}, elem, {4});
    index_gather_case(t, 2, 9, 16, {5}, elem, {8});  // 16-byte units
    index_gather_case(t, 4, 6, 3, {5, 3}, elem, {8, 4});
    index_gather_case(t, 1, 17, 6, {2, 3, 4}, elem, {4, 8, 4});
    index_gather_case(t, 2, 7, 12, {9}, elem, {8}, 1);  // pointers off the blocks' alignment
    index_gather_case(t, 5, 1, 1, {1}, elem, {4});
  }
  index_gather_case(t, 3, 300, 129, {257}, 4, {8});
}

// ---- scatter: index dims, y dims, src dims (empty: a scalar value; "zero": a device
// element read through all-zero strides)
void scatter_case(KernelTable& t, const std::vector<int64_t>& id, const std::vector<int64_t>& yd, int dim,
                  int64_t elem, int64_t ibytes, int src_kind, int64_t index_range = 0) {
  rt::ScatterParams p;
  p.rank = static_cast<int32_t>(id.size());
  p.dim = dim;
  const std::vector<int64_t> ys = dense_strides(yd);
  std::vector<int64_t> sd = id;  // src: larger than the index along the first dim
  sd[0] += 1;
  const std::vector<int64_t> ss = dense_strides(sd);
  for (size_t d = 0; d < id.size(); ++d) {
    p.dims[d] = id[d];
    p.y_strides[d] = ys[d];
    p.src_strides[d] = src_kind == 0 ? ss[d] : 0;
  }
  p.y_dim_size = yd[static_cast<size_t>(dim)];
  p.elem_size = elem;
  p.index_elem_size = ibytes;
  const int64_t range = index_range ? index_range : p.y_dim_size;
  const size_t e = static_cast<size_t>(elem), ny = static_cast<size_t>(numel(yd)) * e;
  const std::vector<uint8_t> self = random_bytes(t, ny);
  const std::vector<uint8_t> src = random_bytes(t, src_kind == 0 ? static_cast<size_t>(numel(sd)) * e : e);
  const std::vector<uint8_t> idx = index_bytes(t, static_cast<size_t>(numel(id)), -range - 1, range, ibytes);
  unsigned char value[8] = {};
  std::memcpy(value, src.data(), e);
  std::vector<uint8_t> cpu = self;
  rt::scatter(t.pool(), p, src_kind == 1 ? static_cast<const void*>(value) : src.data(), idx.data(),
              cpu.data());
  uint8_t* y = t.device<uint8_t>(ny);
  const int64_t scratch_bytes = rt::cuda::scatter_scratch_bytes(p);
  void* scratch = scratch_bytes ? t.device<uint8_t>(static_cast<size_t>(scratch_bytes)) : nullptr;
  rt::cuda::scatter(t.stream(), p, t.upload(self), static_cast<int64_t>(ny),
                    src_kind == 1 ? nullptr : t.upload(src), src_kind == 1 ? value : nullptr, t.upload(idx),
                    y, scratch);
  const char* kinds[] = {"", " value", " zero strides"};
  t.expect_equal(rt::cuda::scatter_scans_lines(p) ? "scatter (lines)" : "scatter (marked)",
                 dims_of(id) + " into " + dims_of(yd) + " dim " + std::to_string(dim) +
                     elem_what(elem, ibytes) + kinds[src_kind],
                 cpu, t.download(y, ny));
}

void scatter_cases(KernelTable& t) {
  for (const int64_t elem : {1, 2, 4, 8})
    for (const int64_t ib : {8, 4})
      for (const int kind : {0, 1, 2}) {
        scatter_case(t, {5, 7}, {6, 9}, 1, elem, ib, kind);
        scatter_case(t, {4, 3, 5}, {5, 3, 6}, 0, elem, ib, kind);
        scatter_case(t, {300}, {37}, 0, elem, ib, kind);  // long line, many repeats: marked
        scatter_case(t, {3, 77, 5}, {4, 80, 6}, 1, elem, ib, kind);
        scatter_case(t, {2, 3, 40}, {2, 5, 45}, 2, elem, ib, kind, 3);  // heavy repeats
      }
  scatter_case(t, {2, 33, 3}, {3, 5, 4}, 1, 4, 8, 0);  // just past the line scan
  scatter_case(t, {2, 32, 3}, {3, 5, 4}, 1, 4, 8, 0);  // its longest lines
  scatter_case(t, {1, 1}, {1, 1}, 0, 8, 8, 0);
  scatter_case(t, {100000}, {1000}, 0, 4, 8, 0);
}

// ---- scatter_reduce: index dims, y dims, dim; every reduction with and without self, on
// float32 (NaNs only where no arithmetic touches them: Amax / Amin), int64 over its whole
// range (sums and products wrap, means floor) and int32; the sorted path past the line scan.
template <class T>
std::vector<T> scatter_reduce_values(KernelTable& t, size_t n, rt::ScatterReduceOp op) {
  std::vector<T> v(n);
  if constexpr (std::is_same_v<T, float>) {
    const bool nans = op == rt::ScatterReduceOp::Amax || op == rt::ScatterReduceOp::Amin;
    v = t.floats(n, nans);
  } else {
    const int64_t wide = std::is_same_v<T, int64_t> ? LLONG_MAX : INT_MAX;
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(t.ints(1, -wide - 1, wide)[0]);
  }
  return v;
}

template <class T>
void scatter_reduce_case(KernelTable& t, rt::ElemType type, const std::vector<int64_t>& id,
                         const std::vector<int64_t>& yd, int dim, int64_t ibytes, int64_t index_range = 0,
                         bool broadcast_index = false) {
  const char* names[] = {"sum", "prod", "mean", "amax", "amin"};
  for (const auto op : {rt::ScatterReduceOp::Sum, rt::ScatterReduceOp::Prod, rt::ScatterReduceOp::Mean,
                        rt::ScatterReduceOp::Amax, rt::ScatterReduceOp::Amin})
    for (const bool include_self : {true, false}) {
      rt::ScatterReduceParams r;
      rt::ScatterParams& p = r.geometry;
      p.rank = static_cast<int32_t>(id.size());
      p.dim = dim;
      const std::vector<int64_t> ys = dense_strides(yd);
      std::vector<int64_t> sd = id;  // src: larger than the index along the last dim
      sd.back() += 2;
      const std::vector<int64_t> ss = dense_strides(sd);
      const std::vector<int64_t> is = dense_strides(id);
      for (size_t d = 0; d < id.size(); ++d) {
        p.dims[d] = id[d];
        p.y_strides[d] = ys[d];
        p.src_strides[d] = ss[d];
        // broadcast: index_add's 1-d index, read along dim only
        r.index_strides[d] = broadcast_index ? (static_cast<int>(d) == dim ? 1 : 0) : is[d];
      }
      p.y_dim_size = yd[static_cast<size_t>(dim)];
      p.elem_size = sizeof(T);
      p.index_elem_size = ibytes;
      r.op = op;
      r.type = type;
      r.include_self = include_self;
      r.y_numel = numel(yd);
      const int64_t range = index_range ? index_range : p.y_dim_size;
      const size_t ny = static_cast<size_t>(numel(yd));
      const std::vector<T> self = scatter_reduce_values<T>(t, ny, op);
      const std::vector<T> src = scatter_reduce_values<T>(t, static_cast<size_t>(numel(sd)), op);
      const size_t n_index = broadcast_index ? static_cast<size_t>(id[static_cast<size_t>(dim)])
                                             : static_cast<size_t>(numel(id));
      const std::vector<uint8_t> idx = index_bytes(t, n_index, -range - 1, range, ibytes);
      std::vector<T> cpu = self;
      std::vector<int64_t> counts(ny);
      rt::scatter_reduce(t.pool(), r, src.data(), idx.data(), cpu.data(), counts.data());
      T* y = t.device<T>(ny);
      const int64_t scratch_bytes = rt::cuda::scatter_reduce_scratch_of(r).bytes;
      void* scratch = scratch_bytes ? t.device<uint8_t>(static_cast<size_t>(scratch_bytes)) : nullptr;
      rt::cuda::scatter_reduce(t.stream(), r, t.upload(self), static_cast<int64_t>(ny * sizeof(T)),
                               t.upload(src), t.upload(idx), y, scratch);
      const char* types[] = {"f32", "i64", "i32", "bool"};
      t.expect_equal(rt::cuda::scatter_scans_lines(p) ? "scatter_reduce (lines)" : "scatter_reduce (sorted)",
                     dims_of(id) + " into " + dims_of(yd) + " dim " + std::to_string(dim) + " " +
                         types[static_cast<int>(type)] + " i" + std::to_string(ibytes * 8) + " " +
                         names[static_cast<int>(op)] + (include_self ? "" : " without self") +
                         (broadcast_index ? " broadcast index" : ""),
                     cpu, t.download(y, ny));
    }
}

void scatter_reduce_cases(KernelTable& t) {
  for (const int64_t ib : {8, 4}) {
    scatter_reduce_case<float>(t, rt::ElemType::F32, {5, 7}, {6, 9}, 1, ib);
    scatter_reduce_case<float>(t, rt::ElemType::F32, {4, 3, 5}, {5, 3, 6}, 0, ib);
    scatter_reduce_case<float>(t, rt::ElemType::F32, {300}, {37}, 0, ib);  // long line: sorted
    scatter_reduce_case<float>(t, rt::ElemType::F32, {3, 77, 5}, {4, 80, 6}, 1, ib);
    scatter_reduce_case<float>(t, rt::ElemType::F32, {2, 3, 40}, {2, 5, 45}, 2, ib, 3);  // heavy repeats
    scatter_reduce_case<int64_t>(t, rt::ElemType::I64, {4, 3, 5}, {5, 3, 6}, 0, ib);
    scatter_reduce_case<int64_t>(t, rt::ElemType::I64, {3, 77, 5}, {4, 80, 6}, 1, ib);
    scatter_reduce_case<int32_t>(t, rt::ElemType::I32, {5, 7}, {6, 9}, 1, ib);
    scatter_reduce_case<int32_t>(t, rt::ElemType::I32, {2, 300, 3}, {3, 11, 4}, 1, ib);
  }
  scatter_reduce_case<float>(t, rt::ElemType::F32, {2, 33, 3}, {3, 5, 4}, 1, 8);  // just past the line scan
  scatter_reduce_case<float>(t, rt::ElemType::F32, {2, 32, 3}, {3, 5, 4}, 1, 8);  // its longest lines
  scatter_reduce_case<float>(t, rt::ElemType::F32, {1, 1}, {1, 1}, 0, 8);
  scatter_reduce_case<float>(t, rt::ElemType::F32, {20000, 16}, {1000, 16}, 0, 8);  // a graph's aggregation
  scatter_reduce_case<float>(t, rt::ElemType::F32, {20000, 16}, {1000, 16}, 0, 8, 0, true);  // index_add's
  scatter_reduce_case<float>(t, rt::ElemType::F32, {3, 50, 2, 5}, {4, 7, 2, 6}, 1, 4, 0, true);
  scatter_reduce_case<float>(t, rt::ElemType::F32, {3, 20, 2, 5}, {4, 7, 2, 6}, 1, 8, 0, true);  // lines
  scatter_reduce_case<int64_t>(t, rt::ElemType::I64, {2, 40, 3}, {2, 9, 3}, 1, 4, 0, true);
  scatter_reduce_case<float>(t, rt::ElemType::F32, {5000}, {3}, 0, 4);  // long runs of one index
}

// ---- tril / triu
void tril_triu_cases(KernelTable& t) {
  const int64_t huge = int64_t{1} << 40;
  const int64_t most = std::numeric_limits<int64_t>::max(), least = std::numeric_limits<int64_t>::min();
  for (const int64_t elem : {1, 2, 4, 8})
    for (const bool upper : {false, true})
      for (const int64_t diag :
           {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{5}, int64_t{-4}, huge, -huge, most, least})
        for (const auto& s :
             std::vector<std::vector<int64_t>>{{1, 7, 9}, {3, 11, 5}, {2, 1, 1}, {1, 64, 65}}) {
          rt::TriangleParams p;
          p.batch = s[0], p.rows = s[1], p.cols = s[2], p.diagonal = diag, p.upper = upper,
          p.elem_size = elem;
          const size_t n = static_cast<size_t>(numel(s) * elem);
          const std::vector<uint8_t> x = random_bytes(t, n);
          std::vector<uint8_t> cpu(n);
          rt::tril_triu(t.pool(), p, x.data(), cpu.data());
          uint8_t* y = t.device<uint8_t>(n);
          rt::cuda::tril_triu(t.stream(), p, t.upload(x), y);
          t.expect_equal(upper ? "tril_triu (triu)" : "tril_triu (tril)",
                         dims_of(s) + " diagonal " + std::to_string(diag) + " e" + std::to_string(elem), cpu,
                         t.download(y, n));
        }
}

// ---- arg_reduce
template <class T>
void arg_reduce_case(KernelTable& t, rt::ElemType type, const std::vector<T>& x, int64_t outer, int64_t axis,
                     int64_t inner, const std::string& name) {
  const size_t n = static_cast<size_t>(outer * inner);
  for (const bool is_max : {true, false})
    for (const bool with_values : {true, false}) {
      std::vector<T> cpu_v(n);
      std::vector<int64_t> cpu_i(n);
      rt::arg_reduce(t.pool(), type, is_max, outer, axis, inner, x.data(),
                     with_values ? cpu_v.data() : nullptr, cpu_i.data());
      T* v = with_values ? t.device<T>(n) : nullptr;
      int64_t* i = t.device<int64_t>(n);
      rt::cuda::arg_reduce(t.stream(), type, is_max, outer, axis, inner, t.upload(x), v, i);
      const std::string op = std::string("arg_reduce (") + (is_max ? "max" : "min") + ", " + name + ")";
      const std::string what = dims_of({outer, axis, inner}) + (with_values ? "" : " no values");
      t.expect_equal(op, what, cpu_i, t.download(i, n));
      if (with_values) {
        // compared as bytes: bit for bit, NaN payloads included
        std::vector<T> gpu_v = t.download(v, n);
        std::vector<uint8_t> a(n * sizeof(T)), b(n * sizeof(T));
        if (n) std::memcpy(a.data(), cpu_v.data(), a.size());
        if (n) std::memcpy(b.data(), gpu_v.data(), b.size());
        t.expect_equal(op + " values", what, a, b);
      }
    }
}

void arg_reduce_cases(KernelTable& t) {
  const std::vector<std::vector<int64_t>> shapes = {{3, 17, 5},   {4, 100, 1},  {2, 5000, 1}, {3, 2000, 3},
                                                    {1, 9000, 2}, {1, 1, 1},    {7, 1, 3},    {1, 63, 1},
                                                    {2, 64, 1},   {300, 70, 1}, {1, 4096, 1}, {5, 1024, 7}};
  const float nan = __builtin_nanf(""), inf = __builtin_inff();
  for (const auto& s : shapes) {
    const size_t n = static_cast<size_t>(numel(s));
    std::vector<float> f = t.floats(n, true);
    // ties and signed zeros: few distinct values, some NaNs (with payloads) and infinities
    std::vector<float> ties(n);
    const std::vector<int64_t> pick = t.ints(n, 0, 40);
    for (size_t i = 0; i < n; ++i) {
      const int64_t k = pick[i];
      ties[i] = k == 0   ? nan
                : k == 1 ? -nan
                : k == 2 ? inf
                : k == 3 ? -inf
                : k < 10 ? -0.0f
                : k < 20 ? 0.0f
                         : static_cast<float>(k % 3);
    }
    std::vector<float> no_nan = ties;
    for (float& v : no_nan)
      if (v != v) v = 1.0f;
    arg_reduce_case(t, rt::ElemType::F32, f, s[0], s[1], s[2], "f32");
    arg_reduce_case(t, rt::ElemType::F32, ties, s[0], s[1], s[2], "f32 ties, NaN");
    arg_reduce_case(t, rt::ElemType::F32, no_nan, s[0], s[1], s[2], "f32 ties");
    arg_reduce_case(t, rt::ElemType::I64, t.ints(n, INT64_MIN, INT64_MAX), s[0], s[1], s[2], "i64");
    arg_reduce_case(t, rt::ElemType::I64, t.ints(n, -3, 3), s[0], s[1], s[2], "i64 ties");
    std::vector<int32_t> i32(n);
    const std::vector<int64_t> r32 = t.ints(n, -5, 5);
    for (size_t i = 0; i < n; ++i) i32[i] = static_cast<int32_t>(r32[i] * 400000000);
    arg_reduce_case(t, rt::ElemType::I32, i32, s[0], s[1], s[2], "i32");
    // bool as bytes 0/1 (a kernel reads bool)
    std::vector<uint8_t> bits(n);
    const std::vector<int64_t> r = t.ints(n, 0, 9);
    for (size_t i = 0; i < n; ++i) bits[i] = r[i] == 0 ? 1 : 0;
    static_assert(sizeof(bool) == 1);
    const std::vector<char> as_bool(bits.begin(), bits.end());
    arg_reduce_case(t, rt::ElemType::Bool, as_bool, s[0], s[1], s[2], "bool");
  }
}

// ---- sort_lines (topk, sort, argsort)
template <class T>
void sort_case(KernelTable& t, rt::ElemType type, const std::vector<T>& x, int64_t outer, int64_t axis,
               int64_t inner, const std::string& name) {
  for (const int64_t k : {axis, axis / 2 + 1, std::min<int64_t>(axis, 40), int64_t{1}})
    for (const bool descending : {true, false})
      for (const bool with_values : {true, false}) {
        const size_t n = static_cast<size_t>(outer * k * inner);
        std::vector<T> cpu_v(n);
        std::vector<int64_t> cpu_i(n);
        rt::sort_lines(t.pool(), type, descending, outer, axis, inner, k, x.data(),
                       with_values ? cpu_v.data() : nullptr, cpu_i.data());
        T* v = with_values ? t.device<T>(n) : nullptr;
        int64_t* i = t.device<int64_t>(n);
        const int64_t scratch_bytes =
            rt::cuda::sort_lines_scratch_bytes(static_cast<int64_t>(sizeof(T)), outer, axis, inner, k);
        void* scratch = scratch_bytes ? t.device<unsigned char>(static_cast<size_t>(scratch_bytes)) : nullptr;
        rt::cuda::sort_lines(t.stream(), type, descending, outer, axis, inner, k, t.upload(x), v, i, scratch);
        const std::string op =
            std::string("sort_lines (") + (descending ? "descending" : "ascending") + ", " + name + ")";
        const std::string what =
            dims_of({outer, axis, inner}) + " k " + std::to_string(k) + (with_values ? "" : " no values");
        t.expect_equal(op, what, cpu_i, t.download(i, n));
        if (with_values) {
          std::vector<T> gpu_v = t.download(v, n);
          std::vector<uint8_t> a(n * sizeof(T)), b(n * sizeof(T));
          if (n) std::memcpy(a.data(), cpu_v.data(), a.size());
          if (n) std::memcpy(b.data(), gpu_v.data(), b.size());
          t.expect_equal(op + " values", what, a, b);
        }
      }
}

// Both kernels sort in one total order (NaN last, equal values by index): the same indices
// and the same bytes, on random values and on ties, signed zeros, NaNs and infinities, lines
// longer than the GPU kernel's shared-memory tile, and strided lines.
void sort_cases(KernelTable& t) {
  // Lines past 256 values sort in chunks of 4096 (2048 for int64) that merge: one chunk,
  // a chunk and one value, several chunks with an odd one out, strided chunked lines, and a
  // vocabulary-sized line.
  const std::vector<std::vector<int64_t>> shapes = {{3, 17, 5},   {4, 100, 1},   {2, 3000, 1}, {1, 1, 1},
                                                    {7, 1, 3},    {5, 300, 7},   {1, 2049, 2}, {64, 33, 1},
                                                    {1, 256, 1},  {3, 257, 1},   {2, 4096, 1}, {1, 4097, 1},
                                                    {2, 9000, 3}, {1, 20481, 1}, {1, 50257, 1}};
  const float nan = __builtin_nanf(""), inf = __builtin_inff();
  for (const auto& s : shapes) {
    const size_t n = static_cast<size_t>(numel(s));
    std::vector<float> ties(n);
    const std::vector<int64_t> pick = t.ints(n, 0, 40);
    for (size_t i = 0; i < n; ++i) {
      const int64_t k = pick[i];
      ties[i] = k == 0   ? nan
                : k == 1 ? -nan
                : k == 2 ? inf
                : k == 3 ? -inf
                : k < 10 ? -0.0f
                : k < 20 ? 0.0f
                         : static_cast<float>(k % 3);
    }
    sort_case(t, rt::ElemType::F32, t.floats(n, true), s[0], s[1], s[2], "f32");
    sort_case(t, rt::ElemType::F32, ties, s[0], s[1], s[2], "f32 ties, NaN");
    sort_case(t, rt::ElemType::I64, t.ints(n, INT64_MIN, INT64_MAX), s[0], s[1], s[2], "i64");
    sort_case(t, rt::ElemType::I64, t.ints(n, -3, 3), s[0], s[1], s[2], "i64 ties");
    std::vector<int32_t> i32(n);
    const std::vector<int64_t> r32 = t.ints(n, -5, 5);
    for (size_t i = 0; i < n; ++i) i32[i] = static_cast<int32_t>(r32[i] * 400000000);
    sort_case(t, rt::ElemType::I32, i32, s[0], s[1], s[2], "i32");
    const std::vector<int64_t> r = t.ints(n, 0, 3);
    std::vector<char> as_bool(n);
    for (size_t i = 0; i < n; ++i) as_bool[i] = r[i] == 0 ? 1 : 0;
    sort_case(t, rt::ElemType::Bool, as_bool, s[0], s[1], s[2], "bool");
  }
}

// ---- cumsum
void cumsum_cases(KernelTable& t) {
  // one thread per line (the CPU's order: bit for bit) and the block scan (long axis, few lines)
  const std::vector<std::vector<int64_t>> shapes = {{3, 17, 5},   {1, 1, 1},       {7, 1, 3},
                                                    {2, 2048, 1}, {4100, 2100, 1}, {1, 10000, 1},
                                                    {2, 3001, 3}, {1, 100000, 1},  {5, 33, 64}};
  for (const auto& s : shapes) {
    const size_t n = static_cast<size_t>(numel(s));
    const bool block_scan = s[1] > 2048 && s[0] * s[2] < 4096;
    for (const bool specials : {false, true}) {
      if (specials && n > 100000) continue;
      std::vector<float> x = t.floats(n, specials);
      // Where two float32 maxima of one sign overflow depends on the order of the additions:
      // the block scan's -inf then meets the CPU's +inf as NaN. Infinities themselves give
      // the same sums in any order, so the block scan gets those instead.
      if (block_scan)
        for (float& v : x)
          if (std::fabs(v) == std::numeric_limits<float>::max()) v = std::copysign(INFINITY, v);
      std::vector<float> cpu(n);
      rt::cumsum(t.pool(), rt::ElemType::F32, s[0], s[1], s[2], x.data(), cpu.data());
      float* y = t.device<float>(n);
      rt::cuda::cumsum(t.stream(), rt::ElemType::F32, s[0], s[1], s[2], t.upload(x), y);
      // The line walk: exact (NaN where the CPU has one). The block scan: another order of
      // the additions, each of whose L roundings moves a running sum, which grows as sqrt(L)
      // on random data, by up to half an ulp: the difference grows as sqrt(L) ulps too
      // (1.02e-5 of the largest value seen at L = 100000).
      t.expect_close(block_scan ? "cumsum (f32, block scan)" : "cumsum (f32)",
                     dims_of(s) + (specials ? " specials" : ""), cpu, t.download(y, n),
                     block_scan ? 3e-7 * std::sqrt(static_cast<double>(s[1])) : 0.0);
    }
    for (const bool wide : {false, true}) {  // wide: values that wrap around
      const std::vector<int64_t> x = wide ? t.ints(n, INT64_MIN, INT64_MAX) : t.ints(n, -1000, 1000);
      std::vector<int64_t> cpu(n);
      rt::cumsum(t.pool(), rt::ElemType::I64, s[0], s[1], s[2], x.data(), cpu.data());
      int64_t* y = t.device<int64_t>(n);
      rt::cuda::cumsum(t.stream(), rt::ElemType::I64, s[0], s[1], s[2], t.upload(x), y);
      t.expect_equal(block_scan ? "cumsum (i64, block scan)" : "cumsum (i64)",
                     dims_of(s) + (wide ? " wrapping" : ""), cpu, t.download(y, n));
    }
  }
}

// ---- scan (cumprod, logcumsumexp, cummax, cummin)
void scan_cases(KernelTable& t) {
  const std::vector<std::vector<int64_t>> shapes = {
      {3, 17, 5}, {1, 1, 1}, {7, 1, 3}, {2, 300, 1}, {5, 33, 64}};
  for (const auto& s : shapes) {
    const size_t n = static_cast<size_t>(numel(s));
    for (const bool specials : {false, true}) {
      const std::string what = dims_of(s) + (specials ? " specials" : "");
      std::vector<float> x = t.floats(n, specials);
      // Products of values near 1 (long axes neither overflow nor vanish); float32's in
      // double on both, each product correctly rounded: bit for bit.
      std::vector<float> near_one = x;
      for (float& v : near_one)
        if (std::isfinite(v) && std::fabs(v) < 1e3f) v = 1.0f + v * 0.01f;
      for (const rt::ScanOp op : {rt::ScanOp::Prod, rt::ScanOp::LogAddExp}) {
        const std::vector<float>& in = op == rt::ScanOp::Prod ? near_one : x;
        std::vector<float> cpu(n);
        rt::scan(t.pool(), op, rt::ElemType::F32, s[0], s[1], s[2], in.data(), cpu.data(), nullptr);
        float* y = t.device<float>(n);
        rt::cuda::scan(t.stream(), op, rt::ElemType::F32, s[0], s[1], s[2], t.upload(in), y, nullptr);
        // log1p and exp in double differ between glibc and CUDA by an ulp of double at most.
        t.expect_close(op == rt::ScanOp::Prod ? "scan prod (f32)" : "scan logaddexp (f32)", what, cpu,
                       t.download(y, n), op == rt::ScanOp::Prod ? 0.0 : 1e-6);
      }
      for (const rt::ScanOp op : {rt::ScanOp::Max, rt::ScanOp::Min}) {
        std::vector<float> rounded = x;  // ties
        for (float& v : rounded) v = std::round(v * 4.0f) / 4.0f;
        std::vector<float> cpu(n);
        std::vector<int64_t> cpu_at(n);
        rt::scan(t.pool(), op, rt::ElemType::F32, s[0], s[1], s[2], rounded.data(), cpu.data(),
                 cpu_at.data());
        float* y = t.device<float>(n);
        int64_t* at = t.device<int64_t>(n);
        rt::cuda::scan(t.stream(), op, rt::ElemType::F32, s[0], s[1], s[2], t.upload(rounded), y, at);
        const std::string name = op == rt::ScanOp::Max ? "scan max (f32)" : "scan min (f32)";
        t.expect_close(name, what, cpu, t.download(y, n), 0.0);
        t.expect_equal(name + " indices", what, cpu_at, t.download(at, n));
      }
    }
    const std::vector<int64_t> wide = t.ints(n, INT64_MIN, INT64_MAX), small = t.ints(n, -3, 3);
    for (const rt::ScanOp op : {rt::ScanOp::Prod, rt::ScanOp::Max, rt::ScanOp::Min}) {
      const std::vector<int64_t>& x = op == rt::ScanOp::Prod ? wide : small;
      std::vector<int64_t> cpu(n), cpu_at(n);
      const bool indexed = op != rt::ScanOp::Prod;
      rt::scan(t.pool(), op, rt::ElemType::I64, s[0], s[1], s[2], x.data(), cpu.data(),
               indexed ? cpu_at.data() : nullptr);
      int64_t* y = t.device<int64_t>(n);
      int64_t* at = indexed ? t.device<int64_t>(n) : nullptr;
      rt::cuda::scan(t.stream(), op, rt::ElemType::I64, s[0], s[1], s[2], t.upload(x), y, at);
      const std::string name = op == rt::ScanOp::Prod  ? "scan prod (i64, wrapping)"
                               : op == rt::ScanOp::Max ? "scan max (i64)"
                                                       : "scan min (i64)";
      t.expect_equal(name, dims_of(s), cpu, t.download(y, n));
      if (indexed) t.expect_equal(name + " indices", dims_of(s), cpu_at, t.download(at, n));
    }
  }
}

}  // namespace

void indexing_cases(KernelTable& t) {
  gather_cases(t);
  index_gather_cases(t);
  scatter_cases(t);
  scatter_reduce_cases(t);
  tril_triu_cases(t);
  arg_reduce_cases(t);
  sort_cases(t);
  cumsum_cases(t);
  scan_cases(t);
}

}  // namespace aotc::test

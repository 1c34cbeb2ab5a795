// aten::einsum -> gemm / batched_gemm, reduce and strided copies.
//
// The equation gives each dim of each operand a label; the ellipsis's dims get labels of
// their own, right-aligned across the operands as torch broadcasts them. Each operand is
// first read as a strided view: a label repeated within it (a diagonal, "ii->i") becomes
// one dim whose stride is the sum of theirs, and a size-1 dim whose label is larger in
// another operand is broadcast with stride 0. A label that no other operand and not the
// output has is summed out at once (a reduce). Then the operands are contracted left to
// right, two at a time, each pair as one (batched) GEMM: labels in both that are still
// needed (by the output or a later operand) are the batch, labels in both that are not
// are the GEMM's depth, the rest are its rows (first operand) and columns (second). Each
// side is laid out as [batch, rows, depth] or [batch, depth, rows] (then transposed for
// the GEMM), whichever its memory already has, so the common attention forms
// ("bhid,bhjd->bhij", "bhij,bhjd->bhid") need no copy; otherwise one strided copy. Last,
// the result's dims are put in the output's order (a strided copy unless already so).
// The order of the pairwise contractions is the equation's (torch may pick another with
// opt_einsum: the same result up to rounding).
#include "einsum.h"

#include <algorithm>

#include "elementwise.h"
#include "gemm.h"
#include "strided_view.h"

namespace aotc::ops {
namespace {

// torch's label numbering: A-Z are 0-25, a-z 26-51 (so an implicit output lists upper
// case first, as torch does); the ellipsis's dims are kLetters + 0, 1, ... from the left.
constexpr int kLetters = 52;
constexpr int kEllipsis = -1;  // in a parsed term, before the ellipsis is expanded

int letter_label(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -2;
}

std::string label_name(int label) {
  if (label < 26) return std::string(1, static_cast<char>('A' + label));
  if (label < kLetters) return std::string(1, static_cast<char>('a' + label - 26));
  return "... dim " + std::to_string(label - kLetters);
}

// An operand (or an intermediate result) during the contraction: a strided view with one
// distinct label per dim.
struct Term {
  StridedView view;
  std::vector<int> labels;
};

bool has(const std::vector<int>& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

int64_t size_product(const std::vector<int>& labels, const std::vector<int64_t>& label_size) {
  int64_t n = 1;
  for (int l : labels) n *= label_size[static_cast<size_t>(l)];
  return n;
}

class Einsum {
 public:
  Einsum(LowerContext& ctx, const std::string& equation) : ctx_(ctx), equation_(equation) {}

  int lower(const std::vector<int>& operands) {
    parse(operands);
    std::vector<Term> terms;
    for (size_t i = 0; i < operands.size(); ++i) terms.push_back(operand_term(operands[i], i));
    // Labels needed after operand i: by the output or by an operand after i.
    std::vector<int> count(static_cast<size_t>(kLetters + max_ellipsis_), 0);
    for (const Term& t : terms)
      for (int l : t.labels) ++count[static_cast<size_t>(l)];
    for (Term& t : terms) {
      std::vector<int> drop;
      for (int l : t.labels)
        if (count[static_cast<size_t>(l)] == 1 && !has(output_, l)) drop.push_back(l);
      t = sum_out(t, drop);
    }
    Term acc = terms[0];
    for (size_t i = 1; i < terms.size(); ++i) {
      std::vector<int> needed = output_;
      for (size_t j = i + 1; j < terms.size(); ++j)
        for (int l : terms[j].labels) needed.push_back(l);
      acc = contract(acc, terms[i], needed);
    }
    std::vector<int> drop;
    for (int l : acc.labels)
      if (!has(output_, l)) drop.push_back(l);
    acc = sum_out(acc, drop);
    std::vector<int64_t> order;
    for (int l : output_)
      order.push_back(std::find(acc.labels.begin(), acc.labels.end(), l) - acc.labels.begin());
    return materialize(ctx_, permute_view(acc.view, order), -1);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    ctx_.fail("einsum equation '" + equation_ + "': " + what);
  }

  // One term of the equation: labels, kEllipsis for "...", spaces dropped.
  std::vector<int> parse_term(const std::string& term) const {
    std::vector<int> labels;
    bool ellipsis = false;
    for (size_t i = 0; i < term.size(); ++i) {
      const char c = term[i];
      if (c == ' ') continue;
      if (c == '.') {
        if (term.compare(i, 3, "...") != 0) fail("a '.' that is not part of '...'");
        if (ellipsis) fail("more than one '...' in the term '" + term + "'");
        ellipsis = true;
        labels.push_back(kEllipsis);
        i += 2;
        continue;
      }
      const int l = letter_label(c);
      if (l < 0) fail(std::string("'") + c + "' is not a subscript (subscripts are the letters a-z and A-Z)");
      labels.push_back(l);
    }
    return labels;
  }

  void parse(const std::vector<int>& operands) {
    const size_t arrow = equation_.find("->");
    const std::string lhs = equation_.substr(0, arrow);
    std::vector<std::string> terms;
    for (size_t start = 0;;) {
      const size_t comma = lhs.find(',', start);
      terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (terms.size() != operands.size())
      fail(std::to_string(terms.size()) + " operand term(s) for " + std::to_string(operands.size()) +
           " tensor(s)");
    std::vector<std::vector<int>> parsed;
    std::vector<int64_t> ellipsis_dims;
    for (size_t i = 0; i < terms.size(); ++i) {
      const ir::Value& v = ctx_.graph.value(operands[i]);
      if (v.dtype != ir::DType::Float32)
        fail("operand " + std::to_string(i) + " is " + ir::dtype_name(v.dtype) + " (float32 is supported)");
      parsed.push_back(parse_term(terms[i]));
      const int64_t rank = static_cast<int64_t>(v.shape.size());
      const bool ellipsis = has(parsed.back(), kEllipsis);
      const int64_t letters = static_cast<int64_t>(parsed.back().size()) - (ellipsis ? 1 : 0);
      if (ellipsis ? letters > rank : letters != rank)
        fail("the term '" + terms[i] + "' has " + std::to_string(letters) + " subscript(s) for operand " +
             std::to_string(i) + " of shape " + ir::shape_str(v.shape));
      ellipsis_dims.push_back(ellipsis ? rank - letters : 0);
      max_ellipsis_ = std::max(max_ellipsis_, static_cast<int>(ellipsis_dims.back()));
    }
    for (size_t i = 0; i < parsed.size(); ++i) {
      std::vector<int> labels;
      for (int l : parsed[i]) {
        if (l != kEllipsis) {
          labels.push_back(l);
          continue;
        }
        for (int64_t d = 0; d < ellipsis_dims[i]; ++d)
          labels.push_back(kLetters + max_ellipsis_ - static_cast<int>(ellipsis_dims[i]) +
                           static_cast<int>(d));
      }
      inputs_.push_back(labels);
    }
    if (arrow != std::string::npos) {
      for (int l : parse_term(equation_.substr(arrow + 2))) {
        if (l == kEllipsis) {
          for (int d = 0; d < max_ellipsis_; ++d) output_.push_back(kLetters + d);
          continue;
        }
        if (has(output_, l)) fail("the output subscript " + label_name(l) + " appears more than once");
        bool found = false;
        for (const auto& in : inputs_) found = found || has(in, l);
        if (!found) fail("the output subscript " + label_name(l) + " does not appear in any operand");
        output_.push_back(l);
      }
    } else {
      // torch's implicit output: the ellipsis's dims, then the labels that occur once.
      for (int d = 0; d < max_ellipsis_; ++d) output_.push_back(kLetters + d);
      std::vector<int> count(kLetters, 0);
      for (const auto& in : inputs_)
        for (int l : in)
          if (l < kLetters) ++count[static_cast<size_t>(l)];
      for (int l = 0; l < kLetters; ++l)
        if (count[static_cast<size_t>(l)] == 1) output_.push_back(l);
    }
    label_size_.assign(static_cast<size_t>(kLetters + max_ellipsis_), 1);
    std::vector<bool> seen(label_size_.size(), false);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const ir::Shape& shape = ctx_.graph.value(operands[i]).shape;
      for (size_t d = 0; d < shape.size(); ++d) {
        const size_t l = static_cast<size_t>(inputs_[i][d]);
        if (shape[d] == 1) continue;
        if (seen[l] && label_size_[l] != shape[d])
          fail("subscript " + label_name(inputs_[i][d]) + " has size " + std::to_string(shape[d]) +
               " in operand " + std::to_string(i) + ", which does not broadcast with size " +
               std::to_string(label_size_[l]) + " elsewhere");
        seen[l] = true;
        label_size_[l] = shape[d];
      }
    }
  }

  // Operand i as a view with distinct labels: repeated labels merged into one dim (a
  // diagonal), size-1 dims broadcast to their label's size.
  Term operand_term(int id, size_t i) const {
    const StridedView in = view_of(ctx_.graph, id);
    Term t;
    t.view.base = in.base;
    t.view.offset = in.offset;
    for (size_t d = 0; d < inputs_[i].size(); ++d) {
      const int l = inputs_[i][d];
      const auto at = std::find(t.labels.begin(), t.labels.end(), l);
      if (at != t.labels.end()) {
        const size_t j = static_cast<size_t>(at - t.labels.begin());
        if (t.view.sizes[j] != in.sizes[d])
          fail("subscript " + label_name(l) + " is repeated in operand " + std::to_string(i) +
               " with sizes " + std::to_string(t.view.sizes[j]) + " and " + std::to_string(in.sizes[d]));
        t.view.strides[j] += in.strides[d];
        continue;
      }
      t.labels.push_back(l);
      const int64_t size = label_size_[static_cast<size_t>(l)];
      t.view.sizes.push_back(size);
      t.view.strides.push_back(in.sizes[d] == size ? in.strides[d] : 0);
    }
    return t;
  }

  // The term with these labels summed out.
  Term sum_out(const Term& t, const std::vector<int>& drop) const {
    if (drop.empty()) return t;
    std::vector<int64_t> dims;
    Term r;
    for (size_t d = 0; d < t.labels.size(); ++d) {
      if (has(drop, t.labels[d]))
        dims.push_back(static_cast<int64_t>(d));
      else
        r.labels.push_back(t.labels[d]);
    }
    const int x = materialize(ctx_, t.view, -1);
    const int sum = add_reduce_op(ctx_, rt::ReduceOp::Sum, x, reduce_shape(ctx_, t.view.sizes, dims, false));
    r.view = view_of(ctx_.graph, sum);
    return r;
  }

  // A dense value holding the term as [batch, first, second] (*swapped false) or [batch,
  // second, first] (*swapped true): the one that is already so in memory, else a copy of
  // the first.
  int arrange(const Term& t, const std::vector<int>& batch, const std::vector<int>& first,
              const std::vector<int>& second, bool* swapped) const {
    const auto view_in = [&](const std::vector<int>& a, const std::vector<int>& b) {
      std::vector<int64_t> order;
      for (const auto* group : {&batch, &a, &b})
        for (int l : *group)
          order.push_back(std::find(t.labels.begin(), t.labels.end(), l) - t.labels.begin());
      return permute_view(t.view, order);
    };
    const StridedView plain = view_in(first, second), other = view_in(second, first);
    *swapped = !is_contiguous(plain) && is_contiguous(other);
    return materialize(ctx_, *swapped ? other : plain, -1);
  }

  Term contract(const Term& a_in, const Term& b_in, const std::vector<int>& needed) const {
    // (A label in one side only that nothing needs: summed out first. The pass over the
    // operands before has done so for the labels of one operand only.)
    std::vector<int> drop_a, drop_b;
    for (int l : a_in.labels)
      if (!has(b_in.labels, l) && !has(needed, l)) drop_a.push_back(l);
    for (int l : b_in.labels)
      if (!has(a_in.labels, l) && !has(needed, l)) drop_b.push_back(l);
    const Term a = sum_out(a_in, drop_a), b = sum_out(b_in, drop_b);
    std::vector<int> batch, rows, depth, cols;
    for (int l : a.labels) {
      if (!has(b.labels, l))
        rows.push_back(l);
      else
        (has(needed, l) ? batch : depth).push_back(l);
    }
    for (int l : b.labels)
      if (!has(a.labels, l)) cols.push_back(l);
    GemmShape g;
    const int a_id = arrange(a, batch, rows, depth, &g.trans_a);
    const int b_id = arrange(b, batch, depth, cols, &g.trans_b);
    g.m = size_product(rows, label_size_);
    g.k = size_product(depth, label_size_);
    g.n = size_product(cols, label_size_);
    const int64_t batches = size_product(batch, label_size_);
    if (batches != 1) {
      g.batch = batches;
      g.stride_a = g.m * g.k;
      g.stride_b = g.k * g.n;
    }
    Term r;
    for (const auto* group : {&batch, &rows, &cols})
      for (int l : *group) {
        r.labels.push_back(l);
        r.view.sizes.push_back(label_size_[static_cast<size_t>(l)]);
      }
    const int out = ctx_.new_value(ir::DType::Float32, r.view.sizes);
    make_gemm(ctx_, g, a_id, b_id, -1, out);
    r.view = view_of(ctx_.graph, out);
    return r;
  }

  LowerContext& ctx_;
  const std::string equation_;
  std::vector<std::vector<int>> inputs_;  // per operand, a label per dim
  std::vector<int> output_;
  std::vector<int64_t> label_size_;  // per label
  int max_ellipsis_ = 0;
};

// einsum(str equation, Tensor[] tensors, *, int[]? path=None): path (opt_einsum's order)
// is not followed; see above.
void lower_einsum(LowerContext& ctx) {
  if (ctx.arg(0).kind != Operand::Kind::String)
    ctx.fail("the equation must be a string known at compile time");
  const Operand& list = ctx.arg(1);
  if (list.kind != Operand::Kind::TensorList || list.tensors.empty())
    ctx.fail("needs a non-empty list of tensors, got " + list.describe());
  for (int id : list.tensors)
    if (id < 0) ctx.fail("an operand is None");
  ctx.set_tensor_output(0, einsum_of(ctx, ctx.arg(0).s, list.tensors));
}

}  // namespace

int einsum_of(LowerContext& ctx, const std::string& equation, const std::vector<int>& operands) {
  return Einsum(ctx, equation).lower(operands);
}

void register_einsum(Registry& r) { r.add_lowering("aten::einsum", lower_einsum); }

}  // namespace aotc::ops

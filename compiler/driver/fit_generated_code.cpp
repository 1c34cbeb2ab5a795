// fit_generated_code.cpp - see fit_generated_code.h.
#include "fit_generated_code.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "../ir/error.h"
#include "dim_polynomial.h"

namespace aotc::driver {
namespace {

struct Token {
  size_t begin = 0;  // in the text
  size_t end = 0;
  bool integer = false;  // a decimal integer literal (with an optional u/l suffix)
};

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// C++ tokens as far as literals go: identifiers, numbers (pp-numbers), string and char
// literals and comments whole, every other character alone. Whitespace is kept inside the
// tokens' gaps, which must match too.
std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    Token t;
    t.begin = i;
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (i < s.size() && ident_char(s[i])) ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < s.size()) {
        const char d = s[i];
        if ((d == '+' || d == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E') &&
            s.compare(t.begin, 2, "0x") != 0) {
          ++i;
        } else if (ident_char(d) || d == '.') {
          ++i;
        } else {
          break;
        }
      }
      size_t digits = t.begin;
      while (digits < i && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
      bool suffix_only = true;
      for (size_t k = digits; k < i; ++k)
        if (s[k] != 'u' && s[k] != 'U' && s[k] != 'l' && s[k] != 'L') suffix_only = false;
      t.integer = suffix_only && (digits - t.begin == 1 || s[t.begin] != '0');
    } else if (c == '"' || c == '\'') {
      ++i;
      while (i < s.size() && s[i] != c) i += s[i] == '\\' ? 2 : 1;
      ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else {
      ++i;
    }
    t.end = i < s.size() ? i : s.size();
    tokens.push_back(t);
  }
  return tokens;
}

std::string token_text(const std::string& s, const Token& t) { return s.substr(t.begin, t.end - t.begin); }

// The op whose generated block holds offset: the "// kind at file:line" that opens it.
std::string op_at(const std::string& text, size_t offset) {
  const std::string opening = "  {  // ";
  size_t line = text.rfind("\n" + opening, offset);
  if (line != std::string::npos)
    line += 1 + opening.size();
  else if (text.compare(0, opening.size(), opening) == 0)
    line = opening.size();
  else
    return "the model's generated code";
  const size_t end = text.find('\n', line);
  return "`" + text.substr(line, end - line) + "`";  // "conv2d at model.py:12"
}

int64_t literal_value(const std::string& s, const Token& t) {
  int64_t v = 0;
  for (size_t k = t.begin; k < t.end && std::isdigit(static_cast<unsigned char>(s[k])); ++k)
    v = v * 10 + (s[k] - '0');
  return v;
}

std::string literal_suffix(const std::string& s, const Token& t) {
  size_t k = t.begin;
  while (k < t.end && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
  return s.substr(k, t.end - k);
}

std::string dims_that_differ(const std::vector<std::string>& names, const std::vector<int64_t>& a,
                             const std::vector<int64_t>& b) {
  std::string out;
  for (size_t d = 0; d < names.size(); ++d)
    if (a[d] != b[d]) out += (out.empty() ? "" : " or ") + names[d];
  return out.empty() ? "the dims" : out;
}

}  // namespace

std::string describe_sizes(const std::vector<std::string>& dim_names, const std::vector<int64_t>& sizes) {
  std::string out;
  for (size_t d = 0; d < dim_names.size(); ++d)
    out += (d ? ", " : "") + dim_names[d] + "=" + std::to_string(sizes[d]);
  return out;
}

std::string fit_generated_code(const std::vector<std::vector<int64_t>>& grid_values,
                               const std::vector<CodeSample>& grid, const std::vector<CodeSample>& checks,
                               size_t template_index, const std::vector<std::string>& dim_names,
                               const std::string& prefix, std::vector<int64_t>* failed_at) {
  const CodeSample& base = grid.at(template_index);
  const std::vector<Token> base_tokens = tokenize(base.text);
  std::vector<const CodeSample*> samples;
  for (const CodeSample& s : grid) samples.push_back(&s);
  for (const CodeSample& s : checks) samples.push_back(&s);
  // values[s][k]: the k-th integer literal of sample s.
  std::vector<std::vector<int64_t>> values(samples.size());
  for (size_t si = 0; si < samples.size(); ++si) {
    const CodeSample& sample = *samples[si];
    const std::vector<Token> tokens = tokenize(sample.text);
    const size_t n = std::min(tokens.size(), base_tokens.size());
    for (size_t k = 0; k <= n; ++k) {
      if (k == n && tokens.size() == base_tokens.size()) break;
      bool same = k < n;
      if (same) {
        const Token& a = base_tokens[k];
        const Token& b = tokens[k];
        same = a.integer == b.integer &&
               (a.integer ? literal_suffix(base.text, a) == literal_suffix(sample.text, b)
                          : token_text(base.text, a) == token_text(sample.text, b));
      }
      if (!same) {
        if (failed_at) *failed_at = sample.sizes;
        const size_t at = k < base_tokens.size() ? base_tokens[k].begin : base.text.size();
        const std::string dims = dims_that_differ(dim_names, base.sizes, sample.sizes);
        throw CompileError("the code aotc generates for " + op_at(base.text, at) + " is not the same at " +
                           describe_sizes(dim_names, base.sizes) + " and at " +
                           describe_sizes(dim_names, sample.sizes) + ": it changes with " + dims +
                           " in a way that is not a size (a branch, loop or kernel choice on " + dims +
                           ", or a size folded into a number). Give " + dims +
                           " a fixed size, or a narrower --dim range");
      }
      if (base_tokens[k].integer) values[si].push_back(literal_value(sample.text, tokens[k]));
    }
  }
  std::string out;
  size_t copied = 0, literal = 0;
  for (const Token& t : base_tokens) {
    if (!t.integer) continue;
    const size_t k = literal++;
    bool varies = false;
    for (size_t si = 0; si < samples.size(); ++si) varies |= values[si][k] != values[0][k];
    if (!varies) continue;
    std::vector<int64_t> at_grid(grid.size());
    for (size_t g = 0; g < grid.size(); ++g) at_grid[g] = values[g][k];
    std::optional<DimPolynomial> poly = DimPolynomial::interpolate(grid_values, at_grid);
    const CodeSample* mismatch = nullptr;
    for (size_t si = grid.size(); poly && si < samples.size() && !mismatch; ++si) {
      const std::optional<int64_t> v = poly->evaluate(samples[si]->sizes);
      if (!v || *v != values[si][k]) mismatch = samples[si];
    }
    if (!poly || mismatch) {
      if (failed_at && mismatch) *failed_at = mismatch->sizes;
      const std::string where =
          mismatch ? " (wrong at " + describe_sizes(dim_names, mismatch->sizes) + ")" : "";
      throw CompileError("a size in the code aotc generates for " + op_at(base.text, t.begin) +
                         " is not a polynomial in the dims" + where + ": it is " +
                         std::to_string(values[0][k]) + " at " +
                         describe_sizes(dim_names, samples[0]->sizes) +
                         ". Give the dims it depends on a fixed size, or a narrower --dim range");
    }
    out += base.text.substr(copied, t.begin - copied);
    const std::string suffix = literal_suffix(base.text, t);
    const bool is_unsigned = suffix.find_first_of("uU") != std::string::npos;
    const std::string type = is_unsigned ? "unsigned long long" : "int64_t";
    out += "static_cast<" + type + ">(" + poly->expression(dim_names, prefix) + ")";
    copied = t.end;
  }
  out += base.text.substr(copied);
  return out;
}

}  // namespace aotc::driver

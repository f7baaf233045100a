// Parsing torch.einsum's equation (PyTorch's grammar and messages; each message ends with the
// equation): "lhs" or "lhs->rhs", operands separated by ',', subscripts [a-zA-Z], at most one
// "..." per operand (and in the output), spaces ignored.
#include "ops/einsum_equation.h"

#include <algorithm>

#include <fmt/format.h>

namespace tritium::ops {
namespace {

int letter_id(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}

// One side's subscripts as written: letter ids and where the ellipsis stands (-1: none).
struct Term {
  std::vector<int> letters;
  int ellipsis_at = -1;  // index into letters before which the ellipsis stands
};

}  // namespace

std::string EinsumEquation::label_name(int id) {
  if (id < 26) return std::string(1, static_cast<char>('A' + id));
  if (id < kLetters) return std::string(1, static_cast<char>('a' + id - 26));
  return fmt::format("ellipsis dim {}", id - kLetters);
}

EinsumEquation parse_einsum(const std::string& eq, const std::vector<Shape>& shapes) {
  auto error = [&eq](const std::string& what) { fail("einsum(): {} (equation '{}')", what, eq); };
  const size_t arrow = eq.find("->");
  const size_t lhs_end = arrow == std::string::npos ? eq.size() : arrow;

  // Reads eq[begin, end) as terms separated by ',' (the output allows no ',').
  auto read_terms = [&](size_t begin, size_t end, bool output) {
    std::vector<Term> terms(1);
    for (size_t i = begin; i < end; ++i) {
      const char c = eq[i];
      Term& t = terms.back();
      const std::string who = output ? "output" : fmt::format("operand {}", terms.size() - 1);
      if (c == ' ') continue;
      if (c == ',' && !output) {
        terms.emplace_back();
      } else if (c == '.') {
        if (t.ellipsis_at >= 0) error(fmt::format("found '.' for {} for which an ellipsis was already found", who));
        if (i + 2 >= end || eq[i + 1] != '.' || eq[i + 2] != '.')
          error(fmt::format("found '.' for {} that is not part of any ellipsis", who));
        t.ellipsis_at = static_cast<int>(t.letters.size());
        i += 2;
      } else if (int id = letter_id(c); id >= 0) {
        t.letters.push_back(id);
      } else {
        error(fmt::format("invalid subscript given at index {} in the equation string, subscripts must be in [a-zA-Z]",
                          i));
      }
    }
    return terms;
  };

  std::vector<Term> inputs = read_terms(0, lhs_end, false);
  if (shapes.size() > inputs.size()) error("more operands were provided than specified in the equation");
  if (shapes.size() < inputs.size()) error("fewer operands were provided than specified in the equation");

  // The broadcast ellipsis: as many dims as the widest operand's ellipsis covers.
  int ell_rank = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const int nsub = static_cast<int>(inputs[k].letters.size()), ndim = static_cast<int>(shapes[k].size());
    if (inputs[k].ellipsis_at < 0 && nsub != ndim)
      error(fmt::format("the number of subscripts in the equation ({}) does not match the number of dimensions ({}) "
                        "for operand {} and no ellipsis was given",
                        nsub, ndim, k));
    if (inputs[k].ellipsis_at >= 0 && nsub > ndim)
      error(fmt::format("the number of subscripts in the equation ({}) is more than the number of dimensions ({}) "
                        "for operand {}",
                        nsub, ndim, k));
    if (inputs[k].ellipsis_at >= 0) ell_rank = std::max(ell_rank, ndim - nsub);
  }

  EinsumEquation out;
  out.sizes.assign(EinsumEquation::kLetters + ell_rank, -1);
  std::vector<int> count(out.sizes.size(), 0);  // operands' dims with each label
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Term& t = inputs[k];
    const int covered = static_cast<int>(shapes[k].size() - t.letters.size());
    std::vector<int>& labels = out.operands.emplace_back();
    for (size_t i = 0; i <= t.letters.size(); ++i) {
      if (static_cast<int>(i) == t.ellipsis_at)
        for (int j = 0; j < covered; ++j) labels.push_back(EinsumEquation::kLetters + ell_rank - covered + j);
      if (i < t.letters.size()) labels.push_back(t.letters[i]);
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      const int l = labels[d];
      const int64_t s = shapes[k][d];
      ++count[l];
      auto first = std::find(labels.begin(), labels.end(), l);
      if (first != labels.begin() + d) {  // repeated within this operand: a diagonal, sizes equal
        const int64_t s0 = shapes[k][first - labels.begin()];
        if (s0 != s)
          error(fmt::format("subscript {} is repeated for operand {} but the sizes don't match, {} != {}",
                            EinsumEquation::label_name(l), k, s0, s));
        continue;
      }
      int64_t& seen = out.sizes[l];
      if (seen == -1 || seen == 1) seen = s;
      else if (s != 1 && s != seen)
        error(fmt::format("subscript {} has size {} for operand {} which does not broadcast with previously seen size {}",
                          EinsumEquation::label_name(l), s, k, seen));
    }
  }

  if (arrow == std::string::npos) {
    // Implicit output: the ellipsis dims, then the subscripts that appear once, in id order.
    for (int j = 0; j < ell_rank; ++j) out.output.push_back(EinsumEquation::kLetters + j);
    for (int l = 0; l < EinsumEquation::kLetters; ++l)
      if (count[l] == 1) out.output.push_back(l);
  } else {
    std::vector<Term> rhs = read_terms(arrow + 2, eq.size(), true);
    const Term& t = rhs[0];
    for (size_t i = 0; i <= t.letters.size(); ++i) {
      if (static_cast<int>(i) == t.ellipsis_at)
        for (int j = 0; j < ell_rank; ++j) out.output.push_back(EinsumEquation::kLetters + j);
      if (i == t.letters.size()) break;
      const int l = t.letters[i];
      if (std::find(t.letters.begin(), t.letters.begin() + i, l) != t.letters.begin() + i)
        error(fmt::format("output subscript {} appears more than once in the output", EinsumEquation::label_name(l)));
      if (count[l] == 0)
        error(fmt::format("output subscript {} does not appear in the equation for any input operand",
                          EinsumEquation::label_name(l)));
      out.output.push_back(l);
    }
  }
  return out;
}

std::vector<EinsumStep> einsum_contraction_path(const EinsumEquation& eq) {
  const int n = eq.num_labels();
  std::vector<bool> in_output(n, false);
  for (int l : eq.output) in_output[l] = true;
  std::vector<int> holders(n, 0);
  std::vector<std::vector<bool>> has;
  for (const auto& labels : eq.operands) {
    std::vector<bool> h(n, false);
    for (int l : labels) h[l] = true;
    for (int l = 0; l < n; ++l) holders[l] += h[l];
    has.push_back(std::move(h));
  }
  for (auto& h : has)
    for (int l = 0; l < n; ++l) h[l] = h[l] && (holders[l] > 1 || in_output[l]);

  // The labels the pair (i, j) holds that nothing else needs, and the size of its result.
  auto pair = [&](size_t i, size_t j, std::vector<bool>& summed) {
    int64_t size = 1;
    summed.assign(n, false);
    for (int l = 0; l < n; ++l) {
      if (!has[i][l] && !has[j][l]) continue;
      bool needed = in_output[l];
      for (size_t o = 0; o < has.size() && !needed; ++o) needed = o != i && o != j && has[o][l];
      if (needed) size *= eq.sizes[l];
      else summed[l] = true;
    }
    return size;
  };
  std::vector<EinsumStep> path;
  std::vector<bool> summed;
  while (has.size() > 1) {
    EinsumStep best{0, 1, {}};
    int64_t best_size = -1;
    for (size_t i = 0; i < has.size(); ++i)
      for (size_t j = i + 1; j < has.size(); ++j)
        if (int64_t s = pair(i, j, summed); best_size < 0 || s < best_size) best = {i, j, summed}, best_size = s;
    for (int l = 0; l < n; ++l) has[best.first][l] = (has[best.first][l] || has[best.second][l]) && !best.summed[l];
    has.erase(has.begin() + best.second);
    path.push_back(std::move(best));
  }
  return path;
}

}  // namespace tritium::ops

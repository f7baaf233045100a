// A float64 einsum on the host, independent of the library (no parser or op of it is used): the
// test's reference for einsum and the matmul family. Every assignment of the subscripts is
// visited (small shapes only); an operand's size-1 dim broadcasts. Also returns, per output
// element, the sum of |products| (the scale of a dot's rounding error).
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tritium::test {

struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<double> values;  // row-major
};

struct EinsumReference {
  std::vector<int64_t> shape;
  std::vector<double> values, magnitudes;
};

inline EinsumReference host_einsum(std::string eq, const std::vector<HostTensor>& ops) {
  std::string lhs = eq, rhs;
  bool explicit_out = false;
  if (auto p = eq.find("->"); p != std::string::npos) lhs = eq.substr(0, p), rhs = eq.substr(p + 2), explicit_out = true;
  auto strip = [](std::string s) {
    std::string r;
    for (char c : s)
      if (c != ' ') r += c;
    return r;
  };
  lhs = strip(lhs), rhs = strip(rhs);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',') terms.emplace_back();
    else terms.back().push_back(c);
  }
  // '...' becomes the digits '0'.. (right-aligned across operands: digit j is the j-th of the
  // widest ellipsis).
  size_t ell = 0;
  for (size_t k = 0; k < terms.size(); ++k)
    if (auto p = terms[k].find("..."); p != std::string::npos) ell = std::max(ell, ops[k].shape.size() - (terms[k].size() - 3));
  auto expand = [&](const std::string& t, size_t covered) {
    auto p = t.find("...");
    if (p == std::string::npos) return t;
    std::string dots;
    for (size_t j = ell - covered; j < ell; ++j) dots += static_cast<char>('0' + j);
    return t.substr(0, p) + dots + t.substr(p + 3);
  };
  std::vector<std::string> subs;
  for (size_t k = 0; k < terms.size(); ++k) {
    size_t covered = terms[k].find("...") == std::string::npos ? 0 : ops[k].shape.size() - (terms[k].size() - 3);
    subs.push_back(expand(terms[k], covered));
  }
  std::map<char, int64_t> size;
  std::map<char, int> count;
  for (size_t k = 0; k < subs.size(); ++k)
    for (size_t d = 0; d < subs[k].size(); ++d) {
      char c = subs[k][d];
      size[c] = std::max(size.count(c) ? size[c] : 1, ops[k].shape[d]);
      if (ops[k].shape[d] == 0) size[c] = 0;
      ++count[c];
    }
  std::string out;
  if (explicit_out) {
    std::string dots;
    for (size_t j = 0; j < ell; ++j) dots += static_cast<char>('0' + j);
    auto p = rhs.find("...");
    out = p == std::string::npos ? rhs : rhs.substr(0, p) + dots + rhs.substr(p + 3);
  } else {
    for (size_t j = 0; j < ell; ++j) out += static_cast<char>('0' + j);
    for (auto& [c, n] : count)  // std::map: ASCII order, upper case first
      if (n == 1 && !(c >= '0' && c <= '9')) out += c;
  }
  std::string labels;
  for (auto& [c, s] : size) labels += c;
  EinsumReference r;
  int64_t out_n = 1;
  for (char c : out) r.shape.push_back(size[c]), out_n *= size[c];
  r.values.assign(out_n, 0), r.magnitudes.assign(out_n, 0);
  int64_t total = 1;
  for (char c : labels) total *= size[c];
  std::map<char, int64_t> idx;
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t f = flat;
    for (size_t i = labels.size(); i-- > 0;) idx[labels[i]] = f % size[labels[i]], f /= size[labels[i]];
    double prod = 1;
    for (size_t k = 0; k < subs.size(); ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < subs[k].size(); ++d)
        off = off * ops[k].shape[d] + (ops[k].shape[d] == 1 ? 0 : idx[subs[k][d]]);
      prod *= ops[k].values[off];
    }
    int64_t o = 0;
    for (char c : out) o = o * size[c] + idx[c];
    r.values[o] += prod;
    r.magnitudes[o] += std::abs(prod);
  }
  return r;
}

}  // namespace tritium::test

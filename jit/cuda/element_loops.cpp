// The element-loop generator's loop nests: an element index split into one index per dim and
// back, and thread_loop, which distributes a shape's elements over the CTA's threads (V lanes a
// step, or the register mapping's unrolled steps).
#include "jit/cuda/codegen_impl.h"

namespace tritium::jit::cuda::detail {

Index Codegen::index_of(const Shape& s, const std::string& e) {
  auto st = strides_of(s);
  Index idx(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] == 1) {
      idx[d] = "0";
      continue;
    }
    std::string expr;
    if (d == 0) expr = st[d] == 1 ? e : fmt::format("{} / {}", e, st[d]);
    else expr = st[d] == 1 ? fmt::format("{} % {}", e, s[d]) : fmt::format("{} / {} % {}", e, st[d], s[d]);
    if (d == 0 && st[d] == 1) {
      idx[d] = e;
      continue;
    }
    idx[d] = fresh("i");
    line(fmt::format("const int {} = {};", idx[d], expr));
  }
  return idx;
}

std::string Codegen::flatten(const Index& idx, const Shape& s) {
  auto st = strides_of(s);
  std::string out;
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] == 1 || idx[d] == "0") continue;
    std::string term = st[d] == 1 ? idx[d] : fmt::format("({}) * {}", idx[d], st[d]);
    out += (out.empty() ? "" : " + ") + term;
  }
  return out.empty() ? "0" : out;
}

void Codegen::thread_loop(const Shape& shape, int V, const std::function<void(const Index&)>& pre,
                          const std::function<void(const Index&)>& body,
                          const std::function<void(const Index&)>& post) {
  int64_t n = numel(shape);
  int64_t step = int64_t(nt_) * V;
  bool unrolled = mapped(shape, V);
  std::string eb, k;
  bool guard = false;
  Index base;
  if (unrolled) {
    k = fresh("k");
    line("#pragma unroll");
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", k, (n + step - 1) / step));
    const bool copies = replicate_ok_ && replicated(shape);  // see codegen_impl.h, replicated
    eb = tmp("int", copies ? fmt::format("tid & {}", n - 1) : fmt::format("({} * {} + tid) * {}", k, nt_, V));
    guard = !copies && n % step != 0;
    if (guard) open(fmt::format("if ({} < {})", eb, n));
  } else if (n <= step) {
    // One step at most: an if, not a loop NVRTC unrolls for any trip count (16 copies of the body).
    eb = tmp("int", fmt::format("tid * {}", V));
    open(fmt::format("if ({} < {})", eb, n));
  } else {
    eb = fresh("e");
    open(fmt::format("for (int {0} = tid * {1}; {0} < {2}; {0} += {3})", eb, V, n, step));
  }
  base = index_of(shape, eb);
  MappedLoop saved = loop_;
  loop_ = unrolled ? MappedLoop{true, shape, V, k, base} : MappedLoop{};
  if (pre) pre(base);
  if (V == 1) {
    lane_ = "0";
    body(base);
  } else {
    std::string l = fresh("l");
    line("#pragma unroll");
    open(fmt::format("for (int {0} = 0; {0} < {1}; ++{0})", l, V));
    lane_ = l;
    lane_width_ = V;
    lane_base_ = base.back();
    lane_index_ = fmt::format("({} + {})", base.back(), l);
    Index idx(base);
    idx.back() = lane_index_;
    body(idx);
    close();
  }
  lane_ = "0";
  lane_width_ = 1;
  lane_index_.clear();
  lane_base_.clear();
  if (post) post(base);
  loop_ = saved;
  if (guard) close();
  close();
}

}  // namespace tritium::jit::cuda::detail

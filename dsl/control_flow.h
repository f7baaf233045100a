// Run-time control flow. Plain C++ loops and ifs run at trace time (unrolled, like Triton's
// static_range); tl::range and tl::if_ become IR loops and branches.
//
//   auto acc = tl::zeros({BM, BN}, tl::float32);
//   for (auto k : tl::range(0, K, BK)) {       // a run-time loop
//     acc += tl::dot(tl::load(a_ptrs), tl::load(b_ptrs));
//     a_ptrs += BK;                            // reassigned outer tensors become loop-carried
//   }
//   tl::if_(pid == 0, [&] { x = x * 2; }, [&] { x = x + 1; });
//
// Any tl::tensor alive before the loop (or branch) and reassigned inside it is carried through
// the IR loop (or merged after the branch) automatically. Its type must not change: that is a
// trace error naming the loop's line. `break`/`return` inside a tl::range body are not supported.
#pragma once
#include <functional>
#include <memory>

#include "dsl/tensor.h"

namespace tritium::tl {

struct LoopTrace;  // defined in control_flow.cpp

class range {
 public:
  explicit range(operand end, std::source_location loc = std::source_location::current());
  range(operand start, operand end, operand step = operand(1), std::source_location loc = std::source_location::current());
  range(const range&) = delete;
  range& operator=(const range&) = delete;
  ~range() noexcept(false);

  class iterator {
   public:
    tensor operator*() const;
    iterator& operator++();
    bool operator!=(const iterator& other) const { return done_ != other.done_; }

   private:
    friend class range;
    iterator(range* r, bool done) : range_(r), done_(done) {}
    range* range_;
    bool done_;
  };
  iterator begin();
  iterator end() { return iterator(this, true); }

 private:
  void finish();
  operand start_, end_, step_;
  SourceLoc loc_;
  std::unique_ptr<LoopTrace> trace_;
  int uncaught_at_begin_ = 0;
};

// Run-time branch on a scalar condition. Outer tensors reassigned in either branch take the
// branch's value afterwards.
void if_(operand condition, const std::function<void()>& then_body, const std::function<void()>& else_body = nullptr,
         std::source_location loc = std::source_location::current());

}  // namespace tritium::tl

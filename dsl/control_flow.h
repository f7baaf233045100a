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
// trace error naming the loop's line. `break`/`return` inside a tl::range body are not supported;
// tl::return_() ends the program from the kernel's top level or from tl::if_ branches.
#pragma once
#include <functional>
#include <memory>
#include <type_traits>

#include "dsl/tensor.h"

namespace tritium::tl {

struct LoopTrace;  // defined in control_flow.cpp

// Hints of a tl::range, as Triton's tl.range keywords.
struct RangeOptions {
  // Fuse this loop with the one tl::range its body runs into a single loop, so that software
  // pipelining runs across this loop's trips (Triton's flatten=True; jit/passes/fuse_nested_loops.h
  // says when a nest qualifies - one that does not runs as written).
  bool flatten = false;
};

class range {
 public:
  explicit range(operand end, std::source_location loc = std::source_location::current());
  range(operand start, operand end, operand step = operand(1), std::source_location loc = std::source_location::current());
  range(operand start, operand end, operand step, RangeOptions options,
        std::source_location loc = std::source_location::current());
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
  RangeOptions options_;
  SourceLoc loc_;
  std::unique_ptr<LoopTrace> trace_;
  int uncaught_at_begin_ = 0;
};

void if_impl(operand condition, const std::function<void()>& then_body, const std::function<void()>& else_body,
             std::source_location loc);

// Run-time branch on a scalar condition. Outer tensors reassigned in either branch take the
// branch's value afterwards. A branch is a callable returning nothing: a value returned from it
// would be dropped silently, so it does not compile. A C++ `return` in a branch only leaves the
// lambda; tl::return_() ends the program.
// Whether F can be a branch of tl::if_: callable with no arguments, returning nothing.
template <class F> inline constexpr bool is_branch_v = std::is_void_v<std::invoke_result_t<const F&>>;

template <class Then, class Else = std::nullptr_t>
void if_(operand condition, const Then& then_body, const Else& else_body = nullptr,
         std::source_location loc = std::source_location::current()) {
  static_assert(is_branch_v<Then>,
                "tl::if_: the then-branch returns a value, which would be dropped; a branch returns nothing "
                "(reassign an outer tl::tensor to pass a value out, and use tl::return_() to end the program)");
  if constexpr (std::is_same_v<Else, std::nullptr_t>) {
    if_impl(condition, then_body, nullptr, loc);
  } else {
    static_assert(is_branch_v<Else>,
                  "tl::if_: the else-branch returns a value, which would be dropped; a branch returns nothing "
                  "(reassign an outer tl::tensor to pass a value out, and use tl::return_() to end the program)");
    if_impl(condition, then_body, else_body, loc);
  }
}

// Triton's `return` in a kernel: the program ends here. Allowed at the kernel's top level and in
// tl::if_ branches (nested too); refused inside tl::range / tl::while_ bodies and combine
// functions, as Triton refuses it in loops. The code after it in the same branch does not run;
// after a branch that may return, the rest of the kernel runs only in programs that did not:
//   tl::if_(y == ignore_index, [&] { tl::store(loss_ptr + row, 0.0f); tl::return_(); });
void return_(std::source_location loc = std::source_location::current());

// Run-time loop: while (cond()) body(); - Triton's `while cond: ...`, e.g. a spin lock:
//   tl::while_([&] { return tl::atomic_cas(lock, 0, 1) == 1; }, [] {});
// cond() returns a scalar and is evaluated before every trip (it may have side effects, such as
// the atomic above, but may not reassign outer tensors). Outer scalars reassigned in body() carry
// from one trip to the next and hold the last trip's value after the loop; blocks cannot be
// carried (use tl::range, whose trip count is known).
void while_(const std::function<tensor()>& cond, const std::function<void()>& body,
            std::source_location loc = std::source_location::current());

}  // namespace tritium::tl

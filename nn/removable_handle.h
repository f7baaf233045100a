// What registering a hook returns (PyTorch's torch.utils.hooks.RemovableHandle): remove()
// unregisters the hook. It holds no reference to the tensor, so it may outlive it (remove() then
// does nothing), and removing twice is harmless.
#pragma once
#include <functional>
#include <utility>

namespace tritium::nn {

class RemovableHandle {
 public:
  RemovableHandle() = default;
  explicit RemovableHandle(std::function<void()> remove) : remove_(std::move(remove)) {}
  void remove() {
    if (remove_) std::exchange(remove_, nullptr)();
  }

 private:
  std::function<void()> remove_;
};

}  // namespace tritium::nn

// An owning allocation on a device. Host buffers are 64-byte aligned (a cache line, and the
// widest AVX-512 vector), so kernels may use aligned vector accesses on a tensor's start.
// Tensors share buffers through std::shared_ptr<Buffer>; views share the same buffer.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "runtime/device.h"

namespace tritium::runtime {

inline constexpr size_t kHostAlignment = 64;

class Buffer {
 public:
  using Deleter = std::function<void(void*)>;

  // Uninitialised memory for nbytes bytes (zero is allowed: data() is still a valid pointer).
  // Throws tritium::Error when the device is unavailable or memory runs out.
  static std::shared_ptr<Buffer> allocate(size_t nbytes, Device device);
  // Takes ownership of memory allocated elsewhere; deleter(data) frees it.
  static std::shared_ptr<Buffer> adopt(void* data, size_t nbytes, Device device, Deleter deleter);

  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // PyTorch's version counter: bumped by every in-place op on a tensor over this buffer, so every
  // view of it shares the count. A tensor saved for backward remembers the version it was saved at
  // and backward refuses it once the count has moved on.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }
  // Allocated while inference mode was on (nn::InferenceModeGuard): tensors over it are inference
  // tensors, which autograd refuses to save and in-place ops refuse to modify outside the mode.
  bool is_inference() const { return inference_; }

 private:
  Buffer(void* data, size_t nbytes, Device device, Deleter deleter);

  void* data_;
  size_t nbytes_;
  Device device_;
  Deleter deleter_;
  std::atomic<uint64_t> version_{0};
  bool inference_ = false;
};

// The thread's inference mode as allocation sees it (nn::InferenceModeGuard sets it; buffers
// allocated while it is on are marked inference).
bool& inference_mode_flag();

}  // namespace tritium::runtime

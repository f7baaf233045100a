// An owning allocation on a device. Host buffers are 64-byte aligned (a cache line, and the
// widest AVX-512 vector), so kernels may use aligned vector accesses on a tensor's start.
// Tensors share buffers through std::shared_ptr<Buffer>; views share the same buffer.
#pragma once
#include <cstddef>
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

 private:
  Buffer(void* data, size_t nbytes, Device device, Deleter deleter);

  void* data_;
  size_t nbytes_;
  Device device_;
  Deleter deleter_;
};

}  // namespace tritium::runtime

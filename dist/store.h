// Key-value stores the processes of a job meet through (PyTorch's c10d Store): the rendezvous,
// Gloo's address exchange, NCCL's unique id, sub-group set-up. Values are bytes; every blocking
// call has a timeout and ends with a tritium::Error naming the keys it waited for, never a hang.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tritium::dist {

using Bytes = std::vector<char>;
using Milliseconds = std::chrono::milliseconds;

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const Bytes& value) = 0;
  // The value of key, waiting up to timeout() for another process to set it.
  virtual Bytes get(const std::string& key) = 0;
  // Adds delta to the integer stored at key (0 when absent) and returns the sum; the value is
  // stored as decimal text, as PyTorch's.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Waits until every key is set; Error after `timeout`.
  virtual void wait(const std::vector<std::string>& keys, Milliseconds timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout()); }
  // Whether every key is set now (no waiting).
  virtual bool check(const std::vector<std::string>& keys) = 0;
  virtual Milliseconds timeout() const = 0;

  void set(const std::string& key, const std::string& value) { set(key, Bytes(value.begin(), value.end())); }
  std::string get_string(const std::string& key) {
    Bytes b = get(key);
    return std::string(b.begin(), b.end());
  }
};

// Another store's keys under "prefix/": a sub-group's or a backend's own name space.
class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> store);
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override;
  using Store::wait;
  bool check(const std::vector<std::string>& keys) override;
  Milliseconds timeout() const override { return store_->timeout(); }
  using Store::set;

 private:
  std::string key(const std::string& k) const { return prefix_ + "/" + k; }
  std::vector<std::string> keys(const std::vector<std::string>& ks) const;
  std::string prefix_;
  std::shared_ptr<Store> store_;
};

}  // namespace tritium::dist

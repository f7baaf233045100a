// The TCP store (PyTorch's TCPStore): one process (rank 0, is_server) serves the keys on
// host:port, every process (the server's included) is a client of it. The rendezvous of
// init_process_group runs on it at MASTER_ADDR:MASTER_PORT.
//
//   auto store = std::make_shared<dist::TCPStore>("127.0.0.1", 29500, /*is_server=*/rank == 0,
//                                                 std::chrono::seconds(30));
//   store->set("k", "v");  ...  store->get_string("k")   // "v", once set (waits up to 30 s)
//
// Errors (tritium::Error): a client that cannot reach the server within the timeout (naming
// host:port and the last connection error), a server that cannot bind its port, a get/wait past
// the timeout (naming the keys), a server that went away (naming host:port).
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include "dist/store.h"

namespace tritium::dist {

class TCPStoreServer;

class TCPStore : public Store {
 public:
  // port 0 with is_server binds a free port: port() says which.
  TCPStore(std::string host, int port, bool is_server, Milliseconds timeout);
  ~TCPStore() override;
  TCPStore(const TCPStore&) = delete;
  TCPStore& operator=(const TCPStore&) = delete;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override;
  using Store::wait;
  using Store::set;
  bool check(const std::vector<std::string>& keys) override;
  Milliseconds timeout() const override { return timeout_; }
  int port() const { return port_; }
  const std::string& host() const { return host_; }

 private:
  // One request and its reply over the client connection (serialised by mutex_).
  Bytes request(char op, const std::string& key, const Bytes& value, int64_t arg, Milliseconds reply_within);
  std::string host_;
  int port_;
  Milliseconds timeout_;
  std::unique_ptr<TCPStoreServer> server_;
  int fd_ = -1;
  std::mutex mutex_;
};

}  // namespace tritium::dist

// The TCP store: a server thread per client connection over one shared map, and a client that
// sends one request at a time. A request is [op:1][key length:4][key][value length:8][value]
// [arg:8] (arg: a timeout in ms for get/wait, the delta of add); a reply is [status:1]
// [length:8][bytes]. A get waits on the server (condition variable) until the key is set or its
// timeout passes, so no client polls.
#include "dist/tcp_store.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>
#include <thread>

#include "common/error.h"

namespace tritium::dist {

namespace {

enum Op : char { kSet = 1, kGet = 2, kAdd = 3, kCheck = 4 };
enum Status : char { kOk = 0, kTimeout = 1, kMissing = 2 };

// Whole-buffer send/recv; false when the peer closed or an error (or the receive timeout) hit.
bool send_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k, n -= static_cast<size_t>(k);
  }
  return true;
}
bool recv_all(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k, n -= static_cast<size_t>(k);
  }
  return true;
}
template <class T> bool send_pod(int fd, T v) { return send_all(fd, &v, sizeof v); }
template <class T> bool recv_pod(int fd, T& v) { return recv_all(fd, &v, sizeof v); }

void set_receive_timeout(int fd, Milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

std::string endpoint(const std::string& host, int port) { return fmt::format("{}:{}", host, port); }

}  // namespace

// ---- server ---------------------------------------------------------------------------------------

class TCPStoreServer {
 public:
  explicit TCPStoreServer(int port) {
    listen_fd_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool v6 = listen_fd_ >= 0;
    if (!v6) listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) fail("dist::TCPStore: socket() failed: {}", std::strerror(errno));
    int one = 1, zero = 0;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc;
    if (v6) {
      ::setsockopt(listen_fd_, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // IPv4 clients too
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6, a.sin6_addr = in6addr_any, a.sin6_port = htons(static_cast<uint16_t>(port));
      rc = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
      sockaddr_in a{};
      a.sin_family = AF_INET, a.sin_addr.s_addr = htonl(INADDR_ANY), a.sin_port = htons(static_cast<uint16_t>(port));
      rc = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    if (rc != 0 || ::listen(listen_fd_, 128) != 0) {
      int e = errno;
      ::close(listen_fd_);
      fail("dist::TCPStore: the server cannot listen on port {}: {}{}", port, std::strerror(e),
           e == EADDRINUSE ? " (another job uses this MASTER_PORT: pick another)" : "");
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    if (::pipe2(wake_, O_CLOEXEC) != 0) fail("dist::TCPStore: pipe() failed: {}", std::strerror(errno));
    accept_thread_ = std::thread([this] { accept_loop(); });
  }

  ~TCPStoreServer() {
    stopping_ = true;
    (void)!::write(wake_[1], "x", 1);
    accept_thread_.join();
    {
      std::lock_guard lock(mutex_);
      for (int fd : client_fds_) ::shutdown(fd, SHUT_RDWR);  // ends their blocking recv
    }
    changed_.notify_all();
    for (auto& t : client_threads_) t.join();
    ::close(listen_fd_);
    ::close(wake_[0]), ::close(wake_[1]);
  }

  int port() const { return port_; }

 private:
  void accept_loop() {
    while (!stopping_) {
      pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents) return;
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::lock_guard lock(mutex_);
      client_fds_.push_back(fd);
      client_threads_.emplace_back([this, fd] { serve(fd); });
    }
  }

  // One client's requests until it disconnects (or the server stops).
  void serve(int fd) {
    for (;;) {
      char op;
      uint32_t key_len;
      uint64_t value_len;
      int64_t arg;
      std::string key;
      Bytes value;
      if (!recv_pod(fd, op) || !recv_pod(fd, key_len)) break;
      key.resize(key_len);
      if (!recv_all(fd, key.data(), key_len) || !recv_pod(fd, value_len)) break;
      value.resize(value_len);
      if (!recv_all(fd, value.data(), value_len) || !recv_pod(fd, arg)) break;
      Status status = kOk;
      Bytes reply;
      {
        std::unique_lock lock(mutex_);
        if (op == kSet) {
          map_[key] = std::move(value);
          changed_.notify_all();
        } else if (op == kGet) {
          auto deadline = std::chrono::steady_clock::now() + Milliseconds(arg);
          bool found = changed_.wait_until(lock, deadline, [&] { return stopping_ || map_.count(key) > 0; });
          if (found && map_.count(key)) reply = map_[key];
          else status = kTimeout;
        } else if (op == kAdd) {
          auto it = map_.find(key);
          int64_t sum = (it == map_.end() ? 0 : std::stoll(std::string(it->second.begin(), it->second.end()))) + arg;
          std::string text = std::to_string(sum);
          map_[key] = Bytes(text.begin(), text.end());
          reply = map_[key];
          changed_.notify_all();
        } else if (op == kCheck) {
          status = map_.count(key) ? kOk : kMissing;
        } else {
          break;  // a client speaking another protocol: drop it
        }
      }
      if (!send_pod(fd, static_cast<char>(status)) || !send_pod(fd, static_cast<uint64_t>(reply.size())) ||
          !send_all(fd, reply.data(), reply.size()))
        break;
    }
    std::lock_guard lock(mutex_);
    std::erase(client_fds_, fd);
    ::close(fd);
  }

  int listen_fd_ = -1, port_ = 0;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, Bytes> map_;
  std::vector<int> client_fds_;
  std::list<std::thread> client_threads_;
};

// ---- client ---------------------------------------------------------------------------------------

namespace {

// Connects to host:port, retrying (the server may not be up yet) until the timeout.
int connect_with_retry(const std::string& host, int port, Milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last_error = "no attempt";
  for (;;) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_UNSPEC, hints.ai_socktype = SOCK_STREAM;
    int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (gai != 0) {
      last_error = fmt::format("cannot resolve '{}': {}", host, gai_strerror(gai));
    } else {
      for (addrinfo* a = res; a; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          ::freeaddrinfo(res);
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          return fd;
        }
        last_error = std::strerror(errno);
        ::close(fd);
      }
      ::freeaddrinfo(res);
    }
    if (std::chrono::steady_clock::now() >= deadline)
      fail("dist::TCPStore: could not reach the store at {} within {} ms (is MASTER_ADDR:MASTER_PORT the address "
           "of rank 0, and is rank 0 running?): {}",
           endpoint(host, port), timeout.count(), last_error);
    std::this_thread::sleep_for(Milliseconds(50));
  }
}

}  // namespace

TCPStore::TCPStore(std::string host, int port, bool is_server, Milliseconds timeout)
    : host_(std::move(host)), port_(port), timeout_(timeout) {
  if (port < 0 || port > 65535) fail("dist::TCPStore: port {} is out of range (0 to 65535)", port);
  if (!is_server && port == 0) fail("dist::TCPStore: a client needs the server's port (got 0)");
  if (timeout.count() <= 0) fail("dist::TCPStore: the timeout must be positive (got {} ms)", timeout.count());
  if (is_server) {
    server_ = std::make_unique<TCPStoreServer>(port);
    port_ = server_->port();
  }
  fd_ = connect_with_retry(is_server ? "127.0.0.1" : host_, port_, timeout_);
}

TCPStore::~TCPStore() {
  if (fd_ >= 0) ::close(fd_);
  server_.reset();
}

Bytes TCPStore::request(char op, const std::string& key, const Bytes& value, int64_t arg, Milliseconds reply_within) {
  std::lock_guard lock(mutex_);
  if (fd_ < 0) fail("dist::TCPStore: the connection to {} was lost earlier", endpoint(host_, port_));
  // A server that died never answers: the socket's receive timeout ends the wait.
  set_receive_timeout(fd_, reply_within + Milliseconds(5000));
  bool sent = send_pod(fd_, op) && send_pod(fd_, static_cast<uint32_t>(key.size())) &&
              send_all(fd_, key.data(), key.size()) && send_pod(fd_, static_cast<uint64_t>(value.size())) &&
              send_all(fd_, value.data(), value.size()) && send_pod(fd_, arg);
  char status = 0;
  uint64_t len = 0;
  Bytes reply;
  bool received = sent && recv_pod(fd_, status) && recv_pod(fd_, len);
  if (received) {
    reply.resize(len);
    received = recv_all(fd_, reply.data(), len);
  }
  if (!received) {
    ::close(fd_);
    fd_ = -1;
    fail("dist::TCPStore: lost the connection to the store at {} (rank 0 exited or the network failed) during "
         "a request for key '{}'",
         endpoint(host_, port_), key);
  }
  if (status == kTimeout)
    fail("dist::TCPStore: timed out after {} ms waiting for key '{}' at {} (a rank did not arrive or died)",
         reply_within.count(), key, endpoint(host_, port_));
  if (status == kMissing) reply.assign(1, 0);
  else if (op == kCheck) reply.assign(1, 1);
  return reply;
}

void TCPStore::set(const std::string& key, const Bytes& value) { request(kSet, key, value, 0, timeout_); }

Bytes TCPStore::get(const std::string& key) { return request(kGet, key, {}, timeout_.count(), timeout_); }

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  Bytes r = request(kAdd, key, {}, delta, timeout_);
  return std::stoll(std::string(r.begin(), r.end()));
}

void TCPStore::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& k : keys) {
    auto left = std::chrono::duration_cast<Milliseconds>(deadline - std::chrono::steady_clock::now());
    request(kGet, k, {}, std::max<int64_t>(left.count(), 0), timeout);
  }
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  for (const auto& k : keys)
    if (request(kCheck, k, {}, 0, timeout_)[0] == 0) return false;
  return true;
}

}  // namespace tritium::dist

// Several ranks of a Gloo group as threads of the test process (dist tests): a store on a free
// port, one group per thread, the body run on every rank at once. Boost.Test's checks are not
// thread-safe, so a body returns its failures as text and the caller checks them on the main
// thread.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dist/gloo_process_group.h"
#include "dist/tcp_store.h"

namespace tritium::test {

// body(rank, group) -> "" or what went wrong on that rank; an exception counts as a failure.
inline std::vector<std::string> run_gloo_ranks(
    int world, const std::function<std::string(int, std::shared_ptr<dist::ProcessGroup>)>& body,
    std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
  auto server = std::make_shared<dist::TCPStore>("127.0.0.1", 0, true, timeout);
  std::vector<std::string> failures(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        std::shared_ptr<dist::Store> store =
            r == 0 ? std::static_pointer_cast<dist::Store>(server)
                   : std::make_shared<dist::TCPStore>("127.0.0.1", server->port(), false, timeout);
        auto group = dist::GlooProcessGroup::create(std::make_shared<dist::PrefixStore>("test", store), r, world,
                                                    timeout);
        failures[r] = body(r, group);
      } catch (const std::exception& e) {
        failures[r] = std::string("exception: ") + e.what();
      }
    });
  for (auto& t : threads) t.join();
  return failures;
}

}  // namespace tritium::test

// The TCP store of dist/ (issue 32): set/get/add/wait/check across clients, gets that wait for a
// later set, timeouts that end with an error naming the key, an unreachable server, a server that
// goes away, prefixes. Clients are threads of this process; the server binds a free port.
#include <boost/test/unit_test.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/error.h"
#include "dist/tcp_store.h"
#include "loopback_port.h"

using namespace tritium;
using namespace std::chrono_literals;

namespace {


template <class F> void check_error(F&& f, const std::vector<std::string>& fragments) {
  try {
    f();
  } catch (const Error& e) {
    std::string m = e.what();
    for (const std::string& frag : fragments) BOOST_TEST(m.find(frag) != std::string::npos, "'" << frag << "' in: " << m);
    return;
  }
  BOOST_FAIL("expected a tritium::Error");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_dist_store)

BOOST_AUTO_TEST_CASE(set_get_add_check_across_clients) {
  dist::TCPStore server("127.0.0.1", 0, true, 5000ms);
  BOOST_TEST(server.port() > 0);
  dist::TCPStore client("127.0.0.1", server.port(), false, 5000ms);
  server.set("a", std::string("alpha"));
  BOOST_TEST(client.get_string("a") == "alpha");
  client.set("a", std::string("beta"));  // overwrites
  BOOST_TEST(server.get_string("a") == "beta");
  dist::Bytes binary = {'\0', '\x01', '\xff', '\0'};  // values are bytes, zeros included
  client.set("bin", binary);
  BOOST_TEST((server.get("bin") == binary));
  BOOST_TEST(server.add("n", 3) == 3);
  BOOST_TEST(client.add("n", -5) == -2);
  BOOST_TEST(server.get_string("n") == "-2");  // decimal text, as PyTorch's
  BOOST_TEST(client.check({"a", "n"}));
  BOOST_TEST(!client.check({"a", "missing"}));
}

BOOST_AUTO_TEST_CASE(get_waits_for_a_later_set) {
  dist::TCPStore server("127.0.0.1", 0, true, 5000ms);
  std::thread setter([port = server.port()] {
    dist::TCPStore c("localhost", port, false, 5000ms);
    std::this_thread::sleep_for(150ms);
    c.set("late", std::string("here"));
  });
  auto start = std::chrono::steady_clock::now();
  dist::TCPStore waiter("127.0.0.1", server.port(), false, 5000ms);
  BOOST_TEST(waiter.get_string("late") == "here");
  BOOST_TEST((std::chrono::steady_clock::now() - start >= 100ms));
  waiter.wait({"late"});
  setter.join();
}

BOOST_AUTO_TEST_CASE(many_clients_count_in) {
  dist::TCPStore server("127.0.0.1", 0, true, 5000ms);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 6; ++r)
    ranks.emplace_back([port = server.port(), r] {
      dist::TCPStore c("127.0.0.1", port, false, 5000ms);
      c.add("arrived", 1);
      c.set("rank/" + std::to_string(r), std::to_string(r * r));
    });
  for (auto& t : ranks) t.join();
  BOOST_TEST(server.get_string("arrived") == "6");
  for (int r = 0; r < 6; ++r) BOOST_TEST(server.get_string("rank/" + std::to_string(r)) == std::to_string(r * r));
}

BOOST_AUTO_TEST_CASE(timeouts_name_the_key) {
  dist::TCPStore server("127.0.0.1", 0, true, 300ms);
  auto start = std::chrono::steady_clock::now();
  check_error([&] { server.get("never"); }, {"timed out", "300 ms", "'never'"});
  auto took = std::chrono::steady_clock::now() - start;
  BOOST_TEST((took >= 250ms && took < 3s));
  server.set("one", std::string("1"));
  check_error([&] { server.wait({"one", "two"}, 200ms); }, {"timed out", "'two'"});
}

BOOST_AUTO_TEST_CASE(unreachable_server_is_an_error_within_the_timeout) {
  int port = tritium::test::unused_loopback_port();
  auto start = std::chrono::steady_clock::now();
  check_error([&] { dist::TCPStore("127.0.0.1", port, false, 400ms); },
              {"could not reach the store", "127.0.0.1:" + std::to_string(port), "400 ms", "refused"});
  BOOST_TEST((std::chrono::steady_clock::now() - start < 3s));
  check_error([&] { dist::TCPStore("no-such-host.invalid", 1234, false, 200ms); }, {"cannot resolve"});
}

BOOST_AUTO_TEST_CASE(a_server_that_goes_away_is_an_error) {
  auto server = std::make_unique<dist::TCPStore>("127.0.0.1", 0, true, 5000ms);
  dist::TCPStore client("127.0.0.1", server->port(), false, 5000ms);
  client.set("k", std::string("v"));
  server.reset();
  check_error([&] { client.get("k"); }, {"lost the connection", "'k'"});
  check_error([&] { client.get("k"); }, {"lost earlier"});
}

BOOST_AUTO_TEST_CASE(bad_arguments) {
  check_error([] { dist::TCPStore("127.0.0.1", 70000, true, 100ms); }, {"port 70000", "out of range"});
  check_error([] { dist::TCPStore("127.0.0.1", 0, false, 100ms); }, {"needs the server's port"});
  check_error([] { dist::TCPStore("127.0.0.1", 0, true, 0ms); }, {"timeout must be positive"});
  dist::TCPStore first("127.0.0.1", 0, true, 1000ms);
  check_error([&] { dist::TCPStore("127.0.0.1", first.port(), true, 1000ms); },
              {"cannot listen on port", "another job uses this MASTER_PORT"});
}

BOOST_AUTO_TEST_CASE(prefixes_separate_name_spaces) {
  auto server = std::make_shared<dist::TCPStore>("127.0.0.1", 0, true, 2000ms);
  dist::PrefixStore a("a", server), b("b", server);
  a.set("k", std::string("in a"));
  b.set("k", std::string("in b"));
  BOOST_TEST(a.get_string("k") == "in a");
  BOOST_TEST(b.get_string("k") == "in b");
  BOOST_TEST(server->get_string("a/k") == "in a");
  BOOST_TEST(a.add("n", 2) == 2);
  BOOST_TEST(!b.check({"n"}));
  BOOST_TEST(a.check({"k", "n"}));
}

BOOST_AUTO_TEST_SUITE_END()

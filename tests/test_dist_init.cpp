// dist::init_process_group from torchrun's variables (issue 32): a one-rank job end to end (the
// default group, the free collectives, a sub-group, destroy and init again), and each bad
// environment a clear error naming the variable: missing, not an integer, RANK >= WORLD_SIZE,
// an unreachable master (within the timeout), an unknown backend, init twice, NCCL without a GPU.
#include <boost/test/unit_test.hpp>

#include "test_support.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <optional>

#include "common/error.h"
#include "dist/distributed.h"
#include "dist/gloo_process_group.h"
#include "runtime/device.h"
#include "loopback_port.h"

using namespace tritium;
using runtime::Tensor;
using namespace std::chrono_literals;

namespace {

// Sets torchrun's variables for one test and restores the previous environment after it.
class LaunchVariables {
 public:
  explicit LaunchVariables(std::map<std::string, std::optional<std::string>> values) {
    for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) {
      const char* v = std::getenv(name);
      saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
      ::unsetenv(name);
    }
    for (auto& [name, v] : values)
      if (v) ::setenv(name.c_str(), v->c_str(), 1);
  }
  ~LaunchVariables() {
    for (auto& [name, v] : saved_) v ? ::setenv(name.c_str(), v->c_str(), 1) : ::unsetenv(name.c_str());
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};



std::map<std::string, std::optional<std::string>> one_rank_job() {
  return {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(tritium::test::unused_loopback_port())}};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_dist_init)

BOOST_AUTO_TEST_CASE(a_one_rank_job_end_to_end) {
  if (!dist::GlooProcessGroup::available()) {
    BOOST_TEST_MESSAGE("skipped: this build has no Gloo backend (libgloo-dev)");
    return;
  }
  LaunchVariables env(one_rank_job());
  BOOST_TEST(!dist::is_initialized());
  dist::init_process_group("gloo", {.timeout = 5000ms});
  BOOST_TEST(dist::is_initialized());
  BOOST_TEST(dist::get_rank() == 0);
  BOOST_TEST(dist::get_world_size() == 1);
  BOOST_TEST(dist::default_group()->backend() == "gloo");
  Tensor t = Tensor::from_vector<float>({1.5f, -2.f, 3.25f}, {3});
  BOOST_TEST(dist::all_reduce(t, dist::ReduceOp::avg) == nullptr);  // waited
  BOOST_TEST((t.to_vector<float>() == std::vector<float>{1.5f, -2.f, 3.25f}));
  auto work = dist::all_reduce(t, dist::ReduceOp::sum, nullptr, /*async_op=*/true);
  BOOST_REQUIRE(work);
  work->wait();
  BOOST_TEST(work->is_completed());
  auto sub = dist::new_group({0});
  BOOST_REQUIRE(sub);
  BOOST_TEST(sub->size() == 1);
  dist::broadcast(t, 0, sub);
  dist::barrier();
  tritium::test::check_throws([&] { dist::broadcast(t, 1, sub); }, {"src 1 is not a member of the group"});
  tritium::test::check_throws([] { dist::new_group({0, 0}); }, {"rank 0 is listed twice"});
  tritium::test::check_throws([] { dist::new_group({1}); }, {"rank 1 is not in the world (0 to 0)"});
  tritium::test::check_throws([] { dist::init_process_group("gloo"); }, {"already initialised"});
  dist::destroy_process_group();
  BOOST_TEST(!dist::is_initialized());
  tritium::test::check_throws([] { dist::get_rank(); }, {"not initialised", "init_process_group"});
  // A second job in the same process, on another port.
  LaunchVariables again(one_rank_job());
  dist::init_process_group("gloo", {.timeout = 5000ms});
  dist::barrier();
  dist::destroy_process_group();
}

BOOST_AUTO_TEST_CASE(bad_variables_are_clear_errors) {
  auto job = one_rank_job();
  auto without = [&](const char* name) {
    auto j = job;
    j[name] = std::nullopt;
    return j;
  };
  auto with = [&](const char* name, const char* value) {
    auto j = job;
    j[name] = value;
    return j;
  };
  for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) {
    LaunchVariables env(without(name));
    tritium::test::check_throws([] { dist::init_process_group("gloo"); },
                {std::string("the environment variable ") + name + " is not set", "tritium-run"});
  }
  {
    LaunchVariables env(with("WORLD_SIZE", "2"));
    auto j = with("WORLD_SIZE", "2");
    j["RANK"] = "2";
    LaunchVariables env2(j);
    tritium::test::check_throws([] { dist::init_process_group("gloo"); }, {"RANK=2 is out of range: WORLD_SIZE=2", "0 to 1"});
  }
  {
    LaunchVariables env(with("RANK", "one"));
    tritium::test::check_throws([] { dist::init_process_group("gloo"); }, {"RANK='one' is not an integer"});
  }
  {
    LaunchVariables env(with("MASTER_PORT", "0"));
    tritium::test::check_throws([] { dist::init_process_group("gloo"); }, {"MASTER_PORT=0 is out of range (1 to 65535)"});
  }
  {
    LaunchVariables env(with("LOCAL_RANK", "3"));
    tritium::test::check_throws([] { dist::init_process_group("gloo"); }, {"LOCAL_RANK=3 is out of range"});
  }
  {
    LaunchVariables env(job);
    tritium::test::check_throws([] { dist::init_process_group("mpi"); }, {"unknown backend 'mpi'", "gloo or nccl"});
  }
  BOOST_TEST(!dist::is_initialized());
}

BOOST_AUTO_TEST_CASE(an_unreachable_master_is_an_error_within_the_timeout) {
  // Rank 1 of 2: rank 0 (the store's server) never comes up.
  auto job = one_rank_job();
  job["RANK"] = "1", job["WORLD_SIZE"] = "2";
  LaunchVariables env(job);
  auto start = std::chrono::steady_clock::now();
  tritium::test::check_throws([] { dist::init_process_group("gloo", {.timeout = 500ms}); },
              {"could not reach the store at 127.0.0.1:" + job["MASTER_PORT"].value(), "within 500 ms",
               "MASTER_ADDR:MASTER_PORT"});
  auto took = std::chrono::steady_clock::now() - start;
  BOOST_TEST((took >= 450ms && took < 3s));
  BOOST_TEST(!dist::is_initialized());
}

BOOST_AUTO_TEST_CASE(a_rank_that_never_comes_is_an_error_within_the_timeout) {
  if (!dist::GlooProcessGroup::available()) return;
  // Rank 0 of 2 serves the store; rank 1 never starts.
  auto job = one_rank_job();
  job["WORLD_SIZE"] = "2";
  LaunchVariables env(job);
  auto start = std::chrono::steady_clock::now();
  tritium::test::check_throws([] { dist::init_process_group("gloo", {.timeout = 500ms}); },
              {"timed out", "(1 of 2 ranks had arrived at the rendezvous)"});
  BOOST_TEST((std::chrono::steady_clock::now() - start < 5s));
  BOOST_TEST(!dist::is_initialized());
}

BOOST_AUTO_TEST_CASE(nccl_without_a_gpu_says_why) {
  if (runtime::device_available(Device::cuda(0))) {
    BOOST_TEST_MESSAGE("skipped: a GPU is present (the NCCL backend is checked by the multi-process test there)");
    return;
  }
  LaunchVariables env(one_rank_job());
  tritium::test::check_throws([] { dist::init_process_group("nccl", {.timeout = 2000ms}); }, {"nccl backend"});
  BOOST_TEST(!dist::is_initialized());
}

BOOST_AUTO_TEST_SUITE_END()

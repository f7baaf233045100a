// ops/rng_state.cpp: seeds, generator states (get_rng_state / set_rng_state restore the exact
// stream, mid-way and across every sampler), independent generators, fork_rng, and malformed
// states refused.
#include "test_support.h"

#include <functional>

#include "ops/ops.h"
#include "ops/rng_state.h"
#include "ops/sampling.h"

namespace tt = tritium::test;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;

namespace {

// One of each sampler, concatenated as doubles: a stream fingerprint that moves every op's
// counters.
std::vector<double> draw_all(ops::Generator& gen) {
  std::vector<double> out;
  auto put = [&](const Tensor& t) {
    auto v = ops::to_dtype(t, DType::f64).to_vector<double>();
    out.insert(out.end(), v.begin(), v.end());
  };
  put(ops::rand({17}, gen));
  put(ops::randn({9}, gen, DType::f64));
  put(ops::randint(0, 100, {13}, gen));
  put(ops::normal(0.0, 2.0, {11}, gen));
  put(ops::poisson(ops::full({7}, 30.0, DType::f32), gen));
  put(ops::multinomial(ops::ones({2, 9}), 4, false, gen));
  put(ops::multinomial(ops::ones({9}), 4, true, gen));
  put(ops::randperm(33, gen));
  put(ops::bernoulli(ops::full({10}, 0.5, DType::f32), gen));
  Tensor x = ops::zeros({8}, DType::f32);
  ops::exponential_(x, 1.0, gen);
  put(x);
  ops::cauchy_(x, 0.0, 1.0, gen);
  put(x);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_rng_state)

BOOST_AUTO_TEST_CASE(manual_seed_and_initial_seed) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::ForkRng keep;  // leave the default generator as other suites expect it
    ops::manual_seed(2718);
    BOOST_TEST(ops::initial_seed() == 2718u);
    auto a = draw_all(ops::default_generator());
    ops::manual_seed(2718);
    auto b = draw_all(ops::default_generator());
    BOOST_TEST(a == b);
    ops::manual_seed(2719);
    BOOST_TEST(draw_all(ops::default_generator()) != a);
    // seed(): non-deterministic, set and returned.
    uint64_t s1 = ops::seed();
    BOOST_TEST(ops::initial_seed() == s1);
    uint64_t s2 = ops::seed();
    BOOST_TEST(s1 != s2);
    ops::Generator g(5);
    uint64_t s3 = ops::seed(g);
    BOOST_TEST(ops::initial_seed(g) == s3);
    BOOST_TEST(g.offset() == 0u);
    // One default generator serves every device.
    BOOST_TEST(&ops::default_generator(tritium::Device::cpu()) == &ops::default_generator());
    BOOST_TEST(&ops::default_generator(tritium::Device::cuda()) == &ops::default_generator());
  });
}

BOOST_AUTO_TEST_CASE(state_restores_the_stream_mid_way) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::Generator gen(77);
    draw_all(gen);  // somewhere past the start
    Tensor state = ops::get_rng_state(gen);
    BOOST_TEST((state.dtype() == DType::u8 && state.shape() == std::vector<int64_t>{16}));
    BOOST_TEST((state.device() == tritium::Device::cpu()));
    auto first = draw_all(gen);
    auto second = draw_all(gen);
    BOOST_TEST(first != second);
    ops::set_rng_state(gen, state);
    BOOST_TEST(draw_all(gen) == first);
    BOOST_TEST(draw_all(gen) == second);
    // The bytes are the seed and the offset, little-endian (PyTorch's CUDA generator layout).
    ops::Generator fresh(0x0102030405060708ull);
    fresh.advance(0x1122);
    auto bytes = ops::get_rng_state(fresh).to_vector<uint8_t>();
    BOOST_TEST(bytes[0] == 0x08);
    BOOST_TEST(bytes[7] == 0x01);
    BOOST_TEST(bytes[8] == 0x22);
    BOOST_TEST(bytes[9] == 0x11);
    BOOST_TEST(bytes[15] == 0x00);
    // A state from one generator restores another, and a state held on another device restores too.
    ops::Generator other(1);
    ops::set_rng_state(other, state.to(tritium::default_device()));
    BOOST_TEST(draw_all(other) == first);
    // The default generator's state functions.
    ops::ForkRng keep;
    ops::set_rng_state(state);
    BOOST_TEST(draw_all(ops::default_generator()) == first);
    BOOST_TEST((ops::get_rng_state().to_vector<uint8_t>() == ops::get_rng_state(other).to_vector<uint8_t>()));  // both drew `first` from state
  });
}

BOOST_AUTO_TEST_CASE(generators_are_independent) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::Generator a(10), b(10), c(11);
    auto a1 = draw_all(a);
    ops::rand({1000}, c);  // drawing from c moves nothing else
    auto b1 = draw_all(b);
    BOOST_TEST(a1 == b1);
    ops::Generator d(10);
    auto d_first = draw_all(d);
    BOOST_TEST(d_first == a1);
    BOOST_TEST(draw_all(a) != a1);  // a moved on
    BOOST_TEST(draw_all(c) != draw_all(b));
  });
}

BOOST_AUTO_TEST_CASE(fork_rng_restores) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::Generator g(3), h(4);
    auto before_g = ops::get_rng_state(g).to_vector<uint8_t>(), before_h = ops::get_rng_state(h).to_vector<uint8_t>();
    {
      ops::ForkRng fork({&g, &h});
      draw_all(g);
      h.manual_seed(99);
      ops::rand({5}, h);
    }
    BOOST_TEST(ops::get_rng_state(g).to_vector<uint8_t>() == before_g);
    BOOST_TEST(ops::get_rng_state(h).to_vector<uint8_t>() == before_h);
    tt::check_throws([] { ops::ForkRng bad({nullptr}); }, {"fork_rng", "null"}, "null generator");
  });
}

BOOST_AUTO_TEST_CASE(malformed_states_are_refused) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::Generator g(3);
    Tensor before = ops::get_rng_state(g);
    tt::check_throws([&] { ops::set_rng_state(g, ops::zeros({16}, DType::f32)); }, {"set_rng_state", "u8", "f32"}, "dtype");
    tt::check_throws([&] { ops::set_rng_state(g, ops::zeros({5056}, DType::u8)); },
                     {"set_rng_state", "RNG state is wrong size", "16 bytes"}, "PyTorch's CPU state size");
    tt::check_throws([&] { ops::set_rng_state(g, ops::zeros({4, 4}, DType::u8)); }, {"wrong size", "1-D"}, "2-D");
    tt::check_throws([&] { ops::set_rng_state(g, Tensor()); }, {"set_rng_state", "undefined"}, "undefined");
    BOOST_TEST(ops::get_rng_state(g).to_vector<uint8_t>() == before.to_vector<uint8_t>());  // untouched
  });
}

BOOST_AUTO_TEST_SUITE_END()

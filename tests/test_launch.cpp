// The launch API: grids (fixed, 3-D, empty, from the meta-parameters), named meta-parameters,
// Tensor and void* arguments, argument names in errors, and concurrent launches.
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "jit/compiled_kernel.h"
#include "test_support.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;

namespace {

// out[pid linear] = pid_x + 1000 * pid_y + 1000000 * pid_z, and the grid size in the first slots.
auto grid_ids = tritium::kernel("grid_ids", [](tl::ptr<int32_t> out, tl::ptr<int32_t> dims) {
  auto x = tl::program_id(0), y = tl::program_id(1), z = tl::program_id(2);
  auto nx = tl::num_programs(0), ny = tl::num_programs(1), nz = tl::num_programs(2);
  tl::store(out + (x + nx * (y + ny * z)), x + 1000 * y + 1000000 * z);
  tl::if_((x == 0) && (y == 0) && (z == 0), [&] {
    tl::store(dims, nx);
    tl::store(dims + 1, ny);
    tl::store(dims + 2, nz);
  });
});

auto scale = tritium::kernel(
    "scale",
    [](tl::ptr<float> x, tl::ptr<float> out, tl::f32 factor, tl::i32 n, int BLOCK) {
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto mask = offs < n;
      tl::store(out + offs, tl::load(x + offs, mask) * factor, mask);
    },
    {"x", "out", "factor", "n", "BLOCK"});

void check_scaled(const tt::host_vector<float>& x, const tt::host_vector<float>& out, double factor) {
  std::vector<double> ref(x.size());
  for (size_t i = 0; i < x.size(); ++i) ref[i] = double(x[i]) * factor;
  tt::check_close<float>(out, ref, 1e-6);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_launch)

BOOST_AUTO_TEST_CASE(three_dimensional_grid) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const int nx = 5, ny = 3, nz = 2;
    auto out = be.alloc_poisoned<int32_t>(nx * ny * nz);
    auto dims = be.alloc_poisoned<int32_t>(3);
    grid_ids[{nx, ny, nz}](out.ptr(), dims.ptr(), be.options());
    tt::host_vector<int32_t> ref;
    for (int z = 0; z < nz; ++z)
      for (int y = 0; y < ny; ++y)
        for (int x = 0; x < nx; ++x) ref.push_back(x + 1000 * y + 1000000 * z);
    tt::check_equal<int32_t>(out.download(), ref);
    tt::check_equal<int32_t>(dims.download(), tt::host_vector<int32_t>{nx, ny, nz});
  });
}

BOOST_AUTO_TEST_CASE(grid_from_meta_parameters_and_named_meta) {
  tt::for_each_backend([&](const tt::Backend& be) {
    int n = 1000;
    auto x = tt::random_vector<float>(n, 3);
    auto dx = be.upload<float>(x);
    auto dout = be.alloc_poisoned<float>(n);
    auto grid = [n](const tritium::Meta& m) { return tritium::Grid(tritium::cdiv(n, m["BLOCK"])); };
    scale[grid](dx.ptr(), dout.ptr(), 2.5f, n, tritium::Meta{{"BLOCK", 64}}, be.options());
    check_scaled(x, dout.download(), 2.5);
    // The same through launch() and a positional meta-parameter.
    auto dout2 = be.alloc_poisoned<float>(n);
    scale.launch(grid, dx.ptr(), dout2.ptr(), -1.0, n, 128, be.options());
    check_scaled(x, dout2.download(), -1.0);
  });
}

BOOST_AUTO_TEST_CASE(empty_grid_is_a_no_op) {
  tt::for_each_backend([&](const tt::Backend& be) {
    auto out = be.alloc_poisoned<float>(16);
    auto x = be.upload<float>(tt::random_vector<float>(16, 4));
    scale[{0}](x.ptr(), out.ptr(), 1.0f, 16, 16, be.options());
    for (float v : out.download()) BOOST_TEST(std::isnan(v));
  });
}

BOOST_AUTO_TEST_CASE(tensor_arguments) {
  tt::for_each_backend([&](const tt::Backend& be) {
    int n = 300;
    auto host = tt::random_vector<float>(n, 5);
    auto x = tritium::Tensor::from_vector<float>(host, {n});
    auto out = tritium::Tensor::from_vector<float>(tt::poisoned<float>(n), {n});
    BOOST_TEST((x.device() == be.device));
    BOOST_TEST((out.device() == be.device));
    // No options: the kernel runs where its tensor arguments live.
    scale[{tritium::cdiv(n, 128)}](x, out, 3.0f, n, 128);
    check_scaled(host, out.to_vector<float>(), 3.0);
    BOOST_TEST((out.device() == be.device));
    // The same with the device named explicitly.
    auto out2 = tritium::Tensor::from_vector<float>(tt::poisoned<float>(n), {n});
    scale[{tritium::cdiv(n, 64)}](x, out2, -2.0f, n, 64, be.options());
    check_scaled(host, out2.to_vector<float>(), -2.0);
    auto wrong = tritium::Tensor::empty({n}, tritium::DType::f64);
    tt::check_throws([&] { scale[{1}](wrong, out, 3.0f, n, 128); }, {"scale", "argument 0 (x)", "f32", "f64"});
  });
}

// warmup compiles without launching and says what a program uses (Triton's kernel.warmup:
// n_regs, shared memory), for occupancy calculations.
BOOST_AUTO_TEST_CASE(warmup_describes_without_launching) {
  tt::for_each_backend([&](const tt::Backend& be) {
    int n = 300;
    auto x = tritium::Tensor::from_vector<float>(tt::random_vector<float>(n, 6), {n});
    auto poison = tt::poisoned<float>(n);
    auto out = tritium::Tensor::from_vector<float>(poison, {n});
    auto info = scale.warmup(x, out, 3.0f, n, 128, tritium::Options{.num_warps = 2});
    auto after = out.to_vector<float>();
    BOOST_TEST(std::memcmp(after.data(), poison.data(), sizeof(float) * poison.size()) == 0);  // not launched
    BOOST_TEST(info.name == "scale");
    if (be.device.is_cuda()) {
      BOOST_TEST(info.n_regs > 0);
      BOOST_TEST(info.n_regs <= 255);
      BOOST_TEST(info.num_threads == 64);
    } else {
      BOOST_TEST(info.n_regs == 0);
      BOOST_TEST(info.num_threads == 1);
    }
    // The launch that follows uses the same specialisation: nothing compiles again.
    auto before = tritium::jit::compile_stats().compiled;
    scale[{tritium::cdiv(n, 128)}](x, out, 3.0f, n, 128, tritium::Options{.num_warps = 2});
    BOOST_TEST(tritium::jit::compile_stats().compiled == before);
    BOOST_TEST((scale.warmup(x, out, 3.0f, n, 128, tritium::Options{.num_warps = 2}).hash == info.hash));
    auto bad = tritium::Tensor::empty({n}, tritium::DType::f64);
    tt::check_throws([&] { scale.warmup(bad, out, 3.0f, n, 128); }, {"scale", "argument 0 (x)", "f32", "f64"});
  });
}

BOOST_AUTO_TEST_CASE(void_pointer_arguments) {
  tt::for_each_backend([&](const tt::Backend& be) {
    int n = 64;
    auto x = tt::random_vector<float>(n, 6);
    auto dx = be.upload<float>(x);
    auto dout = be.alloc_poisoned<float>(n);
    scale[{1}](static_cast<void*>(dx.ptr()), static_cast<void*>(dout.ptr()), 0.5f, n, 64, be.options());
    check_scaled(x, dout.download(), 0.5);
  });
}

BOOST_AUTO_TEST_CASE(named_parameters_in_errors) {
  tt::for_each_backend([&](const tt::Backend& be) {
    auto x = be.alloc_poisoned<float>(4), out = be.alloc_poisoned<float>(4);
    tt::check_throws([&] { scale[{1}](x.ptr(), out.ptr(), 1.0f, 4, be.options()); }, {"scale", "BLOCK", "missing"});
    tt::check_throws([&] { scale[{1}](x.ptr(), out.ptr(), 1.0f, int64_t(1) << 40, 16, be.options()); },
                     {"argument 3 (n)", "does not fit", "i32"});
    tt::check_throws([&] { scale[{-1}](x.ptr(), out.ptr(), 1.0f, 4, 16, be.options()); }, {"scale", "invalid grid"});
    tt::check_throws([&] { scale[{1, 70000}](x.ptr(), out.ptr(), 1.0f, 4, 16, be.options()); },
                     {"scale", "invalid grid"});
    for (float v : out.download()) BOOST_TEST(std::isnan(v));  // nothing ran
    // A bad grid on the first launch of a specialisation is reported before compiling it.
    auto fresh = tritium::kernel("bad_grid_first", [](tl::ptr<float> o, int B) { tl::store(o + tl::arange(0, B), 1.0f); });
    tt::check_throws([&] { fresh[{-2}](out.ptr(), 16, be.options()); }, {"bad_grid_first", "invalid grid (-2, 1, 1)"});
    BOOST_TEST(fresh.num_specializations() == 0u);
  });
}

BOOST_AUTO_TEST_CASE(concurrent_launches_from_many_threads) {
  tt::for_each_backend([&](const tt::Backend& be) {
    // Threads race to trace and compile the same new specialisations, then launch them.
    auto k = tritium::kernel("scale_concurrent", [](tl::ptr<float> x, tl::ptr<float> out, tl::f32 f, tl::i32 n, int BLOCK) {
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto mask = offs < n;
      tl::store(out + offs, tl::load(x + offs, mask) * f, mask);
    });
    const int n = 999;
    auto x = tt::random_vector<float>(n, 7);
    auto dx = be.upload<float>(x);
    std::vector<tt::DeviceArray<float>> outs;
    for (int t = 0; t < 8; ++t) outs.push_back(be.alloc_poisoned<float>(n));
    std::vector<std::string> errors(8);  // what a thread threw (a throw out of a thread would terminate)
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        try {
          int block = t % 2 ? 64 : 128;
          for (int rep = 0; rep < 20; ++rep)
            k[{tritium::cdiv(n, block)}](dx.ptr(), outs[t].ptr(), float(t + 1), n, block, be.options());
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
    for (auto& th : threads) th.join();
    for (int t = 0; t < 8; ++t) BOOST_TEST(errors[t].empty(), "thread " << t << ": " << errors[t]);
    for (int t = 0; t < 8; ++t) check_scaled(x, outs[t].download(), t + 1);
    BOOST_TEST(k.num_specializations() == 2u);
  });
}

BOOST_AUTO_TEST_SUITE_END()

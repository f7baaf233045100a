// nn::GradScaler (issue 31 item 4): equality with an unscaled f32 run when nothing overflows,
// the skipped step and the backoff on an injected inf or NaN (parameters and optimiser state
// untouched), growth after growth_interval clean steps, unscale_ then clip_grad_norm_, the
// optimisers' device-side skip (Optimizer::skip_if) for every optimiser, state_dict, and each
// misuse a clear error. Every test runs on every backend.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "nn/autograd.h"
#include "nn/clip_grad.h"
#include "nn/functional.h"
#include "nn/grad_scaler.h"
#include "nn/optim.h"
#include "profiler/profile.h"
#include "test_support.h"

namespace tt = tritium::test;
using namespace tritium;

namespace {

// Converted where the test runs (a state dict's tensors are host copies, and a CUDA-only build has
// no CPU kernels to convert them with).
std::vector<double> values_of(const Tensor& t) {
  auto v = ops::to_dtype(t.to(default_device()), DType::f64).to_vector<double>();
  return std::vector<double>(v.begin(), v.end());
}

Tensor parameter(size_t n, uint32_t seed) {
  Tensor p = Tensor::from_vector(tt::random_vector<float>(n, seed), {static_cast<int64_t>(n)});
  p.requires_grad_(true);
  return p;
}

std::vector<Tensor> two_params(uint32_t seed) { return {parameter(37, seed), parameter(1100, seed + 1)}; }

std::vector<Tensor> copies(const std::vector<Tensor>& ps) {
  std::vector<Tensor> out;
  for (const Tensor& p : ps) {
    Tensor c = ops::add(p.detach(), 0.0);
    c.requires_grad_(true);
    out.push_back(c);
  }
  return out;
}

// loss = sum(p0^2 * c0) + sum(p1 * c1): gradients of ordinary size.
Tensor loss_of(const std::vector<Tensor>& ps, uint32_t seed) {
  Tensor c0 = Tensor::from_vector(tt::random_vector<float>(37, seed), {37});
  Tensor c1 = Tensor::from_vector(tt::random_vector<float>(1100, seed + 7), {1100});
  return tritium::add(tritium::sum(tritium::mul(tritium::mul(ps[0], ps[0]), c0)), tritium::sum(tritium::mul(ps[1], c1)));
}

void set_grad(Tensor& p, std::vector<float> g) { p.autograd()->grad = Tensor::from_vector(g, p.shape()); }

using Make = std::function<std::unique_ptr<nn::Optimizer>(std::vector<Tensor>)>;
struct Named {
  std::string what;
  Make make;
};
std::vector<Named> optimizers() {
  return {
      {"SGD", [](auto ps) { return std::make_unique<nn::SGD>(ps, 0.1, 0, 0.01); }},
      {"SGD momentum nesterov", [](auto ps) { return std::make_unique<nn::SGD>(ps, 0.1, 0.9, 0.01, 0, true); }},
      {"Adam amsgrad", [](auto ps) { return std::make_unique<nn::Adam>(ps, 1e-2, std::make_pair(0.9, 0.999), 1e-8, 0.1, true); }},
      {"AdamW", [](auto ps) { return std::make_unique<nn::AdamW>(ps, 1e-2); }},
      {"RMSprop centered momentum", [](auto ps) { return std::make_unique<nn::RMSprop>(ps, 1e-2, 0.99, 1e-8, 0.1, 0.9, true); }},
      {"Adagrad", [](auto ps) { return std::make_unique<nn::Adagrad>(ps, 1e-2, 0, 0.1); }},
  };
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_amp_grad_scaler)

// With a power-of-two scale and no overflow, scaling then unscaling is exact: three steps of
// every optimiser equal those of an unscaled run, bit for bit.
BOOST_AUTO_TEST_CASE(equals_an_unscaled_run_when_nothing_overflows) {
  tt::for_each_backend([&](const tt::Backend& be) {
    DefaultDeviceGuard on(be.device);  // the tensors the helpers make live on this backend
    for (const Named& o : optimizers()) {
      BOOST_TEST_CONTEXT(o.what) {
        auto plain = two_params(1), scaled = copies(plain);
        auto opt_plain = o.make(plain), opt_scaled = o.make(scaled);
        nn::GradScaler scaler(be.device, 1024.0);
        for (uint32_t step = 0; step < 3; ++step) {
          opt_plain->zero_grad(), opt_scaled->zero_grad();
          loss_of(plain, 10 + step).backward();
          opt_plain->step();
          scaler.scale(loss_of(scaled, 10 + step)).backward();
          scaler.step(*opt_scaled);
          scaler.update();
        }
        for (size_t i = 0; i < plain.size(); ++i) BOOST_TEST(values_of(plain[i]) == values_of(scaled[i]));
        BOOST_TEST(scaler.get_scale() == 1024.0);
        BOOST_TEST(scaler.growth_tracker() == 3);
      }
    }
  });
}

// An inf (or a NaN) in one gradient: the step changes no parameter and no optimiser state, the
// scale halves and the tracker restarts; the next clean step updates as an unscaled one would.
BOOST_AUTO_TEST_CASE(an_injected_inf_skips_the_step_and_backs_off) {
  tt::for_each_backend([&](const tt::Backend& be) {
    DefaultDeviceGuard on(be.device);  // the tensors the helpers make live on this backend
    for (double bad : {std::numeric_limits<double>::infinity(), std::nan("")}) {
      for (const Named& o : optimizers()) {
        BOOST_TEST_CONTEXT(o.what << " with " << bad) {
          auto ps = two_params(3), ref = copies(ps);
          auto opt = o.make(ps), opt_ref = o.make(ref);
          nn::GradScaler scaler(be.device, 256.0, 2.0, 0.5, 2000);
          // One clean step first, so the optimiser has state to keep.
          scaler.scale(loss_of(ps, 20)).backward();
          scaler.step(*opt), scaler.update();
          loss_of(ref, 20).backward();
          opt_ref->step();
          auto before = values_of(ps[1]);
          std::vector<std::pair<std::string, std::vector<double>>> state_before;  // values now, not views
          nn::OptimizerState saved = opt->state_dict();
          for (const auto& [name, t] : saved.tensors.items()) state_before.emplace_back(name, values_of(t));
          BOOST_TEST(state_before.empty() == (o.what == "SGD"));  // plain SGD keeps no state
          opt->zero_grad();
          scaler.scale(loss_of(ps, 21)).backward();
          auto g = ps[1].grad().to_vector<float>();
          g[777] = static_cast<float>(bad);
          set_grad(ps[1], g);
          scaler.step(*opt);
          BOOST_TEST(values_of(ps[1]) == before);
          BOOST_TEST(values_of(scaler.found_inf(*opt)) == std::vector<double>{1.0});
          auto state_after = opt->state_dict();
          // Every state tensor is untouched but the step counts, which the host keeps and counts
          // on (the documented deviation from PyTorch's fused optimisers, nn/grad_scaler.h).
          for (const auto& [name, v] : state_before)
            if (!name.ends_with(".step")) BOOST_TEST(v == values_of(state_after.tensors.at(name)), name);
          scaler.update();
          BOOST_TEST(scaler.get_scale() == 128.0);
          BOOST_TEST(scaler.growth_tracker() == 0);
          // A clean step again: as the reference's second step (same gradients); Adam's step
          // count ran on (the documented deviation), so compare the optimisers without one.
          opt->zero_grad(), opt_ref->zero_grad();
          scaler.scale(loss_of(ps, 22)).backward();
          scaler.step(*opt), scaler.update();
          loss_of(ref, 22).backward();
          opt_ref->step();
          BOOST_TEST(scaler.growth_tracker() == 1);
          if (o.what.starts_with("SGD") || o.what.starts_with("RMSprop"))
            for (size_t i = 0; i < ps.size(); ++i) BOOST_TEST(values_of(ps[i]) == values_of(ref[i]));
          else
            BOOST_TEST(values_of(ps[1]) != before);
        }
      }
    }
  });
}

// After growth_interval clean steps in a row the scale grows and the tracker restarts; a
// backoff in between restarts the count.
BOOST_AUTO_TEST_CASE(the_scale_grows_after_growth_interval_clean_steps) {
  tt::for_each_backend([&](const tt::Backend& be) {
    DefaultDeviceGuard on(be.device);  // the tensors the helpers make live on this backend
    auto ps = two_params(5);
    nn::SGD opt(ps, 1e-3);
    nn::GradScaler scaler(be.device, 8.0, 4.0, 0.25, 3);
    auto step = [&](bool inject) {
      opt.zero_grad();
      scaler.scale(loss_of(ps, 30)).backward();
      if (inject) {
        auto g = ps[0].grad().to_vector<float>();
        g[3] = -INFINITY;
        set_grad(ps[0], g);
      }
      scaler.step(opt);
      scaler.update();
    };
    step(false), step(false);
    BOOST_TEST(scaler.get_scale() == 8.0);
    BOOST_TEST(scaler.growth_tracker() == 2);
    step(false);
    BOOST_TEST(scaler.get_scale() == 32.0);
    BOOST_TEST(scaler.growth_tracker() == 0);
    step(false), step(true);
    BOOST_TEST(scaler.get_scale() == 8.0);
    BOOST_TEST(scaler.growth_tracker() == 0);
    step(false), step(false), step(false);
    BOOST_TEST(scaler.get_scale() == 32.0);
    scaler.update(0.5);  // an explicit new scale
    BOOST_TEST(scaler.get_scale() == 0.5);
  });
}

// unscale_ gives the true gradients, so clip_grad_norm_ clips those; step() then does not
// unscale again. Compared with the unscaled run clipped the same way.
BOOST_AUTO_TEST_CASE(unscale_then_clip_grad_norm) {
  tt::for_each_backend([&](const tt::Backend& be) {
    DefaultDeviceGuard on(be.device);  // the tensors the helpers make live on this backend
    auto ps = two_params(7), ref = copies(ps);
    nn::SGD opt(ps, 0.1), opt_ref(ref, 0.1);
    nn::GradScaler scaler(be.device, 4096.0);
    scaler.scale(loss_of(ps, 40)).backward();
    scaler.unscale_(opt);
    loss_of(ref, 40).backward();
    for (size_t i = 0; i < ps.size(); ++i) BOOST_TEST(values_of(ps[i].grad()) == values_of(ref[i].grad()));
    Tensor n1 = nn::clip_grad_norm_(ps, 0.5), n2 = nn::clip_grad_norm_(ref, 0.5);
    BOOST_TEST(values_of(n1) == values_of(n2));
    BOOST_TEST(values_of(n1)[0] > 0.5);  // the clip did something
    scaler.step(opt);
    scaler.update();
    opt_ref.step();
    for (size_t i = 0; i < ps.size(); ++i) BOOST_TEST(values_of(ps[i]) == values_of(ref[i]));
  });
}

// unscale_ is PyTorch's foreach check-and-unscale: one launch for every gradient of the
// optimiser, a gradient larger than a table row's chunk (65536 elements) included, a
// non-contiguous .grad unscaled through a copy. Values against g / scale on the host; an inf
// in the large gradient's second chunk is found.
BOOST_AUTO_TEST_CASE(unscale_is_one_launch_for_every_gradient) {
  tt::for_each_backend([&](const tt::Backend& be) {
    DefaultDeviceGuard on(be.device);
    for (bool with_inf : {false, true}) {
      std::vector<Tensor> ps = {parameter(37, 21), parameter(70001, 22), parameter(1100, 23), parameter(24, 24)};
      std::vector<std::vector<float>> gs;
      for (size_t i = 0; i < ps.size(); ++i) gs.push_back(tt::random_vector<float>(size_t(ps[i].numel()), 30 + uint32_t(i)));
      if (with_inf) gs[1][66000] = std::numeric_limits<float>::infinity();
      for (size_t i = 0; i < 3; ++i) set_grad(ps[i], gs[i]);
      // The last parameter's .grad: a transposed [4, 6] view of a [6, 4] tensor (not contiguous).
      std::vector<float> t(24);
      for (int r = 0; r < 6; ++r)
        for (int c = 0; c < 4; ++c) t[size_t(r * 4 + c)] = gs[3][size_t(c * 6 + r)];
      ps[3] = Tensor::from_vector(tt::random_vector<float>(24, 25), {4, 6});
      ps[3].requires_grad_(true);
      ps[3].autograd()->grad = Tensor::from_vector(t, {6, 4}).t();
      nn::SGD opt(ps, 0.1);
      nn::GradScaler scaler(be.device, 8.0);
      int64_t launches = 0;
      {
        profiler::Profile prof;
        scaler.unscale_(opt);
        prof.stop();
        for (const profiler::Event& e : prof.events())
          if (e.kind == profiler::EventKind::kernel && e.name == "amp_foreach_unscale_and_check") ++launches;
      }
      BOOST_TEST(launches == 1);
      for (size_t i = 0; i < ps.size(); ++i) {
        std::vector<double> got = values_of(ps[i].grad().contiguous());
        bool ok = got.size() == gs[i].size();
        for (size_t j = 0; ok && j < got.size(); ++j)
          ok = std::isinf(gs[i][j]) ? std::isinf(got[j]) : got[j] == double(gs[i][j] * (1.0f / 8.0f));
        BOOST_TEST(ok, "gradient " << i);
      }
      BOOST_TEST(!ps[3].grad().is_contiguous());  // still the user's tensor, unscaled in place
      scaler.step(opt);
      scaler.update();
      BOOST_TEST(scaler.get_scale() == (with_inf ? 4.0 : 8.0));  // backoff only when the inf was found
    }
  });
}

// The skip alone: Optimizer::skip_if with a set flag leaves everything; with a clear one the
// step is the ordinary one.
BOOST_AUTO_TEST_CASE(optimizer_skip_if_reads_the_flag_on_the_device) {
  tt::for_each_backend([&](const tt::Backend& be) {
    DefaultDeviceGuard on(be.device);  // the tensors the helpers make live on this backend
    for (const Named& o : optimizers()) {
      BOOST_TEST_CONTEXT(o.what) {
        auto ps = two_params(9), ref = copies(ps);
        auto opt = o.make(ps), opt_ref = o.make(ref);
        loss_of(ps, 50).backward(), loss_of(ref, 50).backward();
        auto before = values_of(ps[1]);
        opt->skip_if(ops::full({}, 1.0, DType::f32, be.device));
        opt->step();
        BOOST_TEST(values_of(ps[1]) == before);
        opt->skip_if(ops::zeros({}, DType::f32, be.device));
        opt->step();
        opt_ref->step();
        if (o.what.starts_with("SGD") || o.what.starts_with("RMSprop"))
          for (size_t i = 0; i < ps.size(); ++i) BOOST_TEST(values_of(ps[i]) == values_of(ref[i]));
        BOOST_TEST(values_of(ps[1]) != before);
        opt->skip_if(Tensor());
      }
    }
  });
}

// Both launch shapes of every optimiser (nn/optim_kernels.h): the multi-tensor kernel (foreach,
// the default: one launch for both parameters) and one launch per parameter (foreach = false)
// read found_inf. Each matches an unscaled run on a clean step, leaves parameters and state
// untouched on a step with an injected inf, and then matches the unscaled run again (Adam's
// step count ran on through the skip, so Adam is compared between the two shapes instead).
BOOST_AUTO_TEST_CASE(both_launch_shapes_skip_on_an_injected_inf) {
  tt::for_each_backend([&](const tt::Backend& be) {
    DefaultDeviceGuard on(be.device);  // the tensors the helpers make live on this backend
    for (const Named& o : optimizers()) {
      std::vector<std::vector<double>> finals;  // per shape: both parameters, concatenated
      for (bool foreach : {true, false}) {
        BOOST_TEST_CONTEXT(o.what << (foreach ? " multi-tensor" : " per parameter")) {
          auto ps = two_params(17), ref = copies(ps);
          auto opt = o.make(ps), opt_ref = o.make(ref);
          opt->foreach = foreach, opt_ref->foreach = foreach;
          nn::GradScaler scaler(be.device, 1024.0);
          auto clean = [&](uint32_t seed) {
            opt->zero_grad(), opt_ref->zero_grad();
            scaler.scale(loss_of(ps, seed)).backward();
            scaler.step(*opt), scaler.update();
            loss_of(ref, seed).backward();
            opt_ref->step();
          };
          clean(90);
          BOOST_TEST(opt->last_step_launches() == (foreach ? 1 : 2));
          for (size_t i = 0; i < ps.size(); ++i) BOOST_TEST(values_of(ps[i]) == values_of(ref[i]));
          // The inf in the first parameter's gradient: the whole step is skipped, both tensors.
          std::vector<std::vector<double>> before{values_of(ps[0]), values_of(ps[1])};
          nn::OptimizerState saved = opt->state_dict();
          std::vector<std::pair<std::string, std::vector<double>>> state_before;
          for (const auto& [name, t] : saved.tensors.items()) state_before.emplace_back(name, values_of(t));
          opt->zero_grad();
          scaler.scale(loss_of(ps, 91)).backward();
          auto g = ps[0].grad().to_vector<float>();
          g[5] = std::numeric_limits<float>::infinity();
          set_grad(ps[0], g);
          scaler.step(*opt);
          BOOST_TEST(opt->last_step_launches() == (foreach ? 1 : 2));  // launched, and returned on the device
          for (size_t i = 0; i < ps.size(); ++i) BOOST_TEST(values_of(ps[i]) == before[i]);
          auto state_after = opt->state_dict();
          for (const auto& [name, v] : state_before)
            if (!name.ends_with(".step")) BOOST_TEST(v == values_of(state_after.tensors.at(name)), name);
          scaler.update();
          BOOST_TEST(scaler.get_scale() == 512.0);
          clean(92);
          if (!o.what.starts_with("Adam"))
            for (size_t i = 0; i < ps.size(); ++i) BOOST_TEST(values_of(ps[i]) == values_of(ref[i]));
          auto f = values_of(ps[0]), f1 = values_of(ps[1]);
          f.insert(f.end(), f1.begin(), f1.end());
          finals.push_back(f);
        }
      }
      BOOST_TEST(finals[0] == finals[1], o.what << ": the two launch shapes agree");
    }
    // The flag must be a 0-dim f32.
    auto ps = two_params(19);
    nn::SGD opt(ps, 0.1);
    loss_of(ps, 93).backward();
    opt.skip_if(ops::zeros({}, DType::i32, be.device));
    tt::check_throws([&] { opt.step(); }, {"found_inf must be a 0-dim f32"});
  });
}

BOOST_AUTO_TEST_CASE(state_dict_round_trip) {
  tt::for_each_backend([&](const tt::Backend& be) {
    DefaultDeviceGuard on(be.device);  // the tensors the helpers make live on this backend
    auto ps = two_params(11);
    nn::SGD opt(ps, 1e-3);
    nn::GradScaler a(be.device, 64.0, 2.0, 0.5, 5);
    for (int i = 0; i < 2; ++i) {
      opt.zero_grad();
      a.scale(loss_of(ps, 60)).backward();
      a.step(opt), a.update();
    }
    nn::GradScalerState s = a.state_dict();
    BOOST_TEST(s.metadata.at("growth_interval") == "5");
    nn::GradScaler b(be.device);
    b.load_state_dict(s);
    BOOST_TEST(b.get_scale() == 64.0);
    BOOST_TEST(b.growth_tracker() == 2);
    BOOST_TEST(b.growth_interval() == 5);
    nn::GradScalerState bad = s;
    bad.metadata["growth_factor"] = "0.5";
    tt::check_throws([&] { b.load_state_dict(bad); }, {"growth_factor must be above 1"});
    nn::GradScalerState missing;
    missing.tensors.insert("scale", ops::full({}, 2.0, DType::f32, be.device));
    tt::check_throws([&] { b.load_state_dict(missing); }, {"missing '_growth_tracker'"});
    BOOST_TEST(b.get_scale() == 64.0);  // a refused state changed nothing
  });
}

BOOST_AUTO_TEST_CASE(disabled_scaler_passes_through) {
  tt::for_each_backend([&](const tt::Backend& be) {
    DefaultDeviceGuard on(be.device);  // the tensors the helpers make live on this backend
    auto ps = two_params(13), ref = copies(ps);
    nn::SGD opt(ps, 0.1), opt_ref(ref, 0.1);
    nn::GradScaler scaler(be.device, 65536.0, 2.0, 0.5, 2000, /*enabled=*/false);
    scaler.scale(loss_of(ps, 70)).backward();
    scaler.unscale_(opt);
    scaler.step(opt), scaler.update();
    loss_of(ref, 70).backward();
    opt_ref.step();
    for (size_t i = 0; i < ps.size(); ++i) BOOST_TEST(values_of(ps[i]) == values_of(ref[i]));
    BOOST_TEST(scaler.get_scale() == 1.0);
  });
}

BOOST_AUTO_TEST_CASE(misuse_is_a_clear_error) {
  tt::for_each_backend([&](const tt::Backend& be) {
    DefaultDeviceGuard on(be.device);  // the tensors the helpers make live on this backend
    auto ps = two_params(15);
    nn::SGD opt(ps, 0.1);
    nn::GradScaler scaler(be.device);
    tt::check_throws([&] { scaler.update(); }, {"no inf checks were recorded"});
    scaler.scale(loss_of(ps, 80)).backward();
    scaler.unscale_(opt);
    tt::check_throws([&] { scaler.unscale_(opt); }, {"unscale_() has already been called"});
    scaler.step(opt);
    tt::check_throws([&] { scaler.step(opt); }, {"step() has already been called"});
    tt::check_throws([&] { scaler.unscale_(opt); }, {"after step()"});
    scaler.update();
    tt::check_throws([&] { scaler.update(-1.0); }, {"new_scale must be a positive number"});
    tt::check_throws([&] { nn::GradScaler s(be.device, 0.0); }, {"init_scale must be a positive number"});
    tt::check_throws([&] { nn::GradScaler s(be.device, 1.0, 1.0); }, {"growth_factor must be above 1"});
    tt::check_throws([&] { nn::GradScaler s(be.device, 1.0, 2.0, 1.5); }, {"backoff_factor must be in (0, 1)"});
    tt::check_throws([&] { nn::GradScaler s(be.device, 1.0, 2.0, 0.5, 0); }, {"growth_interval must be a positive"});
    tt::check_throws([&] { scaler.scale(ops::zeros({}, DType::i32, be.device)); }, {"the loss must be floating"});
    // f16 gradients cannot be unscaled (PyTorch's "Attempting to unscale FP16 gradients").
    Tensor h = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}).to(DType::f16);
    h = ops::add(h, 0.0);
    h.requires_grad_(true);
    nn::SGD opt16({h}, 0.1);
    h.autograd()->grad = ops::full({3}, 1.0, DType::f16, be.device);
    tt::check_throws([&] { scaler.unscale_(opt16); }, {"has a f16 gradient", "f32"});
  });
}

BOOST_AUTO_TEST_SUITE_END()

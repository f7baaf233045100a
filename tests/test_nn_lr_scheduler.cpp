// LR schedulers (issue 30 item 3) against trajectories of torch.optim.lr_scheduler
// (tests/fixtures/lr_schedulers/trajectories.json, scripts/make_lr_scheduler_fixtures.py):
// every scheduler over two parameter groups, 30-60 steps, get_last_lr() after construction and
// after each step, the groups' lr, and OneCycleLR's momentum / beta1; state_dict round trips that
// resume a schedule exactly; PyTorch's argument errors. Schedulers compute on the host; the
// optimiser they drive is stepped on every backend.
#include <cmath>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>

#include "fixtures_dir.h"
#include "io/json.h"
#include "nn/autograd.h"
#include "nn/lr_scheduler.h"
#include "test_support.h"

namespace tt = tritium::test;
using tritium::Tensor;
using namespace tritium;

namespace {

const io::Json& fixtures() {
  static io::Json cases = [] {
    std::ifstream in(tt::fixtures_dir() / "lr_schedulers" / "trajectories.json");
    std::stringstream ss;
    ss << in.rdbuf();
    return io::parse_json(ss.str(), "trajectories.json");
  }();
  return *cases.find("cases");
}

Tensor parameter(int64_t n) {
  Tensor p = Tensor::from_vector(std::vector<float>(size_t(n), 0.5f));
  p.requires_grad_(true);
  return p;
}

// The fixtures' optimiser: two groups, lr 0.1 and 0.02; SGD momentum 0.9 or Adam.
std::unique_ptr<nn::Optimizer> make_optimizer(const std::string& kind) {
  std::vector<nn::ParamGroup> groups{{{parameter(2)}, {}}, {{parameter(3)}, {{"lr", 0.02}}}};
  if (kind == "sgd") return std::make_unique<nn::SGD>(groups, 0.1, 0.9);
  return std::make_unique<nn::Adam>(groups, 0.1, std::pair{0.9, 0.999});
}

std::vector<double> row(const io::Json& rows, size_t i) {
  std::vector<double> out;
  for (const auto& v : rows.as_array("rows")[i].as_array("row")) out.push_back(v.as_double("value"));
  return out;
}

void check_row(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k)
    BOOST_TEST(std::abs(got[k] - want[k]) <= 1e-13 * std::abs(want[k]),
               what << " group " << k << ": " << got[k] << " vs PyTorch's " << want[k]);
}

using Step = std::function<void(size_t)>;
using LastLr = std::function<std::vector<double>()>;

// Steps a schedule as the fixture did (optimizer.step(), then the scheduler's step) and checks
// every recorded value.
void check_trajectory(const std::string& name, nn::Optimizer& opt, const Step& step, const LastLr& last_lr) {
  const io::Json& c = *fixtures().find(name);
  size_t steps = size_t(c.at("steps", name).as_int64(name));
  const io::Json& lrs = c.at("lrs", name);
  const io::Json* moms = c.find("momentum");
  auto groups_lr = [&] {
    std::vector<double> v;
    for (const auto& g : opt.param_groups()) v.push_back(g.option("lr"));
    return v;
  };
  auto groups_momentum = [&] {
    std::vector<double> v;
    for (const auto& g : opt.param_groups()) v.push_back(g.has("beta1") ? g.option("beta1") : g.option("momentum"));
    return v;
  };
  for (auto& p : opt.params()) p.autograd()->grad = Tensor::from_vector(std::vector<float>(size_t(p.numel()), 0.1f));
  for (size_t i = 0; i <= steps; ++i) {
    if (i > 0) {
      opt.step();
      step(i - 1);
    }
    std::string what = fmt::format("{} after {} steps", name, i);
    check_row(last_lr(), row(lrs, i), what);
    check_row(groups_lr(), row(lrs, i), what + " (group lr)");
    if (moms) check_row(groups_momentum(), row(*moms, i), what + " (momentum)");
  }
}

void check_scheduler(const std::string& name, const std::string& kind,
                     const std::function<std::shared_ptr<nn::LRScheduler>(nn::Optimizer&)>& make) {
  auto opt = make_optimizer(kind);
  auto s = make(*opt);
  check_trajectory(name, *opt, [&](size_t) { s->step(); }, [&] { return s->get_last_lr(); });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_lr_scheduler)

BOOST_AUTO_TEST_CASE(trajectories_match_pytorch) {
  tt::for_each_backend([&](const tt::Backend&) {
    check_scheduler("StepLR", "sgd", [](nn::Optimizer& o) { return std::make_shared<nn::StepLR>(o, 7, 0.5); });
    check_scheduler("MultiStepLR", "sgd",
                    [](nn::Optimizer& o) { return std::make_shared<nn::MultiStepLR>(o, std::vector<int64_t>{5, 12, 12, 30}, 0.3); });
    check_scheduler("ExponentialLR", "sgd", [](nn::Optimizer& o) { return std::make_shared<nn::ExponentialLR>(o, 0.93); });
    check_scheduler("CosineAnnealingLR", "sgd",
                    [](nn::Optimizer& o) { return std::make_shared<nn::CosineAnnealingLR>(o, 10, 0.001); });
    check_scheduler("LinearLR", "sgd", [](nn::Optimizer& o) { return std::make_shared<nn::LinearLR>(o, 0.25, 0.9, 8); });
    check_scheduler("OneCycleLR_cos_sgd", "sgd", [](nn::Optimizer& o) {
      nn::OneCycleOptions c;
      c.total_steps = 60;
      return std::make_shared<nn::OneCycleLR>(o, std::vector<double>{0.5, 0.1}, c);
    });
    check_scheduler("OneCycleLR_linear_three_phase_adam", "adam", [](nn::Optimizer& o) {
      nn::OneCycleOptions c;
      c.epochs = 5, c.steps_per_epoch = 9, c.pct_start = 0.25, c.anneal_strategy = "linear", c.three_phase = true;
      c.div_factor = 10, c.final_div_factor = 100, c.base_momentum = {0.8}, c.max_momentum = {0.9};
      return std::make_shared<nn::OneCycleLR>(o, std::vector<double>{0.3}, c);
    });
    check_scheduler("SequentialLR_warmup_cosine", "sgd", [](nn::Optimizer& o) {
      auto warm = std::make_shared<nn::LinearLR>(o, 0.1, 1.0, 5);
      auto cos = std::make_shared<nn::CosineAnnealingLR>(o, 20);
      return std::make_shared<nn::SequentialLR>(o, std::vector<std::shared_ptr<nn::LRScheduler>>{warm, cos},
                                                std::vector<int64_t>{5});
    });
    check_scheduler("SequentialLR_three", "sgd", [](nn::Optimizer& o) {
      auto a = std::make_shared<nn::ExponentialLR>(o, 0.9);
      auto b = std::make_shared<nn::StepLR>(o, 4, 0.5);
      auto c = std::make_shared<nn::MultiStepLR>(o, std::vector<int64_t>{3, 6}, 0.1);
      return std::make_shared<nn::SequentialLR>(o, std::vector<std::shared_ptr<nn::LRScheduler>>{a, b, c},
                                                std::vector<int64_t>{6, 20});
    });
    for (const auto& [name, opts] :
         std::vector<std::pair<std::string, nn::PlateauOptions>>{
             {"ReduceLROnPlateau_min_rel", {.factor = 0.5, .patience = 3}},
             {"ReduceLROnPlateau_max_abs_cooldown_min_lr",
              {.mode = "max", .factor = 0.2, .patience = 2, .threshold = 0.05, .threshold_mode = "abs",
               .cooldown = 3, .min_lr = {1e-3, 5e-4}}}}) {
      auto opt = make_optimizer("sgd");
      nn::ReduceLROnPlateau s(*opt, opts);
      const auto& metrics = fixtures().find(name)->at("metrics", name).as_array(name);
      check_trajectory(name, *opt, [&](size_t i) { s.step(metrics[i].as_double(name)); },
                       [&] { return s.get_last_lr(); });
    }
  });
}

// A schedule saved half-way and loaded into a fresh scheduler (over an optimiser whose state was
// loaded too) goes on exactly as the uninterrupted one.
BOOST_AUTO_TEST_CASE(state_dict_resumes_the_schedule) {
  tt::for_each_backend([&](const tt::Backend&) {
    using Make = std::function<std::shared_ptr<nn::LRScheduler>(nn::Optimizer&)>;
    std::vector<std::pair<std::string, Make>> makes{
        {"CosineAnnealingLR", [](nn::Optimizer& o) { return std::make_shared<nn::CosineAnnealingLR>(o, 7, 1e-3); }},
        {"OneCycleLR", [](nn::Optimizer& o) {
           nn::OneCycleOptions c;
           c.total_steps = 30;
           return std::make_shared<nn::OneCycleLR>(o, std::vector<double>{0.4}, c);
         }},
        {"SequentialLR", [](nn::Optimizer& o) {
           auto a = std::make_shared<nn::LinearLR>(o, 0.2, 1.0, 4);
           auto b = std::make_shared<nn::ExponentialLR>(o, 0.8);
           return std::make_shared<nn::SequentialLR>(o, std::vector<std::shared_ptr<nn::LRScheduler>>{a, b},
                                                     std::vector<int64_t>{4});
         }}};
    for (const auto& [what, make] : makes) {
      auto straight_opt = make_optimizer("sgd");
      auto straight = make(*straight_opt);
      for (int i = 0; i < 9; ++i) straight->step();
      nn::OptimizerState ost = straight_opt->state_dict();
      std::string sst = straight->state_dict();
      auto resumed_opt = make_optimizer("sgd");
      auto resumed = make(*resumed_opt);
      resumed_opt->load_state_dict(ost);
      resumed->load_state_dict(sst);
      BOOST_TEST(resumed->last_epoch() == straight->last_epoch(), what);
      for (int i = 0; i < 12; ++i) {
        straight->step(), resumed->step();
        BOOST_TEST((straight->get_last_lr() == resumed->get_last_lr()), what << " step " << i);
        BOOST_TEST(resumed_opt->param_groups()[1].option("lr") == straight_opt->param_groups()[1].option("lr"));
      }
    }
    // ReduceLROnPlateau: best, counters and lrs come back.
    auto o1 = make_optimizer("sgd"), o2 = make_optimizer("sgd");
    nn::ReduceLROnPlateau a(*o1, {.patience = 1}), b(*o2, {.patience = 1});
    for (double m : {3.0, 2.0, 2.5, 2.6}) a.step(m);
    b.load_state_dict(a.state_dict());
    o2->load_state_dict(o1->state_dict());
    BOOST_TEST(b.best() == 2.0);
    BOOST_TEST(b.num_bad_epochs() == a.num_bad_epochs());
    for (double m : {2.7, 1.0, 1.5, 1.6}) {
      a.step(m), b.step(m);
      BOOST_TEST((a.get_last_lr() == b.get_last_lr()));
    }
    // Another class, another group count: refused.
    auto o3 = make_optimizer("sgd");
    nn::StepLR step_lr(*o3, 3);
    nn::ExponentialLR expo(*o3, 0.5);
    tt::check_throws([&] { step_lr.load_state_dict(expo.state_dict()); }, {"StepLR", "of a ExponentialLR"}, "class");
    nn::SGD one({parameter(2)}, 0.1);
    nn::StepLR one_group(one, 3);
    tt::check_throws([&] { one_group.load_state_dict(step_lr.state_dict()); }, {"StepLR", "2 values", "1 parameter groups"},
                     "group count");
    tt::check_throws([&] { b.load_state_dict(step_lr.state_dict()); }, {"ReduceLROnPlateau", "StepLR"}, "plateau class");
  });
}

BOOST_AUTO_TEST_CASE(bad_arguments) {
  tt::for_each_backend([&](const tt::Backend&) {
    auto opt = make_optimizer("sgd");
    nn::OneCycleOptions c;
    c.total_steps = 5;
    nn::OneCycleLR one_cycle(*opt, {0.1}, c);
    for (int i = 0; i < 5; ++i) one_cycle.step();
    tt::check_throws([&] { one_cycle.step(); }, {"OneCycleLR", "tried to step 6 times", "total steps is 5"},
                     "past total_steps");
    auto o = make_optimizer("sgd");
    nn::OneCycleOptions none;
    tt::check_throws([&] { nn::OneCycleLR(*o, {0.1}, none); }, {"OneCycleLR", "total_steps OR (epochs AND steps_per_epoch)"},
                     "no length");
    nn::OneCycleOptions zero;
    zero.total_steps = 0;
    tt::check_throws([&] { nn::OneCycleLR(*o, {0.1}, zero); }, {"positive integer total_steps"}, "zero total_steps");
    nn::OneCycleOptions pct = c;
    pct.pct_start = 1.5;
    tt::check_throws([&] { nn::OneCycleLR(*o, {0.1}, pct); }, {"pct_start", "1.5"}, "pct_start");
    nn::OneCycleOptions anneal = c;
    anneal.anneal_strategy = "exp";
    tt::check_throws([&] { nn::OneCycleLR(*o, {0.1}, anneal); }, {"anneal_strategy", "'exp'"}, "anneal strategy");
    tt::check_throws([&] { nn::OneCycleLR(*o, {0.1, 0.2, 0.3}, c); }, {"expected 2 values for max_lr, got 3"}, "max_lr count");
    nn::Adagrad adagrad({parameter(2)});
    tt::check_throws([&] { nn::OneCycleLR(adagrad, {0.1}, c); }, {"OneCycleLR", "Adagrad", "momentum or beta1"},
                     "cycle_momentum without momentum");
    nn::OneCycleOptions no_cycle = c;
    no_cycle.cycle_momentum = false;
    nn::OneCycleLR fine(adagrad, {0.1}, no_cycle);
    BOOST_TEST(std::abs(fine.get_last_lr()[0] - 0.1 / 25) < 1e-15);

    auto a = std::make_shared<nn::StepLR>(*o, 2), b = std::make_shared<nn::StepLR>(*o, 3);
    tt::check_throws([&] { nn::SequentialLR(*o, {a, b}, {}); }, {"SequentialLR", "number of schedulers 2", "equal to 0"},
                     "milestone count");
    tt::check_throws([&] { nn::SequentialLR(*o, {}, {}); }, {"SequentialLR", "at least one scheduler"}, "no scheduler");
    auto other = make_optimizer("sgd");
    auto foreign = std::make_shared<nn::StepLR>(*other, 2);
    tt::check_throws([&] { nn::SequentialLR(*o, {a, foreign}, {3}); }, {"SequentialLR", "same optimizer", "index 1"},
                     "scheduler of another optimizer");
    tt::check_throws([&] { nn::LinearLR(*o, 0); }, {"LinearLR", "starting multiplicative factor"}, "start_factor 0");
    tt::check_throws([&] { nn::LinearLR(*o, 0.5, 1.5); }, {"LinearLR", "ending multiplicative factor"}, "end_factor");
    tt::check_throws([&] { nn::StepLR(*o, 0); }, {"StepLR", "step_size"}, "step_size 0");
    tt::check_throws([&] { nn::CosineAnnealingLR(*o, 0); }, {"CosineAnnealingLR", "T_max"}, "T_max 0");
    tt::check_throws([&] { nn::ReduceLROnPlateau(*o, {.factor = 1.0}); }, {"ReduceLROnPlateau", "factor should be < 1.0"},
                     "factor");
    tt::check_throws([&] { nn::ReduceLROnPlateau(*o, {.mode = "lowest"}); }, {"mode 'lowest' is unknown"}, "mode");
    tt::check_throws([&] { nn::ReduceLROnPlateau(*o, {.threshold_mode = "pct"}); }, {"threshold mode 'pct'"},
                     "threshold mode");
    tt::check_throws([&] { nn::ReduceLROnPlateau(*o, {.min_lr = {0, 0, 0}}); }, {"expected 2 min_lrs, got 3"}, "min_lr count");
  });
}

BOOST_AUTO_TEST_SUITE_END()

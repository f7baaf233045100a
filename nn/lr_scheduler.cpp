#include "nn/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tritium::nn {

namespace {

constexpr double kPi = std::numbers::pi;

// One value per group: a single value for every group, or one per group (PyTorch's _format_param).
std::vector<double> per_group(const char* scheduler, const char* what, const std::vector<double>& v, size_t groups) {
  if (v.size() == 1) return std::vector<double>(groups, v[0]);
  if (v.size() != groups) fail("{}: expected {} values for {}, got {}", scheduler, groups, what, v.size());
  return v;
}

std::string json_list(const std::vector<double>& v) {
  std::vector<std::string> items;
  for (double x : v) items.push_back(std::isfinite(x) ? fmt::format("{}", x) : x > 0 ? "\"inf\"" : "\"-inf\"");
  return fmt::format("[{}]", fmt::join(items, ", "));
}
double json_double(const io::Json& v, const std::string& what) {
  if (v.is_string()) {
    const std::string& s = v.as_string(what);
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    fail("{}: \"{}\" is not a number", what, s);
  }
  return v.as_double(what);
}
std::vector<double> read_list(const io::Json& state, const char* key, size_t expected, const std::string& who) {
  const auto& a = state.at(key, who).as_array(who + " \"" + key + "\"");
  if (a.size() != expected)
    fail("{}: \"{}\" holds {} values, the optimizer has {} parameter groups", who, key, a.size(), expected);
  std::vector<double> out;
  for (const auto& x : a) out.push_back(json_double(x, who + " \"" + key + "\""));
  return out;
}

}  // namespace

// ---- LRScheduler -------------------------------------------------------------------------------------

LRScheduler::LRScheduler(Optimizer& opt) : opt_(&opt) {
  for (ParamGroup& g : opt.param_groups()) {
    if (!g.has("initial_lr")) g.options["initial_lr"] = g.option("lr");
    base_lrs_.push_back(g.option("initial_lr"));
  }
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  is_initial_ = true;
  step();
  is_initial_ = false;
}

void LRScheduler::step() {
  ++step_count_;
  update_lr(std::nullopt);
}

void LRScheduler::update_lr(std::optional<int64_t> epoch) {
  std::vector<double> values;
  if (!epoch) {
    ++last_epoch_;
    values = get_lr();
  } else {
    last_epoch_ = *epoch;
    auto closed = closed_form_lr();
    values = closed ? *closed : get_lr();
  }
  set_group_lrs(values);
  last_lr_ = group_lrs();
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> out;
  for (const ParamGroup& g : opt_->param_groups()) out.push_back(g.option("lr"));
  return out;
}

void LRScheduler::set_group_lrs(const std::vector<double>& lrs) {
  auto& groups = opt_->param_groups();
  if (lrs.size() != groups.size())
    fail("{}: the optimizer has {} parameter groups, the scheduler was made for {}", name(), groups.size(), lrs.size());
  for (size_t i = 0; i < lrs.size(); ++i) groups[i].option("lr") = lrs[i];
}

std::string LRScheduler::state_dict() const {
  return fmt::format("{{\"scheduler\": \"{}\", \"last_epoch\": {}, \"_step_count\": {}, \"base_lrs\": {}, "
                     "\"_last_lr\": {}{}}}", name(), last_epoch_, step_count_, json_list(base_lrs_),
                     json_list(last_lr_), extra_state_json());
}

void LRScheduler::load_state_dict(const std::string& text) {
  const std::string who = name() + "::load_state_dict";
  io::Json state = io::parse_json(text, who);
  const std::string& cls = state.at("scheduler", who).as_string(who + " \"scheduler\"");
  if (cls != name()) fail("{}: the state is of a {}, not of a {}", who, cls, name());
  size_t groups = base_lrs_.size();
  auto base = read_list(state, "base_lrs", groups, who), last = read_list(state, "_last_lr", groups, who);
  int64_t epoch = state.at("last_epoch", who).as_int64(who + " \"last_epoch\"");
  int64_t count = state.at("_step_count", who).as_int64(who + " \"_step_count\"");
  load_extra_state(state);  // validates before anything below changes
  base_lrs_ = base, last_lr_ = last, last_epoch_ = epoch, step_count_ = count;
}

// ---- StepLR, MultiStepLR, ExponentialLR ------------------------------------------------------------

StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma) : LRScheduler(opt), step_size_(step_size), gamma_(gamma) {
  if (step_size <= 0) fail("StepLR: step_size must be a positive integer, got {}", step_size);
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return lrs;
  for (double& lr : lrs) lr = lr * gamma_;
  return lrs;
}

std::optional<std::vector<double>> StepLR::closed_form_lr() const {
  std::vector<double> out;
  for (double b : base_lrs_) out.push_back(b * std::pow(gamma_, double(last_epoch_ / step_size_)));
  return out;
}

MultiStepLR::MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(opt), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  auto k = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (k == 0) return lrs;
  for (double& lr : lrs) lr = lr * std::pow(gamma_, double(k));
  return lrs;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() const {
  auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  std::vector<double> out;
  for (double b : base_lrs_) out.push_back(b * std::pow(gamma_, double(passed)));
  return out;
}

ExponentialLR::ExponentialLR(Optimizer& opt, double gamma) : LRScheduler(opt), gamma_(gamma) { initial_step(); }

std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (is_initial_) return lrs;
  for (double& lr : lrs) lr = lr * gamma_;
  return lrs;
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() const {
  std::vector<double> out;
  for (double b : base_lrs_) out.push_back(b * std::pow(gamma_, double(last_epoch_)));
  return out;
}

// ---- CosineAnnealingLR --------------------------------------------------------------------------------

CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, int64_t T_max, double eta_min)
    : LRScheduler(opt), T_max_(T_max), eta_min_(eta_min) {
  if (T_max <= 0) fail("CosineAnnealingLR: T_max must be a positive integer, got {}", T_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (is_initial_) return lrs;
  double t = double(last_epoch_), T = double(T_max_);
  for (size_t i = 0; i < lrs.size(); ++i) {
    double base = base_lrs_[i];
    if (step_count_ == 1 && last_epoch_ > 0)
      lrs[i] = eta_min_ + (base - eta_min_) * (1 + std::cos(t * kPi / T)) / 2;
    else if ((last_epoch_ - 1 - T_max_) % (2 * T_max_) == 0)
      lrs[i] = lrs[i] + (base - eta_min_) * (1 - std::cos(kPi / T)) / 2;
    else
      lrs[i] = (1 + std::cos(kPi * t / T)) / (1 + std::cos(kPi * (t - 1) / T)) * (lrs[i] - eta_min_) + eta_min_;
  }
  return lrs;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
  std::vector<double> out;
  for (double b : base_lrs_)
    out.push_back(eta_min_ + (b - eta_min_) * (1 + std::cos(kPi * double(last_epoch_) / double(T_max_))) / 2);
  return out;
}

// ---- LinearLR ----------------------------------------------------------------------------------------

LinearLR::LinearLR(Optimizer& opt, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(opt), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  if (start_factor > 1.0 || start_factor <= 0)
    fail("LinearLR: starting multiplicative factor expected to be greater than 0 and less or equal to 1, got {}",
         start_factor);
  if (end_factor > 1.0 || end_factor < 0)
    fail("LinearLR: ending multiplicative factor expected to be between 0 and 1, got {}", end_factor);
  if (total_iters <= 0) fail("LinearLR: total_iters must be a positive integer, got {}", total_iters);
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr = lr * start_factor_;
    return lrs;
  }
  if (is_initial_ || last_epoch_ > total_iters_) return lrs;
  double d = end_factor_ - start_factor_;
  for (double& lr : lrs)
    lr = lr * (1.0 + d / (double(total_iters_) * start_factor_ + double(last_epoch_ - 1) * d));
  return lrs;
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
  std::vector<double> out;
  for (double b : base_lrs_)
    out.push_back(b * (start_factor_ + (end_factor_ - start_factor_) * double(std::min(total_iters_, last_epoch_)) /
                                           double(total_iters_)));
  return out;
}

// ---- OneCycleLR --------------------------------------------------------------------------------------

OneCycleLR::OneCycleLR(Optimizer& opt, std::vector<double> max_lr, OneCycleOptions o)
    : LRScheduler(opt), o_(std::move(o)) {
  if (o_.total_steps) {
    if (*o_.total_steps <= 0) fail("OneCycleLR: expected positive integer total_steps, but got {}", *o_.total_steps);
    total_steps_ = *o_.total_steps;
  } else if (o_.epochs && o_.steps_per_epoch) {
    if (*o_.epochs <= 0) fail("OneCycleLR: expected positive integer epochs, but got {}", *o_.epochs);
    if (*o_.steps_per_epoch <= 0)
      fail("OneCycleLR: expected positive integer steps_per_epoch, but got {}", *o_.steps_per_epoch);
    total_steps_ = *o_.epochs * *o_.steps_per_epoch;
  } else {
    fail("OneCycleLR: you must define either total_steps OR (epochs AND steps_per_epoch)");
  }
  double T = double(total_steps_), pct = o_.pct_start;
  if (o_.three_phase)
    phases_ = {{pct * T - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {2 * pct * T - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
               {T - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
  else
    phases_ = {{pct * T - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {T - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"}};
  if (!(pct >= 0 && pct <= 1)) fail("OneCycleLR: expected float between 0 and 1 pct_start, but got {}", pct);
  if (o_.anneal_strategy != "cos" && o_.anneal_strategy != "linear")
    fail("OneCycleLR: anneal_strategy must be one of 'cos' or 'linear', instead got '{}'", o_.anneal_strategy);
  auto& groups = opt.param_groups();
  std::vector<double> max_lrs = per_group("OneCycleLR", "max_lr", max_lr, groups.size());
  std::vector<double> max_m, base_m;
  if (o_.cycle_momentum) {
    const OptionMap& d = opt.defaults();
    if (!d.count("momentum") && !d.count("beta1"))
      fail("OneCycleLR: optimizer {} must support momentum or beta1 with `cycle_momentum` option enabled", opt.name());
    momentum_key_ = d.count("beta1") ? "beta1" : "momentum";
    max_m = per_group("OneCycleLR", "max_momentum", o_.max_momentum, groups.size());
    base_m = per_group("OneCycleLR", "base_momentum", o_.base_momentum, groups.size());
  }
  // Everything checked: now the groups change.
  base_lrs_.clear();
  for (size_t i = 0; i < groups.size(); ++i) {
    OptionMap& g = groups[i].options;
    g["initial_lr"] = max_lrs[i] / o_.div_factor;
    g["max_lr"] = max_lrs[i];
    g["min_lr"] = g["initial_lr"] / o_.final_div_factor;
    base_lrs_.push_back(g["initial_lr"]);
    if (o_.cycle_momentum) {
      g[momentum_key_] = max_m[i];
      g["max_momentum"] = max_m[i];
      g["base_momentum"] = base_m[i];
    }
  }
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (o_.anneal_strategy == "cos") return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1);
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lr() {
  if (last_epoch_ > total_steps_)
    fail("OneCycleLR: tried to step {} times. The specified number of total steps is {}", last_epoch_, total_steps_);
  std::vector<double> lrs;
  double step = double(last_epoch_);
  for (ParamGroup& g : opt_->param_groups()) {
    double start = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& ph = phases_[i];
      if (step <= ph.end_step || i + 1 == phases_.size()) {
        double pct = (step - start) / (ph.end_step - start);
        lrs.push_back(anneal(g.option(ph.start_lr), g.option(ph.end_lr), pct));
        if (o_.cycle_momentum)
          g.option(momentum_key_) = anneal(g.option(ph.start_momentum), g.option(ph.end_momentum), pct);
        break;
      }
      start = ph.end_step;
    }
  }
  return lrs;
}

// ---- SequentialLR ------------------------------------------------------------------------------------

SequentialLR::SequentialLR(Optimizer& opt, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(opt), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  if (schedulers_.empty()) fail("SequentialLR: expects at least one scheduler, but got no scheduler");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    if (!schedulers_[i]) fail("SequentialLR: scheduler {} is null", i);
    if (&schedulers_[i]->optimizer() != &opt)
      fail("SequentialLR: expects all schedulers to belong to the same optimizer, but scheduler {} at index {} has "
           "another one", schedulers_[i]->name(), i);
  }
  if (milestones_.size() != schedulers_.size() - 1)
    fail("SequentialLR: expects number of schedulers provided to be one more than the number of milestone points, "
         "but got number of schedulers {} and the number of milestones to be equal to {}", schedulers_.size(),
         milestones_.size());
  last_epoch_ = 0;  // PyTorch's last_epoch + 1
  for (ParamGroup& g : opt.param_groups()) g.option("lr") = g.option("initial_lr");
  for (auto& s : schedulers_) s->undo_epoch();
  size_t idx = std::upper_bound(milestones_.begin(), milestones_.end(), 0) - milestones_.begin();
  schedulers_[idx]->initial_step();
  last_lr_ = schedulers_[idx]->get_last_lr();
}

void SequentialLR::undo_epoch() {
  for (auto& s : schedulers_) s->undo_epoch();
}

void SequentialLR::step() {
  ++last_epoch_;
  size_t idx = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  LRScheduler& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) s.update_lr(0);
  else s.step();
  last_lr_ = s.get_last_lr();
}

std::string SequentialLR::state_dict() const {
  std::vector<std::string> children;
  for (const auto& s : schedulers_) children.push_back(s->state_dict());
  return fmt::format("{{\"scheduler\": \"SequentialLR\", \"last_epoch\": {}, \"_milestones\": [{}], \"_last_lr\": {}, "
                     "\"_schedulers\": [{}]}}", last_epoch_, fmt::join(milestones_, ", "), json_list(last_lr_),
                     fmt::join(children, ", "));
}

void SequentialLR::load_state_dict(const std::string& text) {
  const std::string who = "SequentialLR::load_state_dict";
  io::Json state = io::parse_json(text, who);
  if (state.at("scheduler", who).as_string(who) != "SequentialLR")
    fail("{}: the state is of a {}, not of a SequentialLR", who, state.at("scheduler", who).as_string(who));
  const auto& children = state.at("_schedulers", who).as_array(who + " \"_schedulers\"");
  if (children.size() != schedulers_.size())
    fail("{}: the state holds {} schedulers, this SequentialLR has {}", who, children.size(), schedulers_.size());
  const auto& ms = state.at("_milestones", who).as_array(who + " \"_milestones\"");
  for (size_t i = 0; i < ms.size() && i < milestones_.size(); ++i)
    if (ms.size() != milestones_.size() || ms[i].as_int64(who) != milestones_[i])
      fail("{}: the state's milestones differ from this SequentialLR's", who);
  auto last = read_list(state, "_last_lr", opt_->param_groups().size(), who);
  int64_t epoch = state.at("last_epoch", who).as_int64(who + " \"last_epoch\"");
  // The children's classes are checked before any of them loads (their own checks follow, one
  // child after another).
  std::vector<std::string> texts;
  for (size_t i = 0; i < children.size(); ++i) {
    const std::string& cls = children[i].at("scheduler", who).as_string(who);
    if (cls != schedulers_[i]->name())
      fail("{}: scheduler {} of the state is a {}, this one is a {}", who, i, cls, schedulers_[i]->name());
  }
  // Each child's state is its object's span of the text (io::Json has no writer).
  size_t pos = text.find("\"_schedulers\": [");
  if (pos == std::string::npos) fail("{}: malformed state", who);
  pos += 16;
  for (size_t i = 0; i < children.size(); ++i) {
    size_t depth = 0, begin = text.find('{', pos), end = begin;
    for (; end < text.size(); ++end) {
      if (text[end] == '{') ++depth;
      if (text[end] == '}' && --depth == 0) break;
    }
    texts.push_back(text.substr(begin, end - begin + 1));
    pos = end + 1;
  }
  for (size_t i = 0; i < children.size(); ++i) schedulers_[i]->load_state_dict(texts[i]);
  last_lr_ = last, last_epoch_ = epoch;
}

// ---- ReduceLROnPlateau -------------------------------------------------------------------------------

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& opt, PlateauOptions o) : opt_(&opt), o_(std::move(o)) {
  if (o_.factor >= 1.0) fail("ReduceLROnPlateau: factor should be < 1.0, got {}", o_.factor);
  if (o_.mode != "min" && o_.mode != "max") fail("ReduceLROnPlateau: mode '{}' is unknown (min or max)", o_.mode);
  if (o_.threshold_mode != "rel" && o_.threshold_mode != "abs")
    fail("ReduceLROnPlateau: threshold mode '{}' is unknown (rel or abs)", o_.threshold_mode);
  size_t groups = opt.param_groups().size();
  if (o_.min_lr.size() != 1 && o_.min_lr.size() != groups)
    fail("ReduceLROnPlateau: expected {} min_lrs, got {}", groups, o_.min_lr.size());
  min_lrs_ = per_group("ReduceLROnPlateau", "min_lr", o_.min_lr, groups);
  for (const ParamGroup& g : opt.param_groups()) last_lr_.push_back(g.option("lr"));
  best_ = o_.mode == "min" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  if (o_.mode == "min" && o_.threshold_mode == "rel") return a < best * (1.0 - o_.threshold);
  if (o_.mode == "min") return a < best - o_.threshold;
  if (o_.threshold_mode == "rel") return a > best * (o_.threshold + 1.0);
  return a > best + o_.threshold;
}

void ReduceLROnPlateau::step(double metric) {
  auto& groups = opt_->param_groups();
  if (groups.size() != min_lrs_.size()) {
    if (o_.min_lr.size() != 1)
      fail("ReduceLROnPlateau: the number of param groups in the optimizer ({}) differs from when ReduceLROnPlateau "
           "was initialized ({})", groups.size(), min_lrs_.size());
    min_lrs_.assign(groups.size(), o_.min_lr[0]);
  }
  last_epoch_ += 1;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_ += 1;
  }
  if (cooldown_counter_ > 0) {
    cooldown_counter_ -= 1;
    num_bad_epochs_ = 0;
  }
  if (num_bad_epochs_ > o_.patience) {
    for (size_t i = 0; i < groups.size(); ++i) {
      double old_lr = groups[i].option("lr"), new_lr = std::max(old_lr * o_.factor, min_lrs_[i]);
      if (old_lr - new_lr > o_.eps) groups[i].option("lr") = new_lr;
    }
    cooldown_counter_ = o_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const ParamGroup& g : groups) last_lr_.push_back(g.option("lr"));
}

std::string ReduceLROnPlateau::state_dict() const {
  return fmt::format("{{\"scheduler\": \"ReduceLROnPlateau\", \"last_epoch\": {}, \"best\": {}, "
                     "\"num_bad_epochs\": {}, \"cooldown_counter\": {}, \"min_lrs\": {}, \"_last_lr\": {}}}",
                     last_epoch_, json_list({best_}).substr(1, json_list({best_}).size() - 2), num_bad_epochs_,
                     cooldown_counter_, json_list(min_lrs_), json_list(last_lr_));
}

void ReduceLROnPlateau::load_state_dict(const std::string& text) {
  const std::string who = "ReduceLROnPlateau::load_state_dict";
  io::Json state = io::parse_json(text, who);
  const std::string& cls = state.at("scheduler", who).as_string(who + " \"scheduler\"");
  if (cls != "ReduceLROnPlateau") fail("{}: the state is of a {}, not of a ReduceLROnPlateau", who, cls);
  size_t groups = opt_->param_groups().size();
  auto min_lrs = read_list(state, "min_lrs", groups, who), last = read_list(state, "_last_lr", groups, who);
  double best = json_double(state.at("best", who), who + " \"best\"");
  int64_t epoch = state.at("last_epoch", who).as_int64(who), bad = state.at("num_bad_epochs", who).as_int64(who);
  int64_t cool = state.at("cooldown_counter", who).as_int64(who);
  min_lrs_ = min_lrs, last_lr_ = last, best_ = best, last_epoch_ = epoch, num_bad_epochs_ = bad, cooldown_counter_ = cool;
}

}  // namespace tritium::nn

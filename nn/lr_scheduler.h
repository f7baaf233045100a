// Learning-rate schedulers, as torch.optim.lr_scheduler: each sets the "lr" of every parameter
// group of an optimiser (nn/optim.h) when step() is called, after the optimiser's step(), with
// PyTorch's formulas, including its recursive ("chainable") forms: step() computes the new lr
// from the group's current lr, so a schedule composes with changes made to the lr elsewhere, and
// SequentialLR's switch to the next scheduler uses that scheduler's closed form at epoch 0, as
// PyTorch's. Construction performs PyTorch's initial step (LinearLR multiplies the lr by
// start_factor at once, OneCycleLR sets it to max_lr / div_factor) and records each group's
// "initial_lr" (kept in the group's options, as PyTorch keeps it in param_groups).
//
//   nn::AdamW opt(model.parameters(), 1e-3);
//   nn::CosineAnnealingLR sched(opt, /*T_max=*/100);
//   for (...) { ...; opt.step(); sched.step(); }
//
// state_dict() is a JSON object (PyTorch's scheduler.state_dict() keys: "last_epoch",
// "_step_count", "base_lrs", "_last_lr" and each class's counters); load_state_dict() restores
// the counters and last lrs of a scheduler of the same class over as many groups (the
// constructor's arguments are not replaced). Not provided: PyTorch's deprecated step(epoch) and
// the last_epoch constructor argument (resume with load_state_dict instead).
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/json.h"
#include "nn/optim.h"

namespace tritium::nn {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  // Advances one epoch (or iteration) and sets every group's lr.
  virtual void step();
  // The lrs set by the last step (PyTorch's get_last_lr()).
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  Optimizer& optimizer() const { return *opt_; }
  virtual std::string name() const = 0;

  virtual std::string state_dict() const;
  // Errors: a state of another scheduler class or for another number of groups, a malformed
  // JSON; nothing changes then.
  virtual void load_state_dict(const std::string& state);

 protected:
  explicit LRScheduler(Optimizer& opt);
  // PyTorch's _initial_step: the constructors' last call.
  void initial_step();
  // The lrs of the next epoch (last_epoch_ already advanced), from the groups' current lrs.
  virtual std::vector<double> get_lr() = 0;
  // The lrs at last_epoch_ from base_lrs_ (PyTorch's _get_closed_form_lr), where the class has one.
  virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }
  // PyTorch's _update_lr: advance one epoch, or jump to `epoch` (closed form when there is one).
  void update_lr(std::optional<int64_t> epoch);
  // The class's counters in state_dict(): JSON members (", \"key\": value" each) and back.
  virtual std::string extra_state_json() const { return ""; }
  virtual void load_extra_state(const io::Json&) {}
  // SequentialLR's recursive_undo: each leaf scheduler's last_epoch -= 1.
  virtual void undo_epoch() { --last_epoch_; }
  std::vector<double> group_lrs() const;
  void set_group_lrs(const std::vector<double>& lrs);

  friend class SequentialLR;
  Optimizer* opt_;
  std::vector<double> base_lrs_, last_lr_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
  bool is_initial_ = false;
};

// lr *= gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1);
  std::string name() const override { return "StepLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  int64_t step_size_;
  double gamma_;
};

// lr *= gamma at each milestone (a milestone listed k times multiplies by gamma^k).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma = 0.1);
  std::string name() const override { return "MultiStepLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

// lr *= gamma every epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& opt, double gamma);
  std::string name() const override { return "ExponentialLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  double gamma_;
};

// eta_min + (base_lr - eta_min) (1 + cos(pi t / T_max)) / 2, by PyTorch's recursive form.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& opt, int64_t T_max, double eta_min = 0);
  std::string name() const override { return "CosineAnnealingLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  int64_t T_max_;
  double eta_min_;
};

// The factor goes linearly from start_factor to end_factor over total_iters epochs.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& opt, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);
  std::string name() const override { return "LinearLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

// The 1cycle policy (Smith & Topin), stepped once per batch: lr from max_lr / div_factor up to
// max_lr over pct_start of total_steps, then down to initial_lr / final_div_factor (three_phase:
// up, back down to initial_lr, then to the minimum), annealed by cosine or linearly; with
// cycle_momentum the momentum (SGD, RMSprop) or beta1 (Adam, AdamW) goes the opposite way between
// max_momentum and base_momentum. max_lr, base_momentum and max_momentum take one value for
// every group or one per group. The group options "max_lr", "min_lr", "max_momentum" and
// "base_momentum" are PyTorch's.
struct OneCycleOptions {
  std::optional<int64_t> total_steps, epochs, steps_per_epoch;
  double pct_start = 0.3;
  std::string anneal_strategy = "cos";  // or "linear"
  bool cycle_momentum = true;
  std::vector<double> base_momentum{0.85}, max_momentum{0.95};
  double div_factor = 25, final_div_factor = 1e4;
  bool three_phase = false;
};
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& opt, std::vector<double> max_lr, OneCycleOptions options);
  std::string name() const override { return "OneCycleLR"; }
  int64_t total_steps() const { return total_steps_; }

 protected:
  std::vector<double> get_lr() override;
  struct Phase {
    double end_step;
    const char *start_lr, *end_lr, *start_momentum, *end_momentum;
  };
  double anneal(double start, double end, double pct) const;
  OneCycleOptions o_;
  int64_t total_steps_;
  std::vector<Phase> phases_;
  std::string momentum_key_;  // "momentum" or "beta1"
};

// Runs schedulers one after another: schedulers[i] from milestones[i - 1] on. The schedulers
// must be built on the same optimiser (each construction steps it, as in PyTorch; SequentialLR
// then restores the initial lrs and restarts the first).
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& opt, std::vector<std::shared_ptr<LRScheduler>> schedulers, std::vector<int64_t> milestones);
  void step() override;
  std::string name() const override { return "SequentialLR"; }
  std::string state_dict() const override;
  void load_state_dict(const std::string& state) override;

 protected:
  std::vector<double> get_lr() override { return group_lrs(); }
  void undo_epoch() override;
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

// Reduces the lr by `factor` when a metric has stopped improving for `patience` epochs, then
// waits `cooldown` epochs; lrs never go below min_lr (one value, or one per group) and changes
// smaller than eps are skipped. step(metric) takes the metric (PyTorch's step(metrics)).
struct PlateauOptions {
  std::string mode = "min";  // or "max"
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;
  std::string threshold_mode = "rel";  // or "abs"
  int64_t cooldown = 0;
  std::vector<double> min_lr{0};
  double eps = 1e-8;
};
class ReduceLROnPlateau {
 public:
  ReduceLROnPlateau(Optimizer& opt, PlateauOptions options = {});
  void step(double metric);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  std::string state_dict() const;
  void load_state_dict(const std::string& state);

 private:
  bool is_better(double a, double best) const;
  Optimizer* opt_;
  PlateauOptions o_;
  std::vector<double> min_lrs_, last_lr_;
  double best_;
  int64_t last_epoch_ = 0, cooldown_counter_ = 0, num_bad_epochs_ = 0;
};

}  // namespace tritium::nn

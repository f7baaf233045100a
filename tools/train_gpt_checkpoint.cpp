// train-gpt's resumable checkpoints (tools/train_gpt_checkpoint.h).
#include "tools/train_gpt_checkpoint.h"

#include <cstdlib>

#include <fmt/format.h>

#include "common/error.h"
#include "io/safetensors.h"
#include "ops/rng_state.h"

namespace tritium::train_gpt {

namespace {

constexpr const char* kArchKey = "train-gpt.architecture";
constexpr const char* kTrainingKey = "train-gpt.training";
constexpr const char* kStepKey = "train-gpt.step";
constexpr const char* kLossEmaKey = "train-gpt.loss_ema";
constexpr const char* kDataKey = "train-gpt.data_position";
constexpr const char* kSchedulerKey = "train-gpt.scheduler";
constexpr const char* kOptimizerPrefix = "optimizer.";
constexpr const char* kScalerPrefix = "grad_scaler.";
constexpr const char* kBatchesRng = "rng.batches";
constexpr const char* kDefaultRng = "rng.default";

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The tensors and metadata entries under `prefix`, with it removed.
template <class Map> Map under(const Map& map, const char* prefix) {
  Map out;
  for (const auto& [k, v] : map)
    if (starts_with(k, prefix)) out.emplace(k.substr(std::string(prefix).size()), v);
  return out;
}

void check_architecture(const std::string& path, const io::Safetensors& file, const std::string& architecture,
                        const char* option) {
  auto it = file.metadata.find(kArchKey);
  if (it == file.metadata.end() || it->second != architecture)
    fail("{} {}: a checkpoint of {}, but the options give {}", option, path,
         it == file.metadata.end() ? std::string("another program") : it->second, architecture);
}

const std::string& required(const std::string& path, const io::Safetensors& file, const char* key) {
  auto it = file.metadata.find(key);
  if (it == file.metadata.end())
    fail("--resume {}: not a resumable checkpoint (no '{}'; --load reads the model of any checkpoint)", path, key);
  return it->second;
}

const Tensor& required_tensor(const std::string& path, const io::Safetensors& file, const char* key) {
  auto it = file.tensors.find(key);
  if (it == file.tensors.end())
    fail("--resume {}: not a resumable checkpoint (no tensor '{}'; --load reads the model of any checkpoint)", path,
         key);
  return it->second;
}

double parse_number(const std::string& path, const char* key, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') fail("--resume {}: '{}' is not a number: '{}'", path, key, text);
  return v;
}

// The model's tensors: everything not under the resume state's prefixes.
io::TensorMap model_tensors(const io::Safetensors& file) {
  io::TensorMap out;
  for (const auto& [k, t] : file.tensors)
    if (!starts_with(k, kOptimizerPrefix) && !starts_with(k, kScalerPrefix) && !starts_with(k, "rng.")) out.emplace(k, t);
  return out;
}

}  // namespace

void save_checkpoint(const std::string& path, const RunState& run, const Progress& progress,
                     const std::string& architecture, const std::string& training) {
  io::TensorMap tensors = run.model.state_dict().to_map();
  io::Metadata metadata{{"format", "pt"},
                        {kArchKey, architecture},
                        {kTrainingKey, training},
                        {kStepKey, std::to_string(progress.step)},
                        {kLossEmaKey, fmt::format("{}", progress.loss_ema)},
                        {kDataKey, fmt::format("{},{}", progress.data.epoch, progress.data.batch)}};
  nn::OptimizerState opt = run.optimizer.state_dict();
  for (const auto& [k, t] : opt.tensors) tensors.emplace(kOptimizerPrefix + k, t);
  for (const auto& [k, v] : opt.metadata) metadata.emplace(kOptimizerPrefix + k, v);
  if (run.scheduler) metadata.emplace(kSchedulerKey, run.scheduler->state_dict());
  nn::GradScalerState scaler = run.scaler.state_dict();  // empty when disabled
  for (const auto& [k, t] : scaler.tensors) tensors.emplace(kScalerPrefix + k, t);
  for (const auto& [k, v] : scaler.metadata) metadata.emplace(kScalerPrefix + k, v);
  tensors.emplace(kBatchesRng, ops::get_rng_state(run.batches));
  tensors.emplace(kDefaultRng, ops::get_rng_state(run.dropout));
  io::save_safetensors(path, tensors, metadata);  // a temporary file renamed: never half written
}

Progress resume_checkpoint(const std::string& path, RunState& run, const std::string& architecture,
                           const std::string& training) {
  // Read and check what can be checked before anything changes.
  io::Safetensors file = io::load_safetensors(path, Device::cpu());
  check_architecture(path, file, architecture, "--resume");
  const std::string& saved_training = required(path, file, kTrainingKey);
  if (saved_training != training)
    fail("--resume {}: a run of {}, but the options give {} (resume with the options of the run)", path,
         saved_training, training);
  Progress progress;
  const std::string& step = required(path, file, kStepKey);
  progress.step = static_cast<int64_t>(parse_number(path, kStepKey, step));
  progress.loss_ema = parse_number(path, kLossEmaKey, required(path, file, kLossEmaKey));
  const std::string& data = required(path, file, kDataKey);
  const size_t comma = data.find(',');
  if (comma == std::string::npos) fail("--resume {}: '{}' is not 'epoch,batch': '{}'", path, kDataKey, data);
  progress.data.epoch = static_cast<int64_t>(parse_number(path, kDataKey, data.substr(0, comma)));
  progress.data.batch = static_cast<int64_t>(parse_number(path, kDataKey, data.substr(comma + 1)));
  const Tensor& batches = required_tensor(path, file, kBatchesRng);
  const Tensor& dropout = required_tensor(path, file, kDefaultRng);
  nn::OptimizerState opt{nn::StateDict(under(file.tensors, kOptimizerPrefix)), under(file.metadata, kOptimizerPrefix)};
  if (opt.metadata.empty()) required(path, file, "optimizer.param_groups");
  nn::GradScalerState scaler{nn::StateDict(under(file.tensors, kScalerPrefix)), under(file.metadata, kScalerPrefix)};

  run.model.load_state_dict(nn::StateDict(model_tensors(file)));  // checks every key and shape before copying
  run.optimizer.load_state_dict(opt);
  if (run.scheduler) run.scheduler->load_state_dict(required(path, file, kSchedulerKey));
  if (run.scaler.is_enabled()) run.scaler.load_state_dict(scaler);
  ops::set_rng_state(run.batches, batches);
  ops::set_rng_state(run.dropout, dropout);
  return progress;
}

void load_model(const std::string& path, nn::GPT& model, const std::string& architecture) {
  io::Safetensors file = io::load_safetensors(path, Device::cpu());
  check_architecture(path, file, architecture, "--load");
  model.load_state_dict(nn::StateDict(model_tensors(file)));
}

}  // namespace tritium::train_gpt

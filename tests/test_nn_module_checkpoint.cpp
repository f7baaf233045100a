// state_dict / load_state_dict and safetensors checkpoints (issue 30 items 4 and 5): PyTorch's
// checkpoints (tests/fixtures/torch_modules/, scripts/make_torch_module_fixtures.py) load into the
// same architectures built in Tritium and reproduce PyTorch's outputs, with PyTorch's key names;
// save/load round trips; every bad checkpoint (truncated, corrupt, wrong shape, wrong dtype kind,
// missing or unexpected keys, another model's, another optimiser's) is a clear error that leaves
// the model or optimiser untouched; SGD and AdamW resume bit for bit. With TRITIUM_INTEROP_DIR set,
// the interop case leaves its files there for scripts/check_torch_interop.py.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include "fixtures_dir.h"
#include "io/json.h"
#include "nn/autograd.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "nn/serialize.h"
#include "test_support.h"

namespace tt = tritium::test;
namespace fs = std::filesystem;
using tritium::Tensor;
using namespace tritium;
namespace init = tritium::nn::init;

namespace {

using Names = std::vector<std::string>;

// The models of scripts/make_torch_module_fixtures.py, built the same way.
std::shared_ptr<nn::Sequential> make_mlp(Generator& gen) {
  return std::make_shared<nn::Sequential>(nn::Linear(5, 7, true, gen), nn::ReLU(), nn::Linear(7, 3, true, gen), nn::Tanh());
}

struct Block : nn::Module {
  Block(Generator& gen) {
    proj = register_module("proj", std::make_shared<nn::Linear>(6, 6, true, gen));
    norm = register_module("norm", std::make_shared<nn::LayerNorm>(std::vector<int64_t>{6}));
    act = register_module("act", std::make_shared<nn::GELU>());
    shift = register_buffer("shift", ops::zeros({6}));
    register_buffer("scratch", ops::zeros({6}), /*persistent=*/false);
  }
  std::string type_name() const override { return "Block"; }
  void parameters_moved() override { shift = buffer("shift"); }
  Tensor forward(const Tensor& x) override { return (*act)((*norm)((*proj)(x))) + shift; }
  std::shared_ptr<nn::Linear> proj;
  std::shared_ptr<nn::LayerNorm> norm;
  std::shared_ptr<nn::GELU> act;
  Tensor shift;
};

struct Nested : nn::Module {
  explicit Nested(Generator& gen) {
    scale = register_buffer("scale", ops::full({}, 0.5, DType::f32));
    register_buffer("steps", ops::full({}, 3, DType::i64));
    embed = register_module("embed", std::make_shared<nn::Linear>(4, 6, true, gen));
    blocks = register_module("blocks", std::make_shared<nn::ModuleList>(std::make_shared<Block>(gen), std::make_shared<Block>(gen)));
    head = register_module("head", std::make_shared<nn::Sequential>(std::vector<nn::NamedModule>{
                                       {"fc", std::make_shared<nn::Linear>(6, 2, true, gen)}, {"act", std::make_shared<nn::Sigmoid>()}}));
  }
  std::string type_name() const override { return "Nested"; }
  void parameters_moved() override { scale = buffer("scale"); }
  Tensor forward(const Tensor& x) override {
    Tensor h = (*embed)(x);
    for (const auto& b : *blocks) h = (*b)(h);
    return (*head)(h) * scale;
  }
  Tensor scale;
  std::shared_ptr<nn::Linear> embed;
  std::shared_ptr<nn::ModuleList> blocks;
  std::shared_ptr<nn::Sequential> head;
};

std::shared_ptr<nn::Module> make_model(const std::string& name, Generator& gen) {
  if (name == "mlp") return make_mlp(gen);
  return std::make_shared<Nested>(gen);
}

// A fresh folder for this process's files, removed at the end of the scope.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("tritium-nn-ckpt-" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// Every value of the state dict, as doubles by key: to compare models exactly.
std::vector<std::pair<std::string, std::vector<double>>> snapshot(const nn::Module& m) {
  std::vector<std::pair<std::string, std::vector<double>>> out;
  for (const auto& [name, t] : m.state_dict()) out.emplace_back(name, t.to(DType::f64).to(Device::cpu()).to_vector<double>());
  return out;
}

std::vector<double> values(const Tensor& t) { return t.to(DType::f64).to(Device::cpu()).to_vector<double>(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_module_checkpoint)

BOOST_AUTO_TEST_CASE(pytorch_checkpoints_load_and_reproduce_outputs) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (std::string name : {"mlp", "nested"}) {
      BOOST_TEST_CONTEXT(name) {
        fs::path dir = tt::fixtures_dir() / "torch_modules";
        io::Safetensors io_file = io::load_safetensors((dir / (name + "_io.safetensors")).string(), be.device);
        Names torch_keys;
        io::Json keys = io::parse_json(io_file.metadata.at("keys"), "keys");
        for (const io::Json& k : keys.as_array("keys"))
          torch_keys.push_back(k.as_string("key"));
        Generator gen(1);
        auto model = make_model(name, gen);
        BOOST_TEST(model->state_dict().keys() == torch_keys, boost::test_tools::per_element());
        nn::LoadStateDictResult r = nn::load(*model, (dir / (name + ".safetensors")).string());
        BOOST_TEST(r.missing_keys.empty());
        BOOST_TEST(r.unexpected_keys.empty());
        model->eval();
        Tensor y = (*model)(io_file.tensors.at("input"));
        auto expected = values(io_file.tensors.at("output"));
        auto got = y.to_vector<float>();
        tt::host_vector<float> out(got.begin(), got.end());
        tt::check_close<float>(out, expected, 1e-5, name + " output");
        // Buffers loaded too (the non-persistent one is not in the file and stays zero).
        if (name == "nested") {
          auto& nested = dynamic_cast<Nested&>(*model);
          BOOST_TEST(values(nested.scale)[0] != 0.5);  // drawn by the fixture generator
          BOOST_TEST(nested.state_dict().at("steps").to(Device::cpu()).to_vector<int64_t>()[0] == 3);
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(save_load_round_trip) {
  tt::for_each_backend([&](const tt::Backend&) {
    TempDir tmp;
    Generator g1(1), g2(2);
    Nested a(g1), b(g2);
    init::normal_(a.scale, 0, 1, g1);
    nn::save(a, tmp.file("a.safetensors"), {{"note", "round trip"}});
    io::Safetensors raw = io::load_safetensors(tmp.file("a.safetensors"));
    BOOST_TEST(raw.metadata.at("format") == "pt");
    BOOST_TEST(raw.metadata.at("note") == "round trip");
    BOOST_TEST(!raw.tensors.contains("blocks.0.scratch"));  // not persistent
    BOOST_TEST((raw.tensors.at("steps").dtype() == DType::i64));  // dtypes as stored
    BOOST_TEST((snapshot(a) != snapshot(b)));
    nn::load(b, tmp.file("a.safetensors"));
    BOOST_TEST((snapshot(a) == snapshot(b)));
    // load() of a state dict alone, and save() of one.
    nn::StateDict sd = nn::load(tmp.file("a.safetensors"));
    BOOST_TEST(sd.size() == 16u);
    nn::save(sd, tmp.file("b.safetensors"));
    BOOST_TEST(nn::load(tmp.file("b.safetensors")).keys() == sd.keys(), boost::test_tools::per_element());
    // Floating values convert to the parameter's dtype (PyTorch's copy_): f64 into f32.
    nn::StateDict wide;
    for (const auto& [k, t] : a.state_dict()) wide.insert(k, is_float(t.dtype()) ? t.to(DType::f64) : t);
    Generator g3(3);
    Nested c(g3);
    c.load_state_dict(wide);
    BOOST_TEST((snapshot(c) == snapshot(a)));
  });
}

BOOST_AUTO_TEST_CASE(bad_checkpoints_load_nothing) {
  tt::for_each_backend([&](const tt::Backend&) {
    TempDir tmp;
    Generator g1(1), g2(2);
    auto source = make_mlp(g1);
    auto target = make_mlp(g2);
    const auto before = snapshot(*target);
    std::string good = tmp.file("good.safetensors");
    nn::save(*source, good);
    std::string bytes = read_bytes(good);

    write_bytes(tmp.file("trunc.safetensors"), bytes.substr(0, bytes.size() - 10));
    tt::check_throws([&] { nn::load(*target, tmp.file("trunc.safetensors")); }, {"trunc.safetensors", "truncated"}, "truncated file");
    std::string corrupt = bytes;
    corrupt[12] = '#';  // inside the JSON header
    write_bytes(tmp.file("corrupt.safetensors"), corrupt);
    tt::check_throws([&] { nn::load(*target, tmp.file("corrupt.safetensors")); }, {"corrupt.safetensors"}, "corrupt header");
    tt::check_throws([&] { nn::load(*target, tmp.file("absent.safetensors")); }, {"absent.safetensors", "cannot open"}, "missing file");

    // A wrong shape, on a key after others that would have loaded first.
    nn::StateDict shaped;
    for (const auto& [k, t] : source->state_dict()) shaped.insert(k, k == "2.bias" ? ops::zeros({4}) : t);
    tt::check_throws([&] { target->load_state_dict(shaped); }, {"size mismatch", "\"2.bias\"", "[4]", "[3]", "nothing was loaded"},
                     "wrong shape");
    nn::StateDict typed;
    for (const auto& [k, t] : source->state_dict()) typed.insert(k, k == "0.bias" ? ops::zeros({7}, DType::i32) : t);
    tt::check_throws([&] { target->load_state_dict(typed); }, {"dtype mismatch", "\"0.bias\"", "i32", "f32"}, "wrong dtype kind");
    nn::StateDict missing, extra;
    for (const auto& [k, t] : source->state_dict()) {
      if (k != "2.weight") missing.insert(k, t);
      extra.insert(k, t);
    }
    extra.insert("3.weight", ops::zeros({2}));
    tt::check_throws([&] { target->load_state_dict(missing); }, {"Missing key(s)", "\"2.weight\""}, "missing key");
    tt::check_throws([&] { target->load_state_dict(extra); }, {"Unexpected key(s)", "\"3.weight\""}, "unexpected key");
    // Another model's checkpoint: every mismatching key is named.
    Generator g4(4);
    Nested other(g4);
    std::string other_file = tmp.file("other.safetensors");
    nn::save(other, other_file);
    tt::check_throws([&] { nn::load(*target, other_file); }, {"Missing key(s)", "\"0.weight\"", "Unexpected key(s)", "\"embed.weight\""},
                     "another model's checkpoint");
    BOOST_TEST((snapshot(*target) == before), "a failed load changed the model");

    // Without strict, the keys are reported and the rest loads; a shape mismatch is still an error.
    nn::LoadStateDictResult r = target->load_state_dict(missing, /*strict=*/false);
    BOOST_TEST(r.missing_keys == (Names{"2.weight"}), boost::test_tools::per_element());
    BOOST_TEST((snapshot(*target)[0] == snapshot(*source)[0]));
    r = target->load_state_dict(extra, false);
    BOOST_TEST(r.unexpected_keys == (Names{"3.weight"}), boost::test_tools::per_element());
    tt::check_throws([&] { target->load_state_dict(shaped, false); }, {"size mismatch"}, "shape mismatch without strict");
  });
}

namespace {

// Deterministic training of the MLP on fixed batches; the loss is the mean squared error.
void train_steps(nn::Module& model, nn::Optimizer& opt, int first, int count) {
  for (int s = first; s < first + count; ++s) {
    Generator data(100 + s);
    Tensor x = ops::randn({9, 5}, data), target = ops::randn({9, 3}, data);
    Tensor d = model(x) - target;
    Tensor loss = tritium::mean(d * d);
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
}

template <class MakeOpt>
void check_resume(const std::string& what, MakeOpt make_opt) {
  TempDir tmp;
  const int N = 3, M = 2;
  Generator g(7);
  auto straight = make_mlp(g);
  auto opt_straight = make_opt(*straight);
  train_steps(*straight, *opt_straight, 0, N + M);

  Generator g2(7);
  auto first = make_mlp(g2);
  auto opt_first = make_opt(*first);
  train_steps(*first, *opt_first, 0, N);
  nn::save(*first, tmp.file("model.safetensors"));
  nn::save(*opt_first, tmp.file("optim.safetensors"));

  Generator g3(99);  // another initialisation: everything must come from the files
  auto resumed = make_mlp(g3);
  auto opt_resumed = make_opt(*resumed);
  nn::load(*resumed, tmp.file("model.safetensors"));
  nn::load(*opt_resumed, tmp.file("optim.safetensors"));
  train_steps(*resumed, *opt_resumed, N, M);
  BOOST_TEST((snapshot(*resumed) == snapshot(*straight)), what << ": resumed training differs from uninterrupted training");
}

}  // namespace

BOOST_AUTO_TEST_CASE(optimizers_resume_bit_for_bit) {
  tt::for_each_backend([&](const tt::Backend&) {
    check_resume("SGD", [](nn::Module& m) { return std::make_unique<nn::SGD>(m.parameters(), 0.05, 0.9, 1e-3, 0.0, true); });
    check_resume("AdamW", [](nn::Module& m) { return std::make_unique<nn::AdamW>(m.parameters(), 1e-2); });
    check_resume("Adam amsgrad", [](nn::Module& m) {
      return std::make_unique<nn::Adam>(m.parameters(), 1e-2, std::pair{0.9, 0.99}, 1e-8, 1e-3, true);
    });
    check_resume("RMSprop centered momentum", [](nn::Module& m) {
      return std::make_unique<nn::RMSprop>(m.parameters(), 1e-2, 0.9, 1e-8, 1e-3, 0.5, true);
    });
    check_resume("Adagrad", [](nn::Module& m) { return std::make_unique<nn::Adagrad>(m.parameters(), 5e-2, 0.1, 0, 0.1); });
    // The hyperparameters come back too, as PyTorch's load_state_dict restores param_groups.
    Generator g(1);
    auto m = make_mlp(g);
    nn::AdamW a(m->parameters(), 3e-4, {0.8, 0.95}, 1e-6, 0.1), b(m->parameters());
    b.load_state_dict(a.state_dict());
    BOOST_TEST(b.param_groups()[0].option("lr") == 3e-4);
    BOOST_TEST(b.param_groups()[0].option("beta2") == 0.95);
    BOOST_TEST(b.param_groups()[0].option("eps") == 1e-6);
    BOOST_TEST(b.param_groups()[0].option("weight_decay") == 0.1);
    nn::OptimizerState st = a.state_dict();
    BOOST_TEST(st.metadata.at("optimizer") == "AdamW");
    BOOST_TEST(st.tensors.empty());  // no step yet: no state, as PyTorch
  });
}

BOOST_AUTO_TEST_CASE(bad_optimizer_states_load_nothing) {
  tt::for_each_backend([&](const tt::Backend&) {
    TempDir tmp;
    Generator g(1);
    auto m = make_mlp(g);
    nn::AdamW adam(m->parameters(), 1e-2);
    train_steps(*m, adam, 0, 2);
    nn::save(adam, tmp.file("adam.safetensors"));
    nn::SGD sgd(m->parameters(), 0.1, 0.9);
    tt::check_throws([&] { nn::load(sgd, tmp.file("adam.safetensors")); }, {"SGD", "of a AdamW optimizer"}, "another optimizer class");
    Generator g2(2);
    Nested other_model(g2);
    nn::AdamW other(other_model.parameters());
    tt::check_throws([&] { nn::load(other, tmp.file("adam.safetensors")); }, {"4 parameters", "this optimizer has 12"}, "another model");
    // Same count, other shapes: swap two parameters' order.
    auto params = m->parameters();
    std::swap(params[0], params[1]);
    nn::AdamW swapped(params);
    tt::check_throws([&] { nn::load(swapped, tmp.file("adam.safetensors")); }, {"state.0.", "shape [7, 5]", "parameter 0 has shape [7]"},
                     "state of another shape");
    BOOST_TEST(swapped.step_count(0) == 0);
    // Hand-made bad states.
    nn::OptimizerState st = adam.state_dict();
    nn::OptimizerState extra = st;
    extra.tensors.insert("state.0.momentum", ops::zeros({7, 5}));
    nn::AdamW fresh(m->parameters());
    tt::check_throws([&] { fresh.load_state_dict(extra); }, {"unexpected key \"state.0.momentum\"", "step, exp_avg, exp_avg_sq"}, "unknown state");
    nn::OptimizerState partial;
    partial.metadata = st.metadata;
    for (const auto& [k, t] : st.tensors)
      if (k != "state.1.exp_avg_sq") partial.tensors.insert(k, t);
    tt::check_throws([&] { fresh.load_state_dict(partial); }, {"parameter 1", "incomplete"}, "incomplete state");
    nn::OptimizerState bad_step;
    bad_step.metadata = st.metadata;
    for (const auto& [k, t] : st.tensors) bad_step.tensors.insert(k, k == "state.2.step" ? ops::full({}, 1.5, DType::f32) : t);
    tt::check_throws([&] { fresh.load_state_dict(bad_step); }, {"state.2.step", "1.5", "positive integer"}, "fractional step");
    BOOST_TEST(fresh.step_count(0) == 0, "a failed load changed the optimizer");
    BOOST_TEST(!fresh.exp_avg(0).defined());
    // A model file is not an optimizer state.
    nn::save(*m, tmp.file("model.safetensors"));
    tt::check_throws([&] { nn::load(fresh, tmp.file("model.safetensors")); }, {"no \"optimizer\" entry"}, "model file as optimizer state");
  });
}

// Tritium writes each fixture architecture with its own initialisation plus its input and output;
// scripts/check_torch_interop.py loads them with safetensors.torch.load_file into the PyTorch
// models and compares. Here: the files exist and read back.
BOOST_AUTO_TEST_CASE(write_checkpoints_for_pytorch, *tt::needs_cpu_backend()) {  // files from CPU-initialised models
  TempDir tmp;
  const char* env = std::getenv("TRITIUM_INTEROP_DIR");
  fs::path dir = env && *env ? fs::path(env) : tmp.path;
  fs::create_directories(dir);
  for (std::string name : {"mlp", "nested"}) {
    Generator gen(5);
    auto model = make_model(name, gen);
    model->eval();
    for (const auto& [k, t] : model->named_buffers())
      if (is_float(t.dtype())) {
        Tensor b = t;
        init::normal_(b, 0, 1, gen);
      }
    Tensor x = ops::randn(name == "mlp" ? ops::Shape{4, 5} : ops::Shape{3, 4}, gen);
    Tensor y = (*model)(x);
    nn::save(*model, (dir / ("tritium_" + name + ".safetensors")).string());
    io::save_safetensors((dir / ("tritium_" + name + "_io.safetensors")).string(), {{"input", x}, {"output", y.detach()}});
    BOOST_TEST(nn::load((dir / ("tritium_" + name + ".safetensors")).string()).size() == model->state_dict().size());
  }
}

BOOST_AUTO_TEST_SUITE_END()

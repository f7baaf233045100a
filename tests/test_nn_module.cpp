// The Module API (issue 30 item 2): buffers, the named_* walks, apply, parameter counts,
// requires_grad_, to(device) / to(dtype), str() against PyTorch's repr of the same models
// (the expected texts were printed by PyTorch 2.15), modules of several inputs or outputs, and
// the containers Sequential (named), ModuleList and ModuleDict. Runs on every backend.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "nn/autograd.h"
#include "nn/functional.h"
#include "nn/module.h"
#include "test_support.h"

namespace tt = tritium::test;
using tritium::Tensor;
using namespace tritium;

namespace {

using Names = std::vector<std::string>;

template <class Pairs> Names names_of(const Pairs& pairs) {
  Names out;
  for (const auto& [name, x] : pairs) out.push_back(name);
  return out;
}

Tensor f32(const std::vector<float>& v, Tensor::Shape shape) { return Tensor::from_vector(v, std::move(shape)); }

// A module with a parameter, a persistent and a non-persistent buffer, an integer buffer and a child.
struct WithBuffers : nn::Module {
  WithBuffers() {
    scale = register_parameter("scale", ops::ones({3}));
    running = register_buffer("running", ops::zeros({3}));
    count = register_buffer("count", ops::zeros({}, DType::i64));
    scratch = register_buffer("scratch", ops::ones({2}), /*persistent=*/false);
    lin = register_module("lin", std::make_shared<nn::Linear>(3, 2));
  }
  std::string type_name() const override { return "WithBuffers"; }
  void parameters_moved() override {
    scale = parameter("scale"), running = buffer("running"), count = buffer("count"), scratch = buffer("scratch");
  }
  Tensor scale, running, count, scratch;
  std::shared_ptr<nn::Linear> lin;
};

// Two inputs, one output: a * w + b (w a parameter).
struct ScaleAdd : nn::Module {
  ScaleAdd() { w = register_parameter("w", f32({2.0f, -3.0f, 0.5f}, {3})); }
  std::vector<Tensor> forward_many(const std::vector<Tensor>& in) override {
    if (in.size() != 2) fail("ScaleAdd: takes 2 inputs, got {}", in.size());
    return {in[0] * w + in[1]};
  }
  std::string type_name() const override { return "ScaleAdd"; }
  Tensor w;
};

// One input, two outputs: (x + 1, x * x).
struct PlusAndSquare : nn::Module {
  std::vector<Tensor> forward_many(const std::vector<Tensor>& in) override {
    if (in.size() != 1) fail("PlusAndSquare: takes 1 input, got {}", in.size());
    return {in[0] + 1.0, in[0] * in[0]};
  }
  std::string type_name() const override { return "PlusAndSquare"; }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(test_nn_module)

BOOST_AUTO_TEST_CASE(buffers_walks_and_state_dict_keys) {
  tt::for_each_backend([&](const tt::Backend& be) {
    WithBuffers m;
    BOOST_TEST(names_of(m.named_parameters()) == (Names{"scale", "lin.weight", "lin.bias"}), boost::test_tools::per_element());
    BOOST_TEST(names_of(m.named_buffers()) == (Names{"running", "count", "scratch"}), boost::test_tools::per_element());
    BOOST_TEST(m.buffers().size() == 3u);
    BOOST_TEST(m.named_parameters(/*recurse=*/false).size() == 1u);
    // PyTorch's order: own parameters, own persistent buffers, then the children's.
    BOOST_TEST(m.state_dict().keys() == (Names{"scale", "running", "count", "lin.weight", "lin.bias"}),
               boost::test_tools::per_element());
    for (auto& [name, b] : m.named_buffers()) {
      BOOST_TEST(!b.requires_grad(), name);
      BOOST_TEST((b.device() == be.device), name);
    }
    BOOST_TEST(m.scale.requires_grad());
    // State dict entries share storage with the module (PyTorch's detached views).
    BOOST_TEST(m.state_dict().at("running").raw_data() == m.running.raw_data());
    BOOST_TEST(!m.state_dict().at("scale").requires_grad());

    tt::check_throws([&] { m.register_buffer("scale", ops::zeros({1})); }, {"scale", "already a parameter"}, "buffer over parameter");
    tt::check_throws([&] { m.register_parameter("running", ops::zeros({1})); }, {"running", "already a buffer"}, "parameter over buffer");
    tt::check_throws([&] { m.register_buffer("", ops::zeros({1})); }, {"empty"}, "empty buffer name");
    tt::check_throws([&] { m.register_buffer("x.y", ops::zeros({1})); }, {"x.y", "'.'"}, "dotted buffer name");
    tt::check_throws([&] { m.register_buffer("u", Tensor()); }, {"u", "undefined"}, "undefined buffer");
    Tensor needs_grad = ops::zeros({1});
    needs_grad.requires_grad_(true);
    tt::check_throws([&] { m.register_buffer("g", needs_grad); }, {"\"g\"", "requires grad"}, "buffer requiring grad");
    tt::check_throws([&] { m.register_parameter("i", ops::zeros({1}, DType::i32)); }, {"\"i\"", "i32", "floating"},
                     "integer parameter requiring grad");
    Tensor frozen = m.register_parameter("frozen", ops::zeros({2}), /*requires_grad=*/false);
    BOOST_TEST(!frozen.requires_grad());
  });
}

BOOST_AUTO_TEST_CASE(named_modules_apply_and_counts) {
  tt::for_each_backend([&](const tt::Backend&) {
    auto shared = std::make_shared<nn::Linear>(4, 4);
    nn::Sequential inner(std::vector<nn::NamedModule>{{"fc", shared}, {"act", std::make_shared<nn::Tanh>()}});
    nn::Sequential model(nn::Linear(3, 4), std::make_shared<nn::Sequential>(std::move(inner)), shared);
    // Root "", dotted names, pre-order, the shared Linear once (under its first name).
    BOOST_TEST(names_of(model.named_modules()) == (Names{"", "0", "1", "1.fc", "1.act"}), boost::test_tools::per_element());
    BOOST_TEST(model.modules().size() == 5u);
    BOOST_TEST(model.named_modules()[0].second == &model);
    // apply: children before their parent (PyTorch's order), every registration visited.
    std::vector<std::string> order;
    model.apply([&](nn::Module& m) { order.push_back(m.type_name()); });
    BOOST_TEST(order == (Names{"Linear", "Linear", "Tanh", "Sequential", "Linear", "Sequential"}), boost::test_tools::per_element());
    // 3*4+4 + 4*4+4: the shared Linear's parameters are listed once (PyTorch's remove_duplicate),
    // though state_dict() has them under both names, as PyTorch's.
    BOOST_TEST(names_of(model.named_parameters()) == (Names{"0.weight", "0.bias", "1.fc.weight", "1.fc.bias"}),
               boost::test_tools::per_element());
    BOOST_TEST(model.state_dict().size() == 6u);
    BOOST_TEST(model.num_parameters() == 16 + 20);
    dynamic_cast<nn::Linear&>(model[0]).requires_grad_(false);
    BOOST_TEST(model.num_parameters(/*trainable_only=*/true) == 20);
    BOOST_TEST(!dynamic_cast<nn::Linear&>(model[0]).weight.requires_grad());
    model.requires_grad_(true);
    BOOST_TEST(model.num_parameters(true) == 36);
    // train/eval reach every module.
    model.eval();
    for (nn::Module* m : model.modules()) BOOST_TEST(!m->is_training());
  });
}

// replace_module (public, as libtorch's): the child under that name changes, its place in the
// walks and its state_dict keys stay; an absent name or a null module is a clear error.
BOOST_AUTO_TEST_CASE(replace_module_swaps_a_child_in_place) {
  tt::for_each_backend([&](const tt::Backend&) {  // building the modules runs their initialisers
    nn::Sequential model(nn::Linear(3, 4), std::make_shared<nn::Tanh>(), nn::Linear(4, 2));
    auto no_bias = std::make_shared<nn::Linear>(4, 2, /*bias=*/false);
    model.replace_module("2", no_bias);
    BOOST_TEST(names_of(model.named_children()) == (Names{"0", "1", "2"}), boost::test_tools::per_element());
    BOOST_TEST(model.named_children()[2].second.get() == no_bias.get());
    BOOST_TEST(names_of(model.named_parameters()) == (Names{"0.weight", "0.bias", "2.weight"}),
               boost::test_tools::per_element());
    tt::check_throws([&] { model.replace_module("3", no_bias); }, {"no child module named \"3\""});
    tt::check_throws([&] { model.replace_module("1", nullptr); }, {"\"1\" is a null module"});
  });
}

BOOST_AUTO_TEST_CASE(repr_matches_pytorch) {
  tt::for_each_backend([&](const tt::Backend&) {  // building the modules runs their initialisers
    nn::Sequential m(nn::Linear(3, 4), nn::ReLU(), nn::Sequential(nn::Linear(4, 4), nn::Tanh()), nn::LayerNorm({4}),
                     nn::Dropout(0.1));
    BOOST_TEST(m.str() ==
               "Sequential(\n"
               "  (0): Linear(in_features=3, out_features=4, bias=True)\n"
               "  (1): ReLU()\n"
               "  (2): Sequential(\n"
               "    (0): Linear(in_features=4, out_features=4, bias=True)\n"
               "    (1): Tanh()\n"
               "  )\n"
               "  (3): LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)\n"
               "  (4): Dropout(p=0.1, inplace=False)\n"
               ")");
    nn::ModuleList list(nn::Linear(2, 2), nn::Linear(2, 2), nn::Linear(2, 2), nn::ReLU());
    BOOST_TEST(list.str() ==
               "ModuleList(\n"
               "  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n"
               "  (3): ReLU()\n"
               ")");
    BOOST_TEST(nn::ModuleList().str() == "ModuleList()");
    nn::ModuleDict dict({{"a", std::make_shared<nn::Linear>(1, 2)}, {"b", std::make_shared<nn::GELU>("tanh")}});
    BOOST_TEST(dict.str() ==
               "ModuleDict(\n"
               "  (a): Linear(in_features=1, out_features=2, bias=True)\n"
               "  (b): GELU(approximate='tanh')\n"
               ")");
    std::vector<std::pair<std::shared_ptr<nn::Module>, std::string>> cases = {
        {std::make_shared<nn::GELU>(), "GELU(approximate='none')"},
        {std::make_shared<nn::SiLU>(), "SiLU()"},
        {std::make_shared<nn::Sigmoid>(), "Sigmoid()"},
        {std::make_shared<nn::LeakyReLU>(), "LeakyReLU(negative_slope=0.01)"},
        {std::make_shared<nn::LeakyReLU>(0.2), "LeakyReLU(negative_slope=0.2)"},
        {std::make_shared<nn::ELU>(), "ELU(alpha=1.0)"},
        {std::make_shared<nn::ELU>(2.0), "ELU(alpha=2.0)"},
        {std::make_shared<nn::CELU>(0.5), "CELU(alpha=0.5)"},
        {std::make_shared<nn::Softplus>(), "Softplus(beta=1.0, threshold=20.0)"},
        {std::make_shared<nn::Mish>(), "Mish()"},
        {std::make_shared<nn::Hardswish>(), "Hardswish()"},
        {std::make_shared<nn::Hardsigmoid>(), "Hardsigmoid()"},
        {std::make_shared<nn::Hardtanh>(), "Hardtanh(min_val=-1.0, max_val=1.0)"},
        {std::make_shared<nn::Softsign>(), "Softsign()"},
        {std::make_shared<nn::Tanhshrink>(), "Tanhshrink()"},
        {std::make_shared<nn::SELU>(), "SELU()"},
        {std::make_shared<nn::ReLU6>(), "ReLU6()"},
        {std::make_shared<nn::Softmax>(1), "Softmax(dim=1)"},
        {std::make_shared<nn::LogSoftmax>(-1), "LogSoftmax(dim=-1)"},
        {std::make_shared<nn::Dropout2d>(), "Dropout2d(p=0.5, inplace=False)"},
        {std::make_shared<nn::Identity>(), "Identity()"},
        {std::make_shared<nn::Flatten>(), "Flatten(start_dim=1, end_dim=-1)"},
        {std::make_shared<nn::Unflatten>(1, std::vector<int64_t>{2, 3}), "Unflatten(dim=1, unflattened_size=(2, 3))"},
        {std::make_shared<nn::Linear>(2, 3, false), "Linear(in_features=2, out_features=3, bias=False)"},
    };
    for (auto& [m, expected] : cases) BOOST_TEST(m->str() == expected);
    BOOST_TEST(nn::python_float(1e-5) == "1e-05");
    BOOST_TEST(nn::python_float(3.0) == "3.0");
    BOOST_TEST(nn::python_float(-0.25) == "-0.25");
  });
}

BOOST_AUTO_TEST_CASE(to_device_and_dtype) {
  tt::for_each_backend([&](const tt::Backend& be) {
    WithBuffers m;
    m.to(DType::bf16);
    for (auto& [name, p] : m.named_parameters()) {
      BOOST_TEST((p.dtype() == DType::bf16), name);
      BOOST_TEST(p.requires_grad(), name);
      BOOST_TEST(p.is_leaf(), name);
    }
    BOOST_TEST((m.running.dtype() == DType::bf16));  // members refreshed by parameters_moved
    BOOST_TEST((m.count.dtype() == DType::i64));     // integer buffers keep their dtype
    BOOST_TEST((m.lin->weight.dtype() == DType::bf16));
    m.to(DType::f64);
    BOOST_TEST((m.lin->bias.dtype() == DType::f64));
    m.to(DType::f32);
    // Values survive f32 -> f64 -> f32 exactly (bf16 values are exact in both).
    BOOST_TEST(m.scale.to_vector<float>() == (std::vector<float>{1, 1, 1}), boost::test_tools::per_element());
    tt::check_throws([&] { m.to(DType::i32); }, {"floating", "i32"}, "to(integer dtype)");
    // to(device): parameters and buffers move; to the device they are on is a no-op.
    Tensor before = m.lin->weight;
    m.to(be.device);
    BOOST_TEST(m.lin->weight.raw_data() == before.raw_data());
    m.to(Device::cpu());
    for (auto& [name, b] : m.named_buffers()) BOOST_TEST(b.device().is_cpu(), name);
    for (auto& [name, p] : m.named_parameters()) BOOST_TEST((p.device().is_cpu() && p.requires_grad()), name);
    m.to(be.device);
    BOOST_TEST((m.count.device() == be.device));
  });
}

BOOST_AUTO_TEST_CASE(zero_grad_and_requires_grad) {
  tt::for_each_backend([&](const tt::Backend&) {
    Generator gen(3);
    nn::Sequential model(nn::Linear(5, 3, true, gen), nn::Tanh());
    Tensor x = ops::randn({4, 5}, gen);
    tritium::sum(model(x)).backward();
    for (auto& [name, p] : model.named_parameters()) BOOST_TEST(p.grad().defined(), name);
    model.zero_grad();
    for (auto& [name, p] : model.named_parameters()) BOOST_TEST(!p.grad().defined(), name);
    model.requires_grad_(false);
    BOOST_TEST(model.num_parameters(true) == 0);
    BOOST_TEST(!model(x).requires_grad());
  });
}

BOOST_AUTO_TEST_CASE(several_inputs_and_outputs) {
  tt::for_each_backend([&](const tt::Backend&) {
    // x -> (x + 1, x^2) -> (x + 1) * w + x^2, through a Sequential.
    nn::Sequential model{PlusAndSquare{}, ScaleAdd{}};
    std::vector<float> xv{0.5f, -1.25f, 2.0f};
    Tensor x = f32(xv, {3});
    Tensor y = model(x);
    std::vector<float> w{2.0f, -3.0f, 0.5f};
    std::vector<float> got = y.to_vector<float>();
    for (size_t i = 0; i < 3; ++i) BOOST_TEST(got[i] == (xv[i] + 1) * w[i] + xv[i] * xv[i]);
    // Gradients reach the two-input module's parameter: d/dw = x + 1.
    tritium::sum(y).backward();
    auto& sa = dynamic_cast<ScaleAdd&>(model[1]);
    std::vector<float> g = sa.w.grad().to_vector<float>();
    for (size_t i = 0; i < 3; ++i) BOOST_TEST(g[i] == xv[i] + 1);
    // Direct calls: m(a, b) and forward_many.
    ScaleAdd two;
    BOOST_TEST(two(x, x)[0].to_vector<float>()[2] == 2.0f * 0.5f + 2.0f);
    BOOST_TEST(PlusAndSquare().forward_many({x}).size() == 2u);
    // Mismatches are errors naming the module.
    nn::Sequential splits{PlusAndSquare{}};
    tt::check_throws([&] { splits(x); }, {"Sequential::forward", "2 outputs", "forward_many"}, "two outputs to forward");
    tt::check_throws([&] { nn::Tanh()(x, x); }, {"Tanh", "takes 1 input", "got 2"}, "two inputs to a one-input module");
    tt::check_throws([&] { nn::Sequential{ScaleAdd{}}(x); }, {"ScaleAdd", "2 inputs"}, "one input to a two-input module");
    BOOST_TEST(nn::Identity().forward_many({x, x, x}).size() == 3u);
  });
}

BOOST_AUTO_TEST_CASE(named_sequential_and_indexing) {
  tt::for_each_backend([&](const tt::Backend&) {
    nn::Sequential model(std::vector<nn::NamedModule>{{"fc1", std::make_shared<nn::Linear>(4, 3)},
                                                      {"act", std::make_shared<nn::ReLU>()},
                                                      {"fc2", std::make_shared<nn::Linear>(3, 2)}});
    BOOST_TEST(model.state_dict().keys() == (Names{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}),
               boost::test_tools::per_element());
    BOOST_TEST(model[-1].str() == "Linear(in_features=3, out_features=2, bias=True)");
    BOOST_TEST(model.at<nn::Linear>(0).in_features == 4);
    BOOST_TEST(model.str().find("(fc1): Linear(in_features=4") != std::string::npos);
    tt::check_throws([&] { (void)model[3]; }, {"index 3", "3 modules"}, "index past the end");
    tt::check_throws([&] { (void)model[-4]; }, {"index -4"}, "negative index past the start");
    tt::check_throws([&] { (void)model.at<nn::Linear>(1); }, {"ReLU", "not the type"}, "at<> of another type");
    tt::check_throws([&] { model.push_back("act", std::make_shared<nn::Tanh>()); }, {"act", "already"}, "duplicate name");
    model.push_back(std::make_shared<nn::Tanh>());
    BOOST_TEST(model.named_children().back().first == "3");
    BOOST_TEST((model(ops::randn({5, 4})).shape() == Tensor::Shape{5, 2}));
  });
}

BOOST_AUTO_TEST_CASE(module_list) {
  tt::for_each_backend([&](const tt::Backend&) {
    nn::ModuleList list;
    BOOST_TEST(list.empty());
    list.push_back(std::make_shared<nn::Linear>(2, 3));
    list.extend({std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(3, 1)});
    list.insert(1, std::make_shared<nn::Tanh>());  // children renumbered as PyTorch's insert
    Names types;
    for (const auto& m : list) types.push_back(m->type_name());
    BOOST_TEST(types == (Names{"Linear", "Tanh", "ReLU", "Linear"}), boost::test_tools::per_element());
    BOOST_TEST(names_of(list.named_children()) == (Names{"0", "1", "2", "3"}), boost::test_tools::per_element());
    BOOST_TEST(list.state_dict().keys() == (Names{"0.weight", "0.bias", "3.weight", "3.bias"}), boost::test_tools::per_element());
    list.insert(-1, std::make_shared<nn::SiLU>());  // before the last, as Python's list.insert
    BOOST_TEST(list[3].type_name() == "SiLU");
    BOOST_TEST(list[-1].type_name() == "Linear");
    nn::ModuleList other{nn::Sigmoid{}};
    list.extend(other);
    BOOST_TEST(list.size() == 6u);
    tt::check_throws([&] { (void)list[6]; }, {"ModuleList", "index 6", "6 modules"}, "index out of range");
    tt::check_throws([&] { list.push_back(nullptr); }, {"null"}, "null module");
    tt::check_throws([&] { list(ops::zeros({1})); }, {"ModuleList", "no forward"}, "ModuleList has no forward");
  });
}

BOOST_AUTO_TEST_CASE(module_dict) {
  tt::for_each_backend([&](const tt::Backend&) {
    nn::ModuleDict dict({{"enc", std::make_shared<nn::Linear>(2, 2)}, {"act", std::make_shared<nn::ReLU>()}});
    BOOST_TEST(dict.contains("enc"));
    BOOST_TEST(!dict.contains("dec"));
    dict.insert("dec", std::make_shared<nn::Linear>(2, 1));
    dict.insert("act", std::make_shared<nn::GELU>());  // replaced in place, keeping its position
    BOOST_TEST(dict.keys() == (Names{"enc", "act", "dec"}), boost::test_tools::per_element());
    BOOST_TEST(dict["act"].type_name() == "GELU");
    BOOST_TEST(dict.items().size() == 3u);
    BOOST_TEST(dict.values().size() == 3u);
    BOOST_TEST(dict.state_dict().keys() == (Names{"enc.weight", "enc.bias", "dec.weight", "dec.bias"}),
               boost::test_tools::per_element());
    tt::check_throws([&] { (void)dict["nope"]; }, {"ModuleDict", "nope", "enc, act, dec"}, "missing key");
    tt::check_throws([&] { dict.insert("a.b", std::make_shared<nn::ReLU>()); }, {"a.b", "'.'"}, "dotted key");
  });
}

BOOST_AUTO_TEST_SUITE_END()

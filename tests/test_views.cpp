// runtime/views.h: view metadata (shape, strides, offset), storage sharing, PyTorch's rules and
// error messages.
#include "test_support.h"

#include "ops/ops.h"
#include "runtime/views.h"

namespace tt = tritium::test;
using tritium::DType;
using tritium::Tensor;
using namespace tritium::runtime;

namespace {

// A contiguous f32 tensor holding 0, 1, 2, ... on the default device (views never copy).
Tensor iota(Shape shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  return Tensor::from_vector(v, shape);
}

// The elements in row-major order, copied to the host (from any device).
std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_views)

BOOST_AUTO_TEST_CASE(view_contiguous_and_inference) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x = iota({2, 3, 4});
    Tensor v = view_of(x, {6, 4});
    BOOST_TEST(v.shape() == (Shape{6, 4}));
    BOOST_TEST(v.strides() == (Shape{4, 1}));
    BOOST_TEST(v.storage() == x.storage());  // shares storage
    BOOST_TEST(v.raw_data() == x.raw_data());
    BOOST_TEST((v.device() == be.device));  // a view stays on its base's device
    Tensor w = view_of(x, {-1, 3, 2});
    BOOST_TEST(w.shape() == (Shape{4, 3, 2}));
    BOOST_TEST(w.strides() == (Shape{6, 2, 1}));
    BOOST_TEST(view_of(x, {24}).shape() == (Shape{24}));
    BOOST_TEST(view_of(iota({1}), {}).dim() == 0);  // one element -> 0-dim
    BOOST_TEST(infer_shape({-1, 4}, 12) == (Shape{3, 4}));
    tt::check_throws([&] { view_of(x, {-1, -1}); }, {"only one dimension can be inferred"}, "two -1");
    tt::check_throws([&] { view_of(x, {5, -1}); }, {"shape '[5, -1]'", "invalid for input of size 24"}, "bad -1");
    tt::check_throws([&] { view_of(x, {5, 5}); }, {"invalid for input of size 24"}, "wrong numel");
    tt::check_throws([&] { view_of(x, {-2, 12}); }, {"invalid shape dimension -2"}, "negative size");
    tt::check_throws([&] { infer_shape({0, -1}, 0); }, {"ambiguous"}, "0 and -1");
    // Writes through a view are visible in the base tensor (written by a kernel, not through a host
    // pointer, so that it works on every device): v[1][1] is element 5 of x.
    Tensor e = select_of(select_of(v, 0, 1), 0, 1);
    BOOST_TEST(e.raw_data() == static_cast<void*>(static_cast<char*>(x.raw_data()) + 5 * sizeof(float)));
    tritium::ops::fill_(e, -1.0);
    std::vector<float> expected = values(iota({2, 3, 4}));
    expected[5] = -1.0f;
    BOOST_TEST(values(x) == expected);
  });
}

BOOST_AUTO_TEST_CASE(view_of_transposed_follows_pytorch) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = iota({4, 6});
    Tensor t = transpose_of(x, 0, 1);  // [6, 4], strides [1, 6]
    BOOST_TEST(t.shape() == (Shape{6, 4}));
    BOOST_TEST(t.strides() == (Shape{1, 6}));
    BOOST_TEST(!t.is_contiguous());
    // Flattening a transposed tensor spans two contiguous subspaces: PyTorch's error.
    BOOST_TEST(!can_view(t, {24}));
    std::string msg = tt::check_throws([&] { view_of(t, {24}); },
                                       {"view size is not compatible with input tensor's size and stride (at least one "
                                        "dimension spans across two contiguous subspaces). Use .reshape(...) instead."},
                                       "flatten transposed");
    BOOST_TEST(msg.find("[6, 4]") != std::string::npos, msg);
    // Splitting or adding unit dims inside one contiguous run is a valid view of the transposed tensor.
    BOOST_TEST(can_view(t, {2, 3, 4}));
    Tensor s = view_of(t, {2, 3, 4});  // dim 0 (stride 1) split into 2 x 3
    BOOST_TEST(s.strides() == (Shape{3, 1, 6}));
    BOOST_TEST(values(s) == values(t));  // same logical order
    Tensor u = view_of(t, {6, 1, 4});
    BOOST_TEST(u.strides() == (Shape{1, 24, 6}));
    BOOST_TEST(values(u) == values(t));
    // A slice with a step keeps a contiguous run only where the step allows it.
    Tensor sl = slice_of(iota({4, 6}), 1, 0, 6, 2);  // [4, 3], strides [6, 2]: one run of stride 2
    BOOST_TEST(can_view(sl, {12}));
    BOOST_TEST(view_of(sl, {12}).strides() == (Shape{2}));
    Tensor sl2 = slice_of(iota({4, 6}), 1, 0, 4, 2);  // [4, 2], strides [6, 2]: two runs
    BOOST_TEST(!can_view(sl2, {8}));
    BOOST_TEST(can_view(sl2, {4, 2, 1}));
    // A PyTorch case: [2, 3, 4] permuted to [2, 4, 3]; merging the first two dims fails, the
    // first one is contiguous with nothing else.
    Tensor p = permute_of(iota({2, 3, 4}), {0, 2, 1});
    BOOST_TEST(!can_view(p, {8, 3}));
    BOOST_TEST(can_view(p, {2, 4, 3}));
    // Expanded (stride-0) dims can be split but not merged with others.
    Tensor e = expand_of(iota({1, 4}), {3, 4});
    BOOST_TEST(can_view(e, {3, 2, 2}));
    BOOST_TEST(!can_view(e, {12}));
  });
}

BOOST_AUTO_TEST_CASE(permute_transpose_t) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = iota({2, 3, 4});
    Tensor p = permute_of(x, {2, 0, 1});
    BOOST_TEST(p.shape() == (Shape{4, 2, 3}));
    BOOST_TEST(p.strides() == (Shape{1, 12, 4}));
    BOOST_TEST(p.storage() == x.storage());
    auto pv = values(p);
    auto xv = values(x);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 2; ++j)
        for (int k = 0; k < 3; ++k) BOOST_TEST(pv[(i * 2 + j) * 3 + k] == xv[(j * 3 + k) * 4 + i]);
    BOOST_TEST(permute_of(x, {-1, 0, 1}).shape() == (Shape{4, 2, 3}));
    tt::check_throws([&] { permute_of(x, {0, 1}); }, {"permute", "3 dimensions", "2 dims"}, "wrong count");
    tt::check_throws([&] { permute_of(x, {0, 1, 1}); }, {"duplicate dims"}, "duplicate");
    tt::check_throws([&] { permute_of(x, {0, 1, 3}); }, {"out of range", "[-3, 2]"}, "out of range");
    Tensor tr = transpose_of(x, -1, 0);
    BOOST_TEST(tr.shape() == (Shape{4, 3, 2}));
    BOOST_TEST(tr.strides() == (Shape{1, 4, 12}));
    Tensor m = iota({3, 5});
    BOOST_TEST(t_of(m).shape() == (Shape{5, 3}));
    BOOST_TEST(t_of(m).strides() == (Shape{1, 5}));
    BOOST_TEST(t_of(iota({5})).shape() == (Shape{5}));
    tt::check_throws([&] { t_of(x); }, {"t() expects a tensor with <= 2 dimensions"}, "t of 3-D");
  });
}

BOOST_AUTO_TEST_CASE(squeeze_unsqueeze) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = iota({1, 3, 1, 2});
    BOOST_TEST(squeeze_of(x).shape() == (Shape{3, 2}));
    BOOST_TEST(squeeze_of(x).strides() == (Shape{2, 1}));
    BOOST_TEST(squeeze_of(x, 2).shape() == (Shape{1, 3, 2}));
    BOOST_TEST(squeeze_of(x, 1).shape() == (Shape{1, 3, 1, 2}));  // not size 1: unchanged
    BOOST_TEST(squeeze_of(x, -4).shape() == (Shape{3, 1, 2}));
    BOOST_TEST(squeeze_of(x).storage() == x.storage());
    tt::check_throws([&] { squeeze_of(x, 4); }, {"squeeze", "out of range"}, "squeeze dim");
    Tensor y = iota({3, 2});
    BOOST_TEST(unsqueeze_of(y, 0).shape() == (Shape{1, 3, 2}));
    BOOST_TEST(unsqueeze_of(y, 1).shape() == (Shape{3, 1, 2}));
    BOOST_TEST(unsqueeze_of(y, 1).strides() == (Shape{2, 2, 1}));
    BOOST_TEST(unsqueeze_of(y, 2).shape() == (Shape{3, 2, 1}));
    BOOST_TEST(unsqueeze_of(y, -1).shape() == (Shape{3, 2, 1}));
    BOOST_TEST(unsqueeze_of(y, -3).shape() == (Shape{1, 3, 2}));
    BOOST_TEST(unsqueeze_of(y, 1).is_contiguous());
    tt::check_throws([&] { unsqueeze_of(y, 3); }, {"unsqueeze", "[-3, 2]"}, "unsqueeze dim");
    Tensor s = select_of(iota({4}), 0, 2);  // 0-dim
    BOOST_TEST(unsqueeze_of(s, 0).shape() == (Shape{1}));
    BOOST_TEST(squeeze_of(unsqueeze_of(s, 0)).dim() == 0);
  });
}

BOOST_AUTO_TEST_CASE(expand_rules) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = iota({3, 1});
    Tensor e = expand_of(x, {2, 3, 4});
    BOOST_TEST(e.shape() == (Shape{2, 3, 4}));
    BOOST_TEST(e.strides() == (Shape{0, 1, 0}));
    BOOST_TEST(e.storage() == x.storage());
    auto ev = values(e);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) BOOST_TEST(ev[(i * 3 + j) * 4 + k] == float(j));
    BOOST_TEST(expand_of(x, {-1, 5}).shape() == (Shape{3, 5}));
    BOOST_TEST(expand_of(x, {3, 1}).strides() == x.strides());
    tt::check_throws([&] { expand_of(x, {4, 2}); },
                     {"expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 0",
                      "Target sizes: [4, 2]", "Tensor sizes: [3, 1]"},
                     "non-singleton");
    tt::check_throws([&] { expand_of(x, {2}); },
                     {"number of sizes provided (1)", "number of dimensions in the tensor (2)"}, "too few sizes");
    tt::check_throws([&] { expand_of(x, {-1, 3, 2}); }, {"(-1) isn't allowed in a leading, non-existing dimension 0"},
                     "-1 in a new dim");
    Tensor s = select_of(iota({2}), 0, 1);  // 0-dim expands to anything
    BOOST_TEST(expand_of(s, {2, 2}).strides() == (Shape{0, 0}));
    BOOST_TEST(values(expand_of(s, {2, 2})) == (std::vector<float>{1, 1, 1, 1}));
  });
}

BOOST_AUTO_TEST_CASE(slicing_python_semantics) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = iota({10});
    auto sl = [&](int64_t a, int64_t b, int64_t step = 1) { return values(slice_of(x, 0, a, b, step)); };
    BOOST_TEST(sl(2, 5) == (std::vector<float>{2, 3, 4}));
    BOOST_TEST(sl(-3, 10) == (std::vector<float>{7, 8, 9}));              // negative start
    BOOST_TEST(sl(0, -7) == (std::vector<float>{0, 1, 2}));               // negative end
    BOOST_TEST(sl(-100, 2) == (std::vector<float>{0, 1}));                // clamped below
    BOOST_TEST(sl(8, 100) == (std::vector<float>{8, 9}));                 // clamped above
    BOOST_TEST(sl(1, 10, 3) == (std::vector<float>{1, 4, 7}));            // step
    BOOST_TEST(sl(0, INT64_MAX, 4) == (std::vector<float>{0, 4, 8}));     // x[::4]
    BOOST_TEST(sl(6, 2).empty());                                         // empty
    BOOST_TEST(slice_of(x, 0, 6, 2).shape() == (Shape{0}));
    Tensor s = slice_of(x, 0, 3, 9, 2);
    BOOST_TEST(s.storage_offset() == 3);
    BOOST_TEST(s.strides() == (Shape{2}));
    BOOST_TEST(s.storage() == x.storage());
    tt::check_throws([&] { slice_of(x, 0, 0, 5, 0); }, {"slice step must be positive"}, "zero step");
    tt::check_throws([&] { slice_of(x, 0, 0, 5, -1); }, {"slice step must be positive"}, "negative step");
    // Along an inner dim of a 2-D tensor.
    Tensor m = iota({3, 4});
    Tensor c = slice_of(m, -1, 1, 3);
    BOOST_TEST(c.shape() == (Shape{3, 2}));
    BOOST_TEST(c.strides() == (Shape{4, 1}));
    BOOST_TEST(values(c) == (std::vector<float>{1, 2, 5, 6, 9, 10}));
  });
}

BOOST_AUTO_TEST_CASE(select_and_errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor m = iota({3, 4});
    Tensor r = select_of(m, 0, 1);
    BOOST_TEST(r.shape() == (Shape{4}));
    BOOST_TEST(values(r) == (std::vector<float>{4, 5, 6, 7}));
    BOOST_TEST(r.storage_offset() == 4);
    Tensor c = select_of(m, 1, -1);
    BOOST_TEST(c.shape() == (Shape{3}));
    BOOST_TEST(c.strides() == (Shape{4}));
    BOOST_TEST(values(c) == (std::vector<float>{3, 7, 11}));
    BOOST_TEST(select_of(r, 0, 2).dim() == 0);
    BOOST_TEST(values(select_of(r, 0, 2)) == (std::vector<float>{6}));
    tt::check_throws([&] { select_of(m, 0, 3); }, {"index 3 out of range for tensor of size [3, 4] at dimension 0"},
                     "index too large");
    tt::check_throws([&] { select_of(m, 1, -5); }, {"index -5 out of range"}, "index too negative");
    tt::check_throws([&] { select_of(m, 2, 0); }, {"select", "out of range"}, "bad dim");
    tt::check_throws([&] { select_of(select_of(r, 0, 0), 0, 0); }, {"0-dim"}, "0-dim");
    tt::check_throws([&] { view_of(Tensor(), {1}); }, {"undefined"}, "undefined tensor");
  });
}

BOOST_AUTO_TEST_CASE(views_compose) {
  tt::for_each_backend([&](const tt::Backend& be) {
    // x[1:, ::2].t().unsqueeze(0) keeps pointing into the same buffer with the right elements.
    Tensor x = iota({4, 6});
    Tensor v = unsqueeze_of(t_of(slice_of(slice_of(x, 0, 1, 4), 1, 0, 6, 2)), 0);
    BOOST_TEST(v.shape() == (Shape{1, 3, 3}));
    BOOST_TEST(v.storage() == x.storage());
    BOOST_TEST((v.device() == be.device));
    BOOST_TEST(values(v) == (std::vector<float>{6, 12, 18, 8, 14, 20, 10, 16, 22}));
  });
}

BOOST_AUTO_TEST_SUITE_END()

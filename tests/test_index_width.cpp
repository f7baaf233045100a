// 64-bit offsets (docs/language.md): 32-bit offsets computed from run-time values wrap past
// 2^31 - 1, so a launch refuses a tensor argument whose elements reach past that when the kernel
// adds such offsets to it, naming the argument and the offset's line; the same kernel written
// with 64-bit offsets runs and is right at 2^31 + 2^20 one-byte elements.
#include <cstring>
#include <memory>

#include "jit/passes/index_width.h"
#include "test_support.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;

namespace {

const tritium::Options kCpu{.device = tritium::Device::cpu()};

// Which parameters of the kernel's optimised IR narrow_offsets flags, as "x,y".
template <class... A> std::string flagged(tritium::Kernel& k, const A&... args) {
  std::unique_ptr<tritium::ir::Function> f = k.optimized_function(args...);
  std::vector<tritium::SourceLoc> locs = tritium::jit::narrow_offsets(*f);
  std::string out;
  for (size_t i = 0; i < locs.size(); ++i)
    if (locs[i].known()) out += (out.empty() ? "" : ",") + f->params[i].name;
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_index_width)

BOOST_AUTO_TEST_CASE(which_offsets_are_narrow) {
  uint8_t* none = nullptr;
  int32_t* inone = nullptr;
  auto block = tritium::kernel("block", [](tl::ptr<uint8_t> x, tl::ptr<uint8_t> y, tl::i32 n, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);                      // i32 from pid: narrow
    auto offs64 = tl::program_id(0).to(tl::int64) * BLOCK + tl::arange(0, BLOCK);      // 64-bit: fine
    tl::store(y + offs64, tl::load(x + offs, offs < n), offs64 < n);
  }, {"x", "y", "n", "BLOCK"});
  BOOST_TEST(flagged(block, none, none, 100, 64) == "x");

  // A pointer advanced in 64 bits, then indexed by an arange (constant offsets): fine.
  auto advanced = tritium::kernel("advanced", [](tl::ptr<uint8_t> x, tl::i64 stride, int BLOCK) {
    auto row = x + tl::program_id(0).to(tl::int64) * stride;
    tl::store(row + tl::arange(0, BLOCK), tl::load(row + tl::arange(0, BLOCK)) + 1);
  }, {"x", "stride", "BLOCK"});
  BOOST_TEST(flagged(advanced, none, int64_t(1000), 64) == "");

  // Loop-carried pointers: a constant step is fine, a step times a 32-bit argument is not; a
  // gather through loaded 32-bit indices and an argument used as an offset as it is are fine.
  auto loop = tritium::kernel("loop", [](tl::ptr<uint8_t> a, tl::ptr<uint8_t> b, tl::ptr<int32_t> idx,
                                         tl::ptr<uint8_t> c, tl::i32 n, tl::i32 stride, int BLOCK) {
    auto pa = a + tl::arange(0, BLOCK);
    auto pb = b + tl::arange(0, BLOCK);
    auto acc = tl::zeros({BLOCK}, tl::int32);
    for (auto k : tl::range(0, n)) {
      acc += tl::load(pa).to(tl::int32) + tl::load(pb).to(tl::int32) + 0 * k;
      pa += BLOCK;
      pb += BLOCK * stride;
    }
    auto gathered = tl::load(c + tl::load(idx + tl::arange(0, BLOCK)));
    tl::store(c + n + tl::arange(0, BLOCK), (acc + gathered.to(tl::int32)).to(tl::uint8));
  }, {"a", "b", "idx", "c", "n", "stride", "BLOCK"});
  BOOST_TEST(flagged(loop, none, none, inone, none, 10, 100, 32) == "b");

  // A pointer merged from a branch keeps where it came from.
  auto branch = tritium::kernel("branch", [](tl::ptr<uint8_t> x, tl::i32 n, int BLOCK) {
    auto p = x + tl::arange(0, BLOCK);
    tl::if_(n > 5, [&] { p = p + 1; });
    auto q = p + tl::program_id(0) * BLOCK;
    tl::store(q, tl::load(q) + 1);
  }, {"x", "n", "BLOCK"});
  BOOST_TEST(flagged(branch, none, 10, 64) == "x");
}

BOOST_AUTO_TEST_CASE(tensors_past_two_to_the_31, *tt::needs_cpu_backend()) {
  const int64_t n = (int64_t(1) << 31) + (int64_t(1) << 20);
  const int BLOCK = 1 << 16;
  unsigned offset_line = 0;
  auto narrow = tritium::kernel("add_one_i32", [&](tl::ptr<uint8_t> x, tl::i64 n, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // wraps past 2^31 - 1
    auto mask = offs < n;
    offset_line = __LINE__; auto p = x + offs;
    tl::store(p, tl::load(p, mask) + 1, mask);
  }, {"x", "n", "BLOCK"});
  auto wide = tritium::kernel("add_one_i64", [](tl::ptr<uint8_t> x, tl::i64 n, int BLOCK) {
    auto offs = tl::program_id(0).to(tl::int64) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    tl::store(x + offs, tl::load(x + offs, mask) + 1, mask);
  }, {"x", "n", "BLOCK"});

  tritium::Tensor t = tritium::Tensor::empty({n}, tritium::DType::u8, tritium::Device::cpu());
  uint8_t* d = t.data_ptr<uint8_t>();
  std::memset(d, 7, static_cast<size_t>(n));  // each element must then be written exactly once
  const int64_t grid = tritium::cdiv(n, BLOCK);

  unsigned launch_line = __LINE__ + 1;
  std::string msg = tt::check_throws_at([&] { narrow[{grid}](t, n, BLOCK, kCpu); }, __FILE__, offset_line,
                                        {"add_one_i32", "argument 0 (x)", "2148532223", "64 bits"},
                                        "32-bit offsets into 2^31 + 2^20 elements");
  BOOST_TEST(msg.find(tt::file_line(__FILE__, launch_line)) != std::string::npos, "no launch line in: " << msg);
  BOOST_TEST((d[0] == 7 && d[n - 1] == 7), "the refused launch wrote");
  // The same kernel on a tensor within 2^31 elements (a view of the first 2^31) is not refused.
  tritium::Tensor head = t.as_strided({int64_t(1) << 31}, {1}, 0);
  BOOST_CHECK_NO_THROW(narrow[{1}](head, 1, BLOCK, kCpu));  // one program, one element

  wide[{grid}](t, n, BLOCK, kCpu);
  // 7 + 1 everywhere (a wrapped offset would leave a 7 and make a 9), element 0 also written above.
  BOOST_TEST(d[0] == 9);
  int64_t bad = 0;
  for (int64_t i = 1; i < n; ++i) bad += d[i] != 8;
  BOOST_TEST(bad == 0, bad << " of " << n << " elements wrong; around 2^31: " << int(d[(int64_t(1) << 31) - 1]) << " "
                            << int(d[int64_t(1) << 31]) << ", last " << int(d[n - 1]));
}

BOOST_AUTO_TEST_SUITE_END()

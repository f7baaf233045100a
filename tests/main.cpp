// The test module: every tests/test_*.cpp adds one suite to it.
#define BOOST_TEST_MODULE tritium
#if TRITIUM_BOOST_TEST_HEADER_ONLY
#include <boost/test/included/unit_test.hpp>  // the whole framework, compiled into this file
#else
#ifndef BOOST_TEST_DYN_LINK
#define BOOST_TEST_DYN_LINK
#endif
#include <boost/test/unit_test.hpp>
#endif

#include <cstdlib>

// Fresh tensor buffers hold NaN (0xFF bytes) in the tests, unless the environment says otherwise:
// an element an op never wrote then fails check_close's "never written" count instead of passing
// as whatever the allocator left there (often zeros, which many references also hold).
static const bool poison_buffers = [] { return ::setenv("TRITIUM_POISON_BUFFERS", "1", /*overwrite=*/0) == 0; }();

// Autotuned ops (matmul, attention, conv) compile the heuristic's config of each new shape instead
// of compiling and timing every candidate (TRITIUM_AUTOTUNE, docs/autotune.md), unless the
// environment says otherwise: the GPU suites' value checks take minutes less. The tuner itself and
// the tuned kernels are tested where a suite sets TRITIUM_AUTOTUNE=tune (test_autotune, and the
// tuned_ cases of test_matmul and test_attention).
static const bool heuristic_autotuning = [] {
  return ::setenv("TRITIUM_AUTOTUNE", "heuristic", /*overwrite=*/0) == 0;
}();

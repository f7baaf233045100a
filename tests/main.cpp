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

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

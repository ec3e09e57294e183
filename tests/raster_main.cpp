// Main of meanshift_raster_tests (tests/test_raster*.cpp): doctest's runner.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

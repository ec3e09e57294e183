// Main of meanshift_tests (skeleton and unit tests, plus tests/backend/*.cpp): doctest's runner,
// preceded by the random seed of this run so any failure can be reproduced.
#define DOCTEST_CONFIG_IMPLEMENT
#include "test_support.hpp"

#include <cstdio>

int main(int argc, char** argv)
{
    std::printf("meanshift_tests: random seed %llu (set MEANSHIFT_TEST_SEED=%llu to reproduce this run)\n",
                static_cast<unsigned long long>(mstest::base_seed()),
                static_cast<unsigned long long>(mstest::base_seed()));
    std::fflush(stdout);
    doctest::Context context(argc, argv);
    return context.run();
}

#include "skeleton/src/approx/radix_sort.hpp"

#include "skeleton/src/core/parallel.hpp"

#include <cstddef>

namespace meanshift::detail {

void radix_sort(std::vector<std::pair<std::uint64_t, Index>>& keyed, int bits)
{
    bool ordered = true;
    for (std::size_t q = 1; q < keyed.size() && ordered; ++q) ordered = keyed[q - 1].first <= keyed[q].first;
    if (ordered) return;
    constexpr int kDigit = 11;  // 2048 counters per thread: in L1, and 64-bit keys in 6 passes
    constexpr std::size_t kRadix = std::size_t{1} << kDigit;
    constexpr std::uint64_t kMask = kRadix - 1;
    const std::size_t n = keyed.size();
    // Each pass is stable in parallel: thread t counts the digits of its contiguous slice, the
    // slices' offsets are laid out digit by digit in thread order, and each thread scatters its
    // slice in order, so equal digits keep their order as in the sequential pass.
    const int threads = n >= (std::size_t{1} << 16) ? host_threads() : 1;
    std::vector<std::pair<std::uint64_t, Index>> sorted(n);
    std::vector<std::size_t> count(static_cast<std::size_t>(threads) * kRadix);
    for (int shift = 0; shift < bits; shift += kDigit) {
        std::fill(count.begin(), count.end(), 0);
#if defined(_OPENMP)
#pragma omp parallel num_threads(threads)
#endif
        {
#if defined(_OPENMP)
            const int t = omp_get_thread_num(), T = omp_get_num_threads();
#else
            const int t = 0, T = 1;
#endif
            const std::size_t a = n * std::size_t(t) / std::size_t(T), b = n * std::size_t(t + 1) / std::size_t(T);
            std::size_t* c = count.data() + std::size_t(t) * kRadix;
            for (std::size_t q = a; q < b; ++q) ++c[(keyed[q].first >> shift) & kMask];
#if defined(_OPENMP)
#pragma omp barrier
#pragma omp single
#endif
            {
                std::size_t offset = 0;
                for (std::size_t d = 0; d < kRadix; ++d)
                    for (int u = 0; u < T; ++u) {
                        std::size_t& v = count[std::size_t(u) * kRadix + d];
                        const std::size_t here = v;
                        v = offset;
                        offset += here;
                    }
            }
            for (std::size_t q = a; q < b; ++q) sorted[c[(keyed[q].first >> shift) & kMask]++] = keyed[q];
        }
        keyed.swap(sorted);
    }
}

}  // namespace meanshift::detail

#include "radix_sort.hpp"

#include <cstddef>

namespace meanshift::detail {

void radix_sort(std::vector<std::pair<std::uint64_t, Index>>& keyed, int bits)
{
    bool ordered = true;
    for (std::size_t q = 1; q < keyed.size() && ordered; ++q) ordered = keyed[q - 1].first <= keyed[q].first;
    if (ordered) return;
    constexpr int kDigit = 11;  // 2048 counters: in L1, and 64-bit keys in 6 passes
    constexpr std::uint64_t kMask = (std::uint64_t{1} << kDigit) - 1;
    std::vector<std::pair<std::uint64_t, Index>> sorted(keyed.size());
    std::vector<std::size_t> count;
    for (int shift = 0; shift < bits; shift += kDigit) {
        count.assign((std::size_t{1} << kDigit) + 1, 0);
        for (const auto& e : keyed) ++count[((e.first >> shift) & kMask) + 1];
        for (std::size_t b = 0; b + 1 < count.size(); ++b) count[b + 1] += count[b];
        for (const auto& e : keyed) sorted[count[(e.first >> shift) & kMask]++] = e;
        keyed.swap(sorted);
    }
}

}  // namespace meanshift::detail

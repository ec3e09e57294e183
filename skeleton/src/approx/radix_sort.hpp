#pragma once
// Internal: the LSD radix sort that orders rows by an integer key (bins, cells, Morton codes): O(n)
// where a comparison sort of a million rows took most of the host's preparation.

#include <meanshift/types.hpp>

#include <cstdint>
#include <utility>
#include <vector>

namespace meanshift::detail {

/// Sorts `keyed` (key, row) by key, stable, looking only at the low `bits` bits of the keys
/// (the higher ones must be 0). Already-sorted input returns after one pass over it.
void radix_sort(std::vector<std::pair<std::uint64_t, Index>>& keyed, int bits);

/// Bits needed to hold the values 0..v.
inline int bit_width(std::uint64_t v)
{
    int b = 0;
    while (b < 64 && (v >> b) != 0) ++b;
    return b;
}

}  // namespace meanshift::detail

#pragma once
// Internal: a CellGrid in the range kernels' layout (kernels/meanshift_ranges.h: gi, gf, start), as
// the CUDA binding uploads it. The pixel lattice of a 100 MP image's band has ~5.5·10^6 cells: the
// 64-bit offsets are narrowed on the host threads into vectors the binding keeps from band to band
// (no fresh pages to fault in per band), where one thread took ~10 ms a band.
//
// API (namespace meanshift::gpu):
//   struct RangeGridArrays { gi (2g int32: dims, cells), gf (3g float: origin, side, radius),
//                            start (prod(cells) + 1 int32) }
//   void range_grid_arrays(grid, g, out)   fills `out` for the first g grid dims (g = grid.g());
//       throws InvalidArgument when an offset exceeds INT32_MAX.

#include <meanshift/neighbours.hpp>

#include <cstdint>
#include <vector>

namespace meanshift::gpu {

struct RangeGridArrays {
    std::vector<std::int32_t> gi;
    std::vector<float> gf;
    std::vector<std::int32_t> start;
};

void range_grid_arrays(const CellGrid& grid, int g, RangeGridArrays& out);

}  // namespace meanshift::gpu

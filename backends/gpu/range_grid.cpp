// The range kernels' grid arrays (range_grid.hpp): offsets narrowed on the host threads.
#include "backends/gpu/range_grid.hpp"

#include "skeleton/src/core/parallel.hpp"

#include <meanshift/errors.hpp>

#include <climits>
#include <string>

namespace meanshift::gpu {

void range_grid_arrays(const CellGrid& G, int g, RangeGridArrays& out)
{
    const std::size_t gs = static_cast<std::size_t>(g);
    out.gi.resize(2 * gs);
    out.gf.resize(3 * gs);
    for (std::size_t j = 0; j < gs; ++j) {
        out.gi[j] = G.dims[j];
        out.gi[gs + j] = static_cast<std::int32_t>(G.cells[j]);
        out.gf[j] = static_cast<float>(G.origin[j]);
        out.gf[gs + j] = static_cast<float>(G.side[j]);
        out.gf[2 * gs + j] = static_cast<float>(G.radius[j]);
    }
    if (!G.start.empty() && G.start.back() > INT32_MAX)
        throw InvalidArgument("the truncated kernel indexes rows with 32 bits; the grid holds " +
                              std::to_string(G.start.back()) + " rows");
    const Index cells = static_cast<Index>(G.start.size());
    out.start.resize(G.start.size());  // kept from band to band: no zero fill, no new pages
    const Index* in = G.start.data();
    std::int32_t* o = out.start.data();
    MS_PARALLEL_FOR(cells)
    for (Index c = 0; c < cells; ++c) o[c] = static_cast<std::int32_t>(in[c]);
}

}  // namespace meanshift::gpu

// The uniform cell grid of the truncated kernel (neighbours.hpp) and its construction (prepare.hpp):
// choice of the grid dimensions, sorting of the prepared rows by cell or kd-tree leaf (kdtree.cpp),
// and the Auto decision.
#include "skeleton/src/core/prepare.hpp"
#include "skeleton/src/core/parallel.hpp"
#include "skeleton/src/approx/kdtree.hpp"
#include "skeleton/src/core/array_scan.hpp"
#include "skeleton/src/approx/radix_sort.hpp"

#include <meanshift/errors.hpp>
#include <meanshift/neighbours.hpp>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>

namespace meanshift {

// A position outside the grid maps to the nearest border cell. That is still correct: a point
// within the radius r of y in dim j lies inside the grid, so within r of the border the position
// is beyond, i.e. in the border cell or its neighbour (side ≥ r).
Index CellGrid::coord(int j, double v) const noexcept
{
    const std::size_t s = static_cast<std::size_t>(j);
    const double t = std::floor((v - origin[s]) / side[s]);
    if (!(t > 0)) return 0;  // also NaN
    const double hi = static_cast<double>(cells[s] - 1);
    return t >= hi ? cells[s] - 1 : static_cast<Index>(t);
}

Index CellGrid::cell_of(const double* y) const noexcept
{
    Index c = 0;
    for (int j = 0; j < g(); ++j) c = c * cells[std::size_t(j)] + coord(j, y[dims[std::size_t(j)]]);
    return c;
}

void CellGrid::empty_box(Index* lo, Index* hi) const noexcept
{
    for (int j = 0; j < g(); ++j) {
        lo[j] = std::numeric_limits<Index>::max();
        hi[j] = -1;
    }
}

void CellGrid::add_neighbourhood(const double* y, Index* lo, Index* hi) const noexcept
{
    // Every point within radius r of y in dim j lies in the cells of [y − r, y + r]: with
    // side ≥ r that is at most y's cell ±1, with side < r (e.g. one pixel of an image lattice)
    // it spans ⌈r / side⌉ cells either side. coord() clamps, so the box stays inside the grid.
    for (int j = 0; j < g(); ++j) {
        const std::size_t s = static_cast<std::size_t>(j);
        const double v = y[dims[s]];
        lo[j] = std::min(lo[j], coord(j, v - radius[s]));
        hi[j] = std::max(hi[j], coord(j, v + radius[s]));
    }
}

Index CellGrid::box_ranges(const Index* lo, const Index* hi, std::vector<Index>& ranges) const
{
    const int G = g();
    for (int j = 0; j < G; ++j)
        if (lo[j] > hi[j]) return 0;
    // Odometer over the first G-1 dims; each state is one row of cells along the last dim.
    std::vector<Index> at(lo, lo + G);
    const Index first_new = static_cast<Index>(ranges.size());
    Index rows = 0;
    for (;;) {
        Index base = 0;
        for (int j = 0; j < G - 1; ++j) base = base * cells[std::size_t(j)] + at[std::size_t(j)];
        base *= cells[std::size_t(G - 1)];
        const Index b = start[std::size_t(base + lo[G - 1])], e = start[std::size_t(base + hi[G - 1] + 1)];
        if (e > b) {
            const std::size_t sz = ranges.size();
            if (static_cast<Index>(sz) > first_new && ranges[sz - 1] == b)
                ranges[sz - 1] = e;  // contiguous with the previous row: merge
            else {
                ranges.push_back(b);
                ranges.push_back(e);
            }
            rows += e - b;
        }
        int j = G - 2;
        for (; j >= 0; --j) {
            if (++at[std::size_t(j)] <= hi[j]) break;
            at[std::size_t(j)] = lo[j];
        }
        if (j < 0) break;
    }
    return rows;
}

std::string CellGrid::describe() const
{
    std::ostringstream s;
    s << "grid over dims {";
    for (int j = 0; j < g(); ++j) s << (j ? "," : "") << dims[std::size_t(j)];
    s << "}, ";
    for (int j = 0; j < g(); ++j) s << (j ? " x " : "") << cells[std::size_t(j)];
    s << " cells";
    return s.str();
}

namespace detail {

namespace {

/// The low 16 bits of v spread to the even bits of the result (Morton interleaving of two dims).
inline std::uint64_t spread2(std::uint64_t v)
{
    v &= 0xffffu;
    v = (v | (v << 8)) & 0x00ff00ffu;
    v = (v | (v << 4)) & 0x0f0f0f0fu;
    v = (v | (v << 2)) & 0x33333333u;
    v = (v | (v << 1)) & 0x55555555u;
    return v;
}

}  // namespace

std::vector<Index> cell_order(const CellGrid& G, const double* Y, Index m, int k)
{
    const int g = G.g();
    int bits = 0;
    for (int j = 0; j < g; ++j)
        while (bits < 63 / g && (Index{1} << bits) < G.cells[std::size_t(j)]) ++bits;
    const std::size_t um = static_cast<std::size_t>(m);
    std::vector<std::pair<std::uint64_t, Index>> keyed(um);
    MS_PARALLEL_FOR(m * g)
    for (std::size_t q = 0; q < um; ++q) {
        const double* y = Y + q * static_cast<std::size_t>(k);
        std::uint64_t key = 0;
        if (g == 2 && bits <= 16) {
            key = spread2(static_cast<std::uint64_t>(G.coord(0, y[G.dims[0]]))) << 1 |
                  spread2(static_cast<std::uint64_t>(G.coord(1, y[G.dims[1]])));
        } else {
            for (int j = 0; j < g; ++j) {
                const auto c = static_cast<std::uint64_t>(G.coord(j, y[G.dims[std::size_t(j)]]));
                for (int b = 0; b < bits; ++b) key |= ((c >> b) & 1u) << (b * g + (g - 1 - j));
            }
        }
        keyed[q] = {key, static_cast<Index>(q)};
    }
    radix_sort(keyed, bits * g);  // already in key order (e.g. seeds sorted before): one pass
    std::vector<Index> order(um);
    for (std::size_t q = 0; q < um; ++q) order[q] = keyed[q].second;
    return order;
}

std::vector<Index> lattice_order(Index height, Index width)
{
    std::vector<Index> out;
    out.reserve(static_cast<std::size_t>(height * width));
    Index side = 1;
    while (side < std::max(height, width)) side <<= 1;
    // Quadrants in key order (y in the higher bit of each pair): top left, top right, bottom left,
    // bottom right; quadrants wholly outside the image are skipped, so the work is O(H·W).
    auto visit = [&](auto&& self, Index y0, Index x0, Index s) -> void {
        if (y0 >= height || x0 >= width) return;
        if (s == 1) {
            out.push_back(y0 * width + x0);
            return;
        }
        const Index h = s / 2;
        self(self, y0, x0, h);
        self(self, y0, x0 + h, h);
        self(self, y0 + h, x0, h);
        self(self, y0 + h, x0 + h, h);
    };
    visit(visit, 0, 0, side);
    return out;
}

namespace {

/// Grid cells per largest reach for per-point H_i (see build_search).
constexpr int kPerPointCellsPerRadius = 4;

/// Fraction of candidate pairs (points in a position's neighbourhood / n), estimated from up
/// to 512 sampled rows.
double candidate_fraction(const CellGrid& grid, const MatrixD& points)
{
    const Index n = points.rows();
    const Index samples = std::min<Index>(n, 512);
    const int G = grid.g();
    std::vector<Index> lo(static_cast<std::size_t>(G)), hi(static_cast<std::size_t>(G)), ranges;
    double total = 0;
    for (Index s = 0; s < samples; ++s) {
        const Index i = samples == n ? s : (s * n) / samples;
        grid.empty_box(lo.data(), hi.data());
        grid.add_neighbourhood(points.row(i).data(), lo.data(), hi.data());
        ranges.clear();
        total += static_cast<double>(grid.box_ranges(lo.data(), hi.data(), ranges));
    }
    return total / (static_cast<double>(samples) * static_cast<double>(n));
}

/// Per-column minimum and maximum of A (rows ≥ 1) over row chunks in parallel (exact: min and
/// max do not depend on the order). A serial pass over 100,000 x 384 doubles took most of the
/// search stage's budget at high k.
void parallel_column_range(const MatrixD& A, VectorD& lo, VectorD& hi)
{
    const Index n = A.rows(), k = A.cols();
    const Index chunks = std::min<Index>(n, 64);
    MatrixD clo(chunks, k), chi(chunks, k);
    MS_PARALLEL_FOR(n * k)
    for (Index c = 0; c < chunks; ++c) {
        const Index b = c * n / chunks, e = (c + 1) * n / chunks;
        auto l = clo.row(c), h = chi.row(c);
        l = A.row(b);
        h = A.row(b);
        for (Index i = b + 1; i < e; ++i) {
            l = l.cwiseMin(A.row(i));
            h = h.cwiseMax(A.row(i));
        }
    }
    lo = clo.colwise().minCoeff().transpose();
    hi = chi.colwise().maxCoeff().transpose();
}

[[noreturn]] void fail_lattice(const std::string& what)
{
    throw InvalidArgument("lattice search: " + what);
}

/// Search radius per dim (prepared units): c (shared H, whitened) or c · max_i σ_id (per point,
/// σ = 1/√precision).
std::vector<double> search_radius(const PreparedData& D)
{
    const int k = D.k();
    const double c = std::sqrt(D.cutoff2);
    std::vector<double> radius(static_cast<std::size_t>(k), c);
    if (D.model == KernelModel::PerPoint)
        for (int d = 0; d < k; ++d) radius[std::size_t(d)] = c / std::sqrt(D.precision.col(d).minCoeff());
    return radius;
}

void check_lattice(const PixelLattice& L, const PreparedData& D)
{
    if (L.height < 1 || L.width < 1)
        fail_lattice("the image is " + std::to_string(L.width) + " x " + std::to_string(L.height) + " pixels (empty)");
    if (L.x_dim < 0 || L.x_dim >= D.k() || L.y_dim < 0 || L.y_dim >= D.k() || L.x_dim == L.y_dim)
        fail_lattice("x_dim = " + std::to_string(L.x_dim) + " and y_dim = " + std::to_string(L.y_dim) +
                     " must be two different columns of the k = " + std::to_string(D.k()) + " data columns");
    if (D.n() % L.width != 0 || D.n() / L.width != L.height)
        fail_lattice(std::to_string(L.width) + " x " + std::to_string(L.height) + " pixels, but the data have " +
                     std::to_string(D.n()) +
                     " rows (the lattice needs the pixels themselves as the data: no bin_data)");
}

/// The pixel lattice: a grid over (y_dim, x_dim) whose cells are the pixels; row r = y·W + x is
/// cell r already, so nothing is sorted. Origin and side come from the data's own extents (half a
/// pixel below the first centre, one pixel spacing); every row is then checked to lie in its cell,
/// which is all the search relies on.
CellGrid lattice_grid(const PixelLattice& L, const PreparedData& D)
{
    check_lattice(L, D);
    const std::vector<double> radius = search_radius(D);
    CellGrid grid;
    const int dims[2] = {L.y_dim, L.x_dim};
    const Index cells[2] = {L.height, L.width};
    const Index n = D.n();
    const int k = D.k();
    const double* P = D.points.data();
    // Both columns' extents in one pass over the rows.
    double lo[2] = {P[dims[0]], P[dims[1]]}, hi[2] = {lo[0], lo[1]};
    for (Index r = 1; r < n; ++r)
        for (int j = 0; j < 2; ++j) {
            const double v = P[r * k + dims[j]];
            lo[j] = std::min(lo[j], v);
            hi[j] = std::max(hi[j], v);
        }
    for (int j = 0; j < 2; ++j) {
        const int d = dims[j];
        // One row or column of pixels: one cell, any side works (coord() clamps to it).
        const double side = cells[j] > 1 ? (hi[j] - lo[j]) / static_cast<double>(cells[j] - 1) : 1.0;
        if (!(side > 0) || !std::isfinite(side))
            fail_lattice("data column " + std::to_string(d) + " does not step between pixels (all " +
                         std::to_string(lo[j]) + " in prepared units)");
        grid.dims.push_back(d);
        grid.cells.push_back(cells[j]);
        grid.origin.push_back(lo[j] - 0.5 * side);
        grid.side.push_back(side);
        grid.radius.push_back(radius[std::size_t(d)]);
    }
    // Every row in its own pixel's cell. Fast test first (parallel, no division): within 0.49 pixels
    // of the cell's centre lo + e·side; only if some row fails it does every row go through coord()
    // (3 ms for a photo's rows: out-of-line, two divisions each).
    const double sy = grid.side[0], sx = grid.side[1], my = 0.49 * sy, mx = 0.49 * sx;
    bool off_centre = false;
    MS_PARALLEL_FOR_OR(n, off_centre)
    for (Index y = 0; y < L.height; ++y) {
        bool ok = true;
        const double cy = lo[0] + static_cast<double>(y) * sy;
        for (Index x = 0, r = y * L.width; x < L.width; ++x, ++r)
            ok &= (std::abs(P[r * k + L.y_dim] - cy) <= my) &
                  (std::abs(P[r * k + L.x_dim] - (lo[1] + static_cast<double>(x) * sx)) <= mx);
        off_centre = off_centre || !ok;
    }
    for (Index r = 0; r < n && off_centre; ++r) {
        const double* y = P + r * k;
        if (grid.coord(0, y[L.y_dim]) != r / L.width || grid.coord(1, y[L.x_dim]) != r % L.width)
            fail_lattice("row " + std::to_string(r) + " is not pixel (x, y) = (" + std::to_string(r % L.width) + ", " +
                         std::to_string(r / L.width) + ") of a " + std::to_string(L.width) + " x " +
                         std::to_string(L.height) + " row-major lattice in data columns " + std::to_string(L.x_dim) +
                         " (x), " + std::to_string(L.y_dim) + " (y)");
    }
    grid.start.resize(static_cast<std::size_t>(n) + 1);
    std::iota(grid.start.begin(), grid.start.end(), Index{0});
    return grid;
}

/// Re-sorts D's rows: prepared row r becomes old row order[r] (D.original = order, then the float
/// copies are recomputed).
void permute_rows(PreparedData& D, std::vector<Index> order)
{
    const Index n = D.n();
    D.original = std::move(order);
    // Gathers on the threads, each float copy written beside its row: serial passes like these made
    // most of the search stage's 1.4 s for 10^7 per-point rows on the GPU machine's 16-core host.
    const bool pp = D.model == KernelModel::PerPoint;
    auto permute = [&](MatrixD& M, MatrixF* F) {
        if (M.rows() != n) return;
        MatrixD P(n, M.cols());
        if (F) F->resize(n, M.cols());
        MS_PARALLEL_FOR(n * M.cols())
        for (Index r = 0; r < n; ++r) {
            P.row(r) = M.row(D.original[std::size_t(r)]);
            if (F) F->row(r) = P.row(r).cast<float>();
        }
        M = std::move(P);
    };
    permute(D.points, &D.points_f);
    permute(D.precision, pp ? &D.precision_f : nullptr);
    if (D.log_weight.size() == n) {
        VectorD w(n);
        MS_PARALLEL_FOR(n)
        for (Index r = 0; r < n; ++r) w[r] = D.log_weight[D.original[std::size_t(r)]];
        D.log_weight = std::move(w);
    }
    if (pp) D.log_weight_f = D.log_weight.cast<float>();
}

/// The kd-tree search. Requested (`automatic` false): always built. Auto: built when its estimated
/// candidate fraction is at most kTreeMaxCandidateFraction and below `beat` (the grid's estimate,
/// +inf when there is no grid to fall back to). Returns whether D has the tree; when it has not and
/// beat is +inf, `description` says why it stays brute force (`no_grid`: why the grid was not taken).
bool use_tree(PreparedData& D, bool automatic, double beat, const std::string& no_grid, std::string& description,
              bool may_prune = true)
{
    if (automatic && !may_prune) {
        // Every dim's extent is within every point's reach: each leaf's reach box holds the whole
        // data box, so no tree prunes a query inside it (proved, not sampled; 100,000 x 384
        // embeddings spent 0.33 s of 16 host cores building the sample tree to learn this).
        if (std::isinf(beat))
            description = "brute force (truncated kernel; " + no_grid +
                          "; the data span less than the search radius in every dim, so no kd-tree prunes)";
        return false;
    }
    std::vector<Index> order;
    // Auto on many points: a tree over an evenly spaced sample first. Its leaves are coarser than
    // the full tree's, so it visits at least as large a share of the pairs; when even that share is
    // all of them (high k: 100,000 x 384 embeddings spent 0.93 s of 3.3 s building the full tree to
    // learn this on an H100 host) no tree can prune and the full one is not built.
    constexpr Index kSample = 16384;
    if (automatic && D.n() > 2 * kSample) {
        PreparedData S;
        S.points.resize(kSample, D.k());
        S.model = D.model;
        if (D.model == KernelModel::PerPoint) S.precision.resize(kSample, D.k());
        for (Index s = 0; s < kSample; ++s) {
            S.points.row(s) = D.points.row((s * D.n()) / kSample);
            if (D.model == KernelModel::PerPoint) S.precision.row(s) = D.precision.row((s * D.n()) / kSample);
        }
        S.cutoff2 = D.cutoff2;
        const KdTree sample_tree = build_kdtree(S, tree_leaf_size(S.k()), order);
        const double sample_fraction = tree_candidate_fraction(sample_tree, S.points);
        if (sample_fraction >= 0.99) {
            if (std::isinf(beat)) {
                std::ostringstream why;
                why.setf(std::ios::fixed);
                why.precision(1);
                why << "brute force (truncated kernel; " << no_grid << "; a kd-tree over " << kSample
                    << " sample points would visit " << 100 * sample_fraction << " % of the pairs)";
                description = why.str();
            }
            return false;
        }
    }
    KdTree tree = build_kdtree(D, tree_leaf_size(D.k()), order);
    const double fraction = tree_candidate_fraction(tree, D.points);
    std::ostringstream why;
    why.setf(std::ios::fixed);
    why.precision(1);
    if (automatic && (fraction > kTreeMaxCandidateFraction || fraction >= beat)) {
        if (std::isinf(beat)) {
            why << "brute force (truncated kernel; " << no_grid << "; a kd-tree would visit " << 100 * fraction
                << " % of the pairs, over the " << 100 * kTreeMaxCandidateFraction << " % where it pays)";
            description = why.str();
        }
        return false;
    }
    permute_rows(D, std::move(order));
    why << tree.describe() << " (" << 100 * fraction << " % of the pairs are candidates";
    if (automatic) why << "; " << no_grid;
    why << ")";
    description = why.str();
    D.tree = std::move(tree);
    return true;
}

}  // namespace

void build_search(PreparedData& D, NeighbourSearch search, std::string& description, const PixelLattice* lattice)
{
    D.grid.reset();
    D.tree.reset();
    D.original.clear();
    if (search == NeighbourSearch::Lattice && !lattice)
        throw InvalidArgument("search = Lattice needs Options::lattice (the image's height, width and pixel columns)");
    if (lattice && search != NeighbourSearch::BruteForce) check_lattice(*lattice, D);
    if (!std::isfinite(D.cutoff2)) {
        description = "exact kernel (brute force)";
        return;
    }
    if (search == NeighbourSearch::BruteForce) {
        description = "brute force (truncated kernel, requested)";
        return;
    }
    if (search == NeighbourSearch::Tree) {
        use_tree(D, false, 0, "", description);
        return;
    }
    // Where the grid does not pay, Auto tries the kd-tree, else brute force.
    // Whether a kd-tree could prune at all (use_tree): some dim's extent exceeds the smallest reach
    // in it. Set below, before any no_grid() call that can reach use_tree.
    bool tree_may_prune = true;
    auto no_grid = [&](const std::string& why) {
        if (search == NeighbourSearch::Auto)
            use_tree(D, true, std::numeric_limits<double>::infinity(), why, description, tree_may_prune);
        else
            description = "brute force (truncated kernel; " + why + ")";
    };
    if (lattice && search != NeighbourSearch::Grid) {
        CellGrid grid = lattice_grid(*lattice, D);
        const double fraction = candidate_fraction(grid, D.points);
        std::ostringstream why;
        why.precision(2);
        why << "pixel lattice " << lattice->width << " x " << lattice->height << ", window radius "
            << grid.radius[1] / grid.side[1] << " x " << grid.radius[0] / grid.side[0] << " px (" << 100 * fraction
            << " % of the pairs are candidates)";
        description = why.str();
        D.grid = std::move(grid);
        return;
    }
    const Index n = D.n();
    const int k = D.k();
    const std::vector<double> radius = search_radius(D);
    VectorD lo, hi;
    parallel_column_range(D.points, lo, hi);
    {
        // Smallest reach per dim: c (shared H) or c · min_i σ_id.
        VectorD reach = VectorD::Constant(k, std::sqrt(D.cutoff2));
        if (D.model == KernelModel::PerPoint) {
            VectorD wmax, wmin_unused;
            parallel_column_range(D.precision, wmin_unused, wmax);
            for (int d = 0; d < k; ++d) reach[d] /= std::sqrt(wmax[d]);
        }
        tree_may_prune = false;
        for (int d = 0; d < k && !tree_may_prune; ++d) tree_may_prune = !(hi[d] - lo[d] <= reach[d]);
    }

    // Cells per dim (computed in double: nothing is allocated before the count is known to fit).
    std::vector<std::pair<double, int>> cand;  // (cells, dim) for dims that prune (≥ 3 cells)
    for (int d = 0; d < k; ++d) {
        const double cells = std::floor((hi[d] - lo[d]) / radius[std::size_t(d)]);
        if (std::isfinite(cells) && cells >= 3) cand.push_back({std::min(cells, 1e15), d});
    }
    if (cand.empty()) {
        no_grid("no dimension spans 3 cells of the search radius, a grid would not prune");
        return;
    }
    const double budget = 4.0 * static_cast<double>(n) + 1048576.0;
    std::stable_sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::pair<double, int>> chosen;
    double product = 1;
    for (const auto& cd : cand)
        if (product * cd.first <= budget) {
            product *= cd.first;
            chosen.push_back(cd);
        }
    if (chosen.empty()) {
        no_grid("a grid of the search radius would not fit in memory");
        return;
    }
    std::sort(chosen.begin(), chosen.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    // Per-point H_i: the radius is the LARGEST reach (c · max σ), while most points reach less; cells
    // of radius/sub make a mode's box (2r + side)² instead of (3r)² in two dims (forest cloud, σ_xy
    // 0.5-2.35 m, 400k points: 4.1 % -> 2.5 % of the pairs by the estimate). Shared H keeps cells of
    // the radius (its decisions and blocks were measured so).
    int sub = 1;
    if (D.model == KernelModel::PerPoint)
        for (int s : {kPerPointCellsPerRadius, 2}) {
            double fine = 1;
            for (const auto& cd : chosen)
                fine *= std::floor((hi[cd.second] - lo[cd.second]) * s / radius[std::size_t(cd.second)]);
            if (sub == 1 && fine <= budget) sub = s;
        }
    CellGrid grid;
    for (const auto& cd : chosen) {
        const int d = cd.second;
        const double r = radius[std::size_t(d)] / sub;
        const Index cells = sub == 1 ? static_cast<Index>(cd.first)
                                     : static_cast<Index>(std::floor((hi[d] - lo[d]) * sub / radius[std::size_t(d)]));
        grid.dims.push_back(d);
        grid.cells.push_back(cells);
        grid.origin.push_back(lo[d]);
        grid.side.push_back(std::max((hi[d] - lo[d]) / static_cast<double>(cells), r));
        grid.radius.push_back(radius[std::size_t(d)]);
    }

    // Counting sort of the rows by cell.
    Index ncell = 1;
    for (const Index c : grid.cells) ncell *= c;
    std::vector<Index> cell_of_row(static_cast<std::size_t>(n));
    grid.start.assign(static_cast<std::size_t>(ncell) + 1, 0);
    MS_PARALLEL_FOR(n * grid.g())
    for (Index i = 0; i < n; ++i) cell_of_row[static_cast<std::size_t>(i)] = grid.cell_of(D.points.row(i).data());
    for (Index i = 0; i < n; ++i) ++grid.start[static_cast<std::size_t>(cell_of_row[std::size_t(i)]) + 1];
    for (Index cidx = 0; cidx < ncell; ++cidx) grid.start[std::size_t(cidx) + 1] += grid.start[std::size_t(cidx)];

    // The box counts only need the cell offsets, so the estimate runs before the rows are sorted.
    const double fraction = candidate_fraction(grid, D.points);
    std::ostringstream why;
    why.precision(2);
    if (search == NeighbourSearch::Auto && fraction > kGridMaxCandidateFraction) {
        why << "a grid would visit " << 100 * fraction << " % of the pairs, over the "
            << 100 * kGridMaxCandidateFraction << " % where it pays";
        no_grid(why.str());
        return;
    }
    // A grid over a few of many dims can prune far less than a tree over all of them (blobs,
    // k = 32: grid 72 %, tree 20 %), and a grid over many dims walks 3^(g-1) rows of cells per
    // block (k = 16, g = 12: the same pairs as the tree in 2.5x its time). Auto then builds the
    // tree too and takes it unless the grid estimates fewer pairs (by 10 % when g > kGridTryTreeDims).
    if (search == NeighbourSearch::Auto && (fraction > kGridTryTreeFraction || grid.g() > kGridTryTreeDims)) {
        why << "a grid would visit " << 100 * fraction << " % of the pairs";
        if (grid.g() > kGridTryTreeDims) why << " over " << grid.g() << " dims";
        const double beat = grid.g() > kGridTryTreeDims ? 1.1 * fraction : fraction;
        if (use_tree(D, true, beat, why.str(), description)) return;
        why.str("");
    }
    std::vector<Index> order(static_cast<std::size_t>(n));
    std::vector<Index> next(grid.start.begin(), grid.start.end() - 1);
    for (Index i = 0; i < n; ++i) order[static_cast<std::size_t>(next[std::size_t(cell_of_row[std::size_t(i)])]++)] = i;
    permute_rows(D, std::move(order));
    why << grid.describe() << " (" << 100 * fraction << " % of the pairs are candidates)";
    description = why.str();
    D.grid = std::move(grid);
}

}  // namespace detail
}  // namespace meanshift

// Bin seeding across ranks (include/meanshift/mpi.hpp, docs/mpi.md): scikit-learn's bin_seeding
// as one process does it (Options::seeding = Bins: bins of side bin_size in one process's prepared
// units, a seed at the mean of every bin with ≥ min_bin_count points, smaller bins labelled by the
// nearest seed), with the bins counted on every rank and merged on rank 0.
#include "common.hpp"
#include "skeleton/src/approx/boundary_bins.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace meanshift::mpi::detail {
namespace {

using Key = std::vector<std::int64_t>;

/// Hash of a cell's integer coordinates (a rank's bins are found per row: a hash table, not a tree,
/// which took 0.6 of a rank's time at 2.5e7 rows).
struct KeyHash {
    std::size_t operator()(const Key& key) const noexcept
    {
        std::uint64_t h = 0x9e3779b97f4a7c15ull;
        for (const std::int64_t v : key) {
            h ^= static_cast<std::uint64_t>(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
            h *= 0xff51afd7ed558ccdull;
        }
        return static_cast<std::size_t>(h ^ (h >> 33));
    }
};

struct Cell {
    long long count = 0;
    double weight = 0;  ///< Σ sample weights (the count without them)
    std::vector<double> sum;  ///< Σ weight · prepared coordinates
};

/// The cell ⌊p / side⌋ of a position x (k = key.size() values, data units) in one process's prepared
/// units p = (x − centre) · scale; p itself into `prepared` when given.
template <class T>
void cell_of(const T* x, const std::vector<double>& centre, const std::vector<double>& scale, double side, Key& key,
             double* prepared = nullptr)
{
    for (std::size_t d = 0; d < key.size(); ++d) {
        const double p = (static_cast<double>(x[d]) - centre[d]) * scale[d];
        key[d] = static_cast<std::int64_t>(std::floor(p / side));
        if (prepared) prepared[d] = p;
    }
}

}  // namespace

Index count_cells(const Eigen::Ref<const MatrixF>& local, double side, const std::vector<double>& centre,
                  const std::vector<double>& scale)
{
    std::unordered_set<Key, KeyHash> cells;  // memory ∝ the occupied cells, not the rows
    Key key(static_cast<std::size_t>(local.cols()));
    for (Index i = 0; i < local.rows(); ++i) {
        cell_of(local.data() + i * local.outerStride(), centre, scale, side, key);
        cells.insert(key);
    }
    return static_cast<Index>(cells.size());
}

BinSeeds plan_bin_seeds(MPI_Comm comm, const Eigen::Ref<const MatrixF>& local, const Options& options,
                        const std::vector<double>& centre, const std::vector<double>& scale, const float* weights)
{
    int rank = 0, size = 1;
    check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    const int k = static_cast<int>(local.cols());
    const std::size_t K = static_cast<std::size_t>(k);
    BinSeeds b;
    b.side = options.bin_size;

    // 1. This rank's bins (prepared units (x − centre) · scale, cells ⌊p / side⌋).
    std::unordered_map<Key, Cell, KeyHash> mine;
    Key key(K);
    std::vector<double> p(K);
    for (Index i = 0; i < local.rows(); ++i) {
        cell_of(local.data() + i * local.outerStride(), centre, scale, b.side, key, p.data());
        Cell& c = mine[key];
        if (c.sum.empty()) c.sum.assign(K, 0.0);
        const double w = weights ? static_cast<double>(weights[i]) : 1.0;
        ++c.count;
        c.weight += w;
        for (int d = 0; d < k; ++d) c.sum[std::size_t(d)] += w * p[std::size_t(d)];
    }

    // 2. Gathered on rank 0 (keys, sums, counts) and merged there, in lexicographic key order.
    const int nb = static_cast<int>(mine.size());
    std::vector<std::int64_t> keys_out;
    std::vector<double> sums_out;
    std::vector<long long> counts_out;
    std::vector<double> weights_out;
    // In lexicographic key order, as a std::map would give them (the merge on rank 0 depends on it).
    std::vector<const std::pair<const Key, Cell>*> sorted;
    sorted.reserve(mine.size());
    for (const auto& e : mine) sorted.push_back(&e);
    std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
    for (const auto* e : sorted) {
        const Key& kk = e->first;
        const Cell& c = e->second;
        keys_out.insert(keys_out.end(), kk.begin(), kk.end());
        sums_out.insert(sums_out.end(), c.sum.begin(), c.sum.end());
        counts_out.push_back(c.count);
        weights_out.push_back(c.weight);
    }
    std::vector<int> nbs(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size), 0);
    check_mpi(MPI_Gather(&nb, 1, MPI_INT, nbs.data(), 1, MPI_INT, 0, comm), "MPI_Gather (bin counts)");
    long long total = 0;
    for (int r = 0; r < size; ++r) {
        displs[std::size_t(r)] = static_cast<int>(total);
        total += nbs[std::size_t(r)];
    }
    std::vector<std::int64_t> keys_in(rank == 0 ? static_cast<std::size_t>(total) * K : 0);
    std::vector<double> sums_in(rank == 0 ? static_cast<std::size_t>(total) * K : 0);
    std::vector<long long> counts_in(rank == 0 ? static_cast<std::size_t>(total) : 0);
    std::vector<double> weights_in(rank == 0 ? static_cast<std::size_t>(total) : 0);
    {
        const RowType key_row(k, MPI_INT64_T), sum_row(k, MPI_DOUBLE);
        check_mpi(MPI_Gatherv(keys_out.data(), nb, key_row.type, keys_in.data(), nbs.data(), displs.data(),
                              key_row.type, 0, comm),
                  "MPI_Gatherv (bin keys)");
        check_mpi(MPI_Gatherv(sums_out.data(), nb, sum_row.type, sums_in.data(), nbs.data(), displs.data(),
                              sum_row.type, 0, comm),
                  "MPI_Gatherv (bin sums)");
        check_mpi(MPI_Gatherv(counts_out.data(), nb, MPI_LONG_LONG, counts_in.data(), nbs.data(), displs.data(),
                              MPI_LONG_LONG, 0, comm),
                  "MPI_Gatherv (bin sizes)");
        check_mpi(MPI_Gatherv(weights_out.data(), nb, MPI_DOUBLE, weights_in.data(), nbs.data(), displs.data(),
                              MPI_DOUBLE, 0, comm),
                  "MPI_Gatherv (bin weights)");
    }
    std::vector<float> seeds_flat;
    long long S = 0;
    if (rank == 0) {
        std::map<Key, Cell> all;
        for (long long j = 0; j < total; ++j) {
            const std::size_t at = static_cast<std::size_t>(j) * K;
            Cell& c = all[Key(keys_in.begin() + static_cast<std::ptrdiff_t>(at),
                              keys_in.begin() + static_cast<std::ptrdiff_t>(at + K))];
            if (c.sum.empty()) c.sum.assign(K, 0.0);
            c.count += counts_in[std::size_t(j)];
            c.weight += weights_in[std::size_t(j)];
            for (std::size_t d = 0; d < K; ++d) c.sum[d] += sums_in[at + d];
        }
        // Seeds: bins of ≥ min_bin_count points, at their means; smaller bins take the nearest seed.
        MatrixD means(static_cast<Index>(all.size()), k);
        Index j = 0;
        for (const auto& [kk, c] : all) {
            b.keys.insert(b.keys.end(), kk.begin(), kk.end());
            b.count.push_back(c.count);
            b.weight.push_back(c.weight);
            // A bin whose weights are all 0 adds nothing to any sum: its position is immaterial.
            for (int d = 0; d < k; ++d) means(j, d) = c.weight > 0 ? c.sum[std::size_t(d)] / c.weight : 0.0;
            b.seed_of_bin.push_back(c.count >= options.min_bin_count ? S++ : -1);
            ++j;
        }
        if (S > 0) {
            MatrixD seeds(S, k);
            for (Index q = 0; q < means.rows(); ++q)
                if (b.seed_of_bin[std::size_t(q)] >= 0) seeds.row(b.seed_of_bin[std::size_t(q)]) = means.row(q);
            for (Index q = 0; q < means.rows(); ++q) {
                if (b.seed_of_bin[std::size_t(q)] >= 0) continue;
                Index best = 0;
                (seeds.rowwise() - means.row(q)).rowwise().squaredNorm().minCoeff(&best);
                b.seed_of_bin[std::size_t(q)] = best;
            }
            for (Index q = 0; q < S; ++q)
                for (int d = 0; d < k; ++d)
                    seeds_flat.push_back(
                        static_cast<float>(seeds(q, d) / scale[std::size_t(d)] + centre[std::size_t(d)]));
        }
    }
    agree(comm, attempt([&] {
              if (rank == 0 && S == 0)
                  throw InvalidArgument("min_bin_count = " + std::to_string(options.min_bin_count) +
                                        ": no bin holds that many points (no seeds)");
          }));

    // 3. Every rank gets the bin table (to label its points) and the seeds.
    long long dims[2] = {static_cast<long long>(b.count.size()), S};
    check_mpi(MPI_Bcast(dims, 2, MPI_LONG_LONG, 0, comm), "MPI_Bcast (bins)");
    b.keys.resize(static_cast<std::size_t>(dims[0]) * K);
    b.count.resize(static_cast<std::size_t>(dims[0]));
    b.weight.resize(static_cast<std::size_t>(dims[0]));
    b.seed_of_bin.resize(static_cast<std::size_t>(dims[0]));
    seeds_flat.resize(static_cast<std::size_t>(dims[1]) * K);
    static_assert(sizeof(Index) == sizeof(long long), "Index is a 64-bit integer");
    check_mpi(MPI_Bcast(b.keys.data(), static_cast<int>(b.keys.size()), MPI_INT64_T, 0, comm), "MPI_Bcast (bin keys)");
    check_mpi(MPI_Bcast(b.count.data(), static_cast<int>(b.count.size()), MPI_LONG_LONG, 0, comm),
              "MPI_Bcast (bin sizes)");
    check_mpi(MPI_Bcast(b.weight.data(), static_cast<int>(b.weight.size()), MPI_DOUBLE, 0, comm),
              "MPI_Bcast (bin weights)");
    check_mpi(MPI_Bcast(b.seed_of_bin.data(), static_cast<int>(b.seed_of_bin.size()), MPI_LONG_LONG, 0, comm),
              "MPI_Bcast (seed of each bin)");
    check_mpi(MPI_Bcast(seeds_flat.data(), static_cast<int>(seeds_flat.size()), MPI_FLOAT, 0, comm),
              "MPI_Bcast (seeds)");
    b.seeds = Eigen::Map<const MatrixF>(seeds_flat.data(), static_cast<Index>(dims[1]), k);
    return b;
}

Index BinSeeds::find(const std::int64_t* cell) const
{
    return meanshift::detail::find_cell(keys, count.size(), count.empty() ? 0 : keys.size() / count.size(), cell);
}

Index BinSeeds::bin_at(const double* y, const std::vector<double>& centre, const std::vector<double>& scale) const
{
    Key key(centre.size());
    cell_of(y, centre, scale, side, key);
    return find(key.data());
}

Index BinSeeds::bin_of(const float* x, const std::vector<double>& centre, const std::vector<double>& scale) const
{
    Key key(centre.size());
    cell_of(x, centre, scale, side, key);
    const Index j = find(key.data());
    if (j < 0) throw Error("bin seeding: a point's bin is missing from the merged bin table");
    return j;
}

}  // namespace meanshift::mpi::detail

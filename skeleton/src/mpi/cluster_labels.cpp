// Stages 4 and 5 of meanshift::mpi::cluster: the boundary refinement of bin seeding, the clusters
// numbered as one process numbers them, and every rank's points labelled from the seeds' outcomes.
#include "cluster_run.hpp"

#include "skeleton/src/approx/boundary_bins.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <sstream>
#include <vector>

namespace meanshift::mpi::detail {

// Boundary refinement (Options::refine_boundaries, as one process does it, docs/mpi.md): the
// points of bins on a basin boundary are binned again at bin_size/4 across the ranks; those
// fine seeds ascend by the same strategy, and each takes the label of the coarse bin its mode
// lies in when that bin is off the boundaries, else that of the nearest cluster centre.
Refinement refine_boundaries(Run& run, Ascents& a)
{
    MPI_Comm comm = run.comm;
    const int rank = run.rank, k = run.k;
    const Index n_local = run.n_local;
    const Options& options = run.options;
    const bool seeded = run.seeded, grouped = a.grouped;
    const MatrixF& mine_rows = run.mine_rows;
    const std::vector<double>&mid = run.mid, &scale = run.scale;
    DistributedResult& out = run.out;
    const detail::BinSeeds& bins = a.bins;
    const Grouping& g = a.g;
    Refinement ref;
    std::vector<char>& boundary = ref.boundary;
    detail::BinSeeds& fine = ref.fine;
    SeedAscent& refined = ref.refined;
    std::vector<int>& fine_labels = ref.fine_labels;
    std::vector<Index>& settled_bin = ref.settled_bin;
    long long& n_boundary = ref.n_boundary;
    Clock::time_point t;
    if (seeded && grouped && options.refine_boundaries) {
        t = Clock::now();
        const std::size_t B = bins.count.size();
        std::vector<int> bin_label(rank == 0 ? B : 0);
        boundary.assign(B, 0);
        if (rank == 0) {
            for (std::size_t j = 0; j < B; ++j) bin_label[j] = g.labels[std::size_t(bins.seed_of_bin[j])];
            boundary = ::meanshift::detail::boundary_bins(bins.keys, bin_label, bins.count, options.min_bin_count, k,
                                                          [&](const std::int64_t* c) { return bins.find(c); });
        }
        check_mpi(MPI_Bcast(boundary.data(), static_cast<int>(B), MPI_CHAR, 0, comm), "MPI_Bcast (boundary bins)");
        for (char bd : boundary) n_boundary += bd;
        out.distributed.seconds_group += since(t);
        if (n_boundary > 0) {
            std::vector<Index> rows;
            agree(comm, attempt([&] {
                      for (Index i = 0; i < n_local; ++i)
                          if (boundary[std::size_t(bins.bin_of(mine_rows.data() + i * k, mid, scale))])
                              rows.push_back(i);
                  }));
            MatrixF mine_boundary(static_cast<Index>(rows.size()), k);
            for (std::size_t r = 0; r < rows.size(); ++r)
                mine_boundary.row(static_cast<Index>(r)) = mine_rows.row(rows[r]);
            Options fine_options = options;
            fine_options.bin_size = options.bin_size / 4;
            fine_options.min_bin_count = 1;
            const auto t_fine = Clock::now();
            fine = detail::plan_bin_seeds(comm, mine_boundary, fine_options, mid, scale);
            out.distributed.seconds_binning += since(t_fine);
            // As one process: a fine seed stops as soon as it enters a bin off the boundaries (the
            // domain decomposition's loop applies this; the replicated ranks run whole ascents).
            refined = ascend_seeds(run, fine.seeds, [&](const double* y) {
                const Index j = bins.bin_at(y, mid, scale);
                return j >= 0 && !boundary[std::size_t(j)];
            });
            a.local.timing.pair_interactions += refined.local.timing.pair_interactions;
            a.local.timing.seconds_kernels += refined.local.timing.seconds_kernels;
            a.local.timing.iterations += refined.local.timing.iterations;
            t = Clock::now();
            const Index F = refined.modes.rows();
            // Every rank: the settled bin each fine seed ended in (-1: none), whose seed's mode it takes.
            settled_bin.assign(static_cast<std::size_t>(F), -1);
            std::vector<double> y(static_cast<std::size_t>(k));
            for (Index f = 0; f < F; ++f) {
                for (int d = 0; d < k; ++d) y[std::size_t(d)] = refined.modes(f, d);
                const Index j = bins.bin_at(y.data(), mid, scale);
                if (j >= 0 && !boundary[std::size_t(j)]) settled_bin[std::size_t(f)] = j;
            }
            fine_labels.assign(static_cast<std::size_t>(F), 0);
            agree(comm, attempt([&] {
                      if (rank != 0) return;
                      const MatrixD Z = run.prepared(refined.modes);
                      for (Index f = 0; f < F; ++f) {
                          const Index j = settled_bin[std::size_t(f)];
                          if (j >= 0) {
                              fine_labels[std::size_t(f)] = bin_label[std::size_t(j)];
                          } else {
                              Index best = 0;
                              (g.centres.rowwise() - Z.row(f)).rowwise().squaredNorm().minCoeff(&best);
                              fine_labels[std::size_t(f)] = static_cast<int>(best);
                          }
                      }
                  }));
            out.distributed.seconds_group += since(t);
        }
    }
    return ref;
}

// Clusters renumbered by their points (stable, largest first) as one process numbers them;
// centres, sizes and labels to every rank.
Numbering number_clusters(Run& run, Ascents& a, Refinement& ref)
{
    MPI_Comm comm = run.comm;
    const int rank = run.rank, k = run.k;
    const Index n_local = run.n_local;
    const bool seeded = run.seeded, grouped = a.grouped, refine = ref.active();
    const std::vector<double>&mid = run.mid, &scale = run.scale;
    DistributedResult& out = run.out;
    const detail::BinSeeds& bins = a.bins;
    Grouping& g = a.g;
    const std::vector<char>& boundary = ref.boundary;
    const detail::BinSeeds& fine = ref.fine;
    std::vector<int>& fine_labels = ref.fine_labels;
    const long long S = seeded ? a.coarse.modes.rows() : 0;
    Numbering c;
    std::vector<int>& seed_labels = c.seed_labels;
    MatrixD& centres = c.centres;
    std::vector<long long>& sizes = c.sizes;
    auto t = Clock::now();
    agree(comm, attempt([&] {
              if (rank != 0 || !grouped) return;
              if (seeded) {
                  std::vector<long long> points(g.sizes.size(), 0);
                  for (std::size_t b = 0; b < bins.count.size(); ++b)
                      if (!refine || !boundary[b])
                          points[std::size_t(g.labels[std::size_t(bins.seed_of_bin[b])])] += bins.count[b];
                  for (std::size_t f = 0; f < fine_labels.size(); ++f)
                      points[std::size_t(fine_labels[f])] += fine.count[f];
                  std::vector<int> by(points.size());
                  std::iota(by.begin(), by.end(), 0);
                  std::stable_sort(by.begin(), by.end(),
                                   [&](int x, int y) { return points[std::size_t(x)] > points[std::size_t(y)]; });
                  std::vector<int> renumber(points.size());
                  MatrixD sorted(static_cast<Index>(points.size()), k);
                  for (std::size_t j = 0; j < by.size(); ++j) {
                      renumber[std::size_t(by[j])] = static_cast<int>(j);
                      sorted.row(static_cast<Index>(j)) = g.centres.row(by[j]);
                      sizes.push_back(points[std::size_t(by[j])]);
                  }
                  // Clusters no point maps to (possible through min_bin_count or the refinement) are
                  // dropped, as one process drops them: they sort last.
                  while (!sizes.empty() && sizes.back() == 0) sizes.pop_back();
                  g.centres = sorted.topRows(static_cast<Index>(sizes.size()));
                  for (int& l : g.labels) l = renumber[std::size_t(l)];
                  for (int& l : fine_labels) l = renumber[std::size_t(l)];
              } else {
                  sizes.assign(g.sizes.begin(), g.sizes.end());
              }
              centres = g.centres;
              for (int d = 0; d < k; ++d)
                  centres.col(d) = (centres.col(d).array() / scale[std::size_t(d)] + mid[std::size_t(d)]).matrix();
              seed_labels = std::move(g.labels);
          }));
    out.distributed.seconds_group += since(t);

    t = Clock::now();
    if (grouped) {
        long long c = static_cast<long long>(sizes.size());
        check_mpi(MPI_Bcast(&c, 1, MPI_LONG_LONG, 0, comm), "MPI_Bcast (cluster count)");
        sizes.resize(static_cast<std::size_t>(c));
        if (rank != 0) centres.resize(static_cast<Index>(c), k);
        if (c > 0) {
            check_mpi(MPI_Bcast(sizes.data(), static_cast<int>(c), MPI_LONG_LONG, 0, comm), "MPI_Bcast (sizes)");
            check_mpi(MPI_Bcast(centres.data(), static_cast<int>(c * k), MPI_DOUBLE, 0, comm), "MPI_Bcast (centres)");
        }
        out.labels.resize(static_cast<std::size_t>(n_local));
        if (seeded) {  // the seeds' labels to every rank; each point takes its bin's seed's
            seed_labels.resize(static_cast<std::size_t>(S));
            check_mpi(MPI_Bcast(seed_labels.data(), static_cast<int>(S), MPI_INT, 0, comm), "MPI_Bcast (seed labels)");
            if (refine)
                check_mpi(MPI_Bcast(fine_labels.data(), static_cast<int>(fine_labels.size()), MPI_INT, 0, comm),
                          "MPI_Bcast (fine seed labels)");
        } else {
            check_mpi(MPI_Scatterv(rank == 0 ? seed_labels.data() : nullptr, run.counts.data(), run.displs.data(),
                                   MPI_INT, n_local ? out.labels.data() : nullptr, static_cast<int>(n_local), MPI_INT,
                                   0, comm),
                      "MPI_Scatterv (labels)");
        }
        out.centres = centres.cast<float>();
        out.cluster_sizes.assign(sizes.begin(), sizes.end());
    } else {
        out.centres = MatrixF(0, k);
    }
    out.distributed.seconds_broadcast = since(t);
    return c;
}

void label_points(Run& run, Ascents& asc, const Refinement& ref, const Numbering& c)
{
    const int k = run.k;
    const Index n_local = run.n_local;
    const long long total = run.total;
    const Options& options = run.options;
    const bool seeded = run.seeded, binned = run.binned, refine = ref.active();
    const MatrixF& mine_rows = run.mine_rows;
    const std::vector<double>&mid = run.mid, &scale = run.scale;
    DistributedResult& out = run.out;
    MPI_Comm comm = run.comm;
    Result& local = asc.local;
    const detail::BinSeeds& bins = asc.bins;
    const SeedAscent& coarse = asc.coarse;
    const SeedAscent& refined = ref.refined;
    const std::vector<int>&fine_labels = ref.fine_labels, &seed_labels = c.seed_labels;
    const std::vector<Index>& settled_bin = ref.settled_bin;
    const std::vector<char>& boundary = ref.boundary;
    const detail::BinSeeds& fine = ref.fine;
    const long long S = seeded ? coarse.modes.rows() : 0;
    if (seeded) {
        // Every point: its bin's seed's (or, on a boundary, its fine bin's seed's) mode, label and
        // ascent (docs/mpi.md, "Bin seeding").
        out.modes.resize(n_local, k);
        out.iterations.assign(static_cast<std::size_t>(n_local), 0);
        out.converged.assign(static_cast<std::size_t>(n_local), false);
        out.no_support.assign(static_cast<std::size_t>(n_local), false);
        const auto t_label = Clock::now();
        agree(comm, attempt([&] {
                  for (Index i = 0; i < n_local; ++i) {
                      const float* x = mine_rows.data() + i * k;
                      const Index j = bins.bin_of(x, mid, scale);
                      const bool on_boundary = refine && boundary[std::size_t(j)];
                      const Index f = on_boundary ? fine.seed_of(x, mid, scale) : -1;
                      // A fine seed that settled in a bin takes that bin's seed's mode and outcome (as in
                      // one process), its own steps added.
                      const Index via = f >= 0 ? settled_bin[std::size_t(f)] : j;
                      const bool own = f >= 0 && via < 0;
                      const SeedAscent& a = own ? refined : coarse;
                      const Index s = own ? f : bins.seed_of_bin[std::size_t(via)];
                      out.modes.row(i) = a.modes.row(s);
                      if (!out.labels.empty())
                          out.labels[std::size_t(i)] =
                              f >= 0 ? fine_labels[std::size_t(f)] : seed_labels[std::size_t(s)];
                      out.iterations[std::size_t(i)] =
                          a.state[std::size_t(3 * s)] + (f >= 0 && !own ? refined.state[std::size_t(3 * f)] : 0);
                      out.converged[std::size_t(i)] = a.state[std::size_t(3 * s + 1)] != 0;
                      out.no_support[std::size_t(i)] = a.state[std::size_t(3 * s + 2)] != 0;
                  }
              }));
        out.distributed.seconds_label = since(t_label);
    } else {
        out.modes = std::move(local.modes);
        out.iterations = std::move(local.iterations);
        out.converged = std::move(local.converged);
        out.no_support = std::move(local.no_support);
    }
    out.modes_without_support = 0;
    out.timing = local.timing;
    out.backend = local.backend;
    out.topology = local.topology;
    out.search = local.search;
    out.cutoff = local.cutoff;
    const long long F = refine ? refined.modes.rows() : 0;
    out.seed_count = seeded ? static_cast<Index>(S) : n_local;  // one process counts the bins' seeds
    if (seeded) {
        auto number = [](double v) {
            std::ostringstream o;
            o << v;
            return o.str();
        };
        out.seeding = "bins of " + number(options.bin_size) + " bandwidths (" + std::to_string(S) +
                      " seeds over all ranks), every point labelled by its bin's seed";
        if (binned)
            out.seeding += "; data binned at " + number(run.cells.side) + " bandwidths: " + std::to_string(total) +
                           " -> " + std::to_string(run.cells.seeds.rows()) + " weighted points";
        if (refine)
            out.seeding +=
                "; " + std::to_string(ref.n_boundary) + " boundary bins re-seeded at " + number(options.bin_size / 4) +
                " (" + std::to_string(F) + " seeds, " +
                std::to_string(std::count_if(settled_bin.begin(), settled_bin.end(), [](Index j) { return j >= 0; })) +
                " resolved by their trajectory)";
        else if (!options.refine_boundaries)
            out.seeding += " (no boundary refinement)";
    } else {
        out.seeding = "every point its own seed";
        if (run.wants_bins) {
            std::ostringstream o;
            o << " (bin seeding declined: coordinates reach " << run.extent / run.finest << " bins of " << run.finest
              << " bandwidths from the data's centre, beyond the 2^53 that integer bin keys hold exactly)";
            out.seeding += o.str();
        }
    }
    for (bool none : out.no_support)
        if (none) ++out.modes_without_support;
}

}  // namespace meanshift::mpi::detail

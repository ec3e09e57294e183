// bench_blobs: meanshift::cluster() with default options (truncated kernel, grid, bin seeding) on
// the blobs that apps/bench/peers/sklearn_blobs.py wrote, through the public API only. Prints the
// time, the method that ran and the ARI against the truth (and against an exact run with --vs-exact).
//   bench_blobs /tmp/blobs N K H [--exact] [--vs-exact] [--cutoff C] [--bin-size B] [--data-bin-size S] [--bin-data] [--all-points] [--no-refine] [--grid|--tree|--brute-force]
#include <meanshift/meanshift.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

double ari(const std::vector<int>& a, const std::vector<int>& b)
{
    std::map<std::pair<int, int>, double> nij;
    std::map<int, double> ai, bj;
    for (std::size_t i = 0; i < a.size(); ++i) {
        nij[{a[i], b[i]}] += 1;
        ai[a[i]] += 1;
        bj[b[i]] += 1;
    }
    auto c2 = [](double x) { return x * (x - 1) / 2; };
    double sij = 0, sa = 0, sb = 0;
    for (auto& p : nij) sij += c2(p.second);
    for (auto& p : ai) sa += c2(p.second);
    for (auto& p : bj) sb += c2(p.second);
    const double expected = sa * sb / c2(double(a.size()));
    const double maxv = 0.5 * (sa + sb);
    return maxv == expected ? 1.0 : (sij - expected) / (maxv - expected);
}

template <class T>
std::vector<T> read(const std::string& path, std::size_t count)
{
    std::vector<T> v(count);
    std::ifstream f(path, std::ios::binary);
    if (!f.read(reinterpret_cast<char*>(v.data()), std::streamsize(count * sizeof(T)))) {
        std::fprintf(stderr, "cannot read %zu values from %s\n", count, path.c_str());
        std::exit(2);
    }
    return v;
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 5) {
        std::fprintf(stderr, "usage: bench_blobs PREFIX N K H [--exact] [--vs-exact] [--cutoff C] [--bin-size B] "
                             "[--data-bin-size S] [--bin-data] [--all-points] [--no-refine] "
                             "[--grid|--tree|--brute-force] [--backend NAME]\n");
        return 2;
    }
    const std::string prefix = argv[1];
    const long n = std::atol(argv[2]);
    const int k = std::atoi(argv[3]);
    const double h = std::atof(argv[4]);
    meanshift::Options o;
    o.backend = "openmp";
    o.bandwidth = meanshift::Bandwidth::isotropic(h);
    bool vs_exact = false;
    for (int i = 5; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--exact")
            o.exact = true;
        else if (a == "--vs-exact")
            vs_exact = true;
        else if (a == "--bin-data")
            o.bin_data = true;
        else if (a == "--no-refine")
            o.refine_boundaries = false;
        else if (a == "--all-points")
            o.seeding = meanshift::Seeding::AllPoints;
        else if (a == "--cutoff" && i + 1 < argc)
            o.cutoff = std::atof(argv[++i]);
        else if (a == "--bin-size" && i + 1 < argc)
            o.bin_size = std::atof(argv[++i]);
        else if (a == "--data-bin-size" && i + 1 < argc)
            o.data_bin_size = std::atof(argv[++i]);
        else if (a == "--backend" && i + 1 < argc)
            o.backend = argv[++i];
        else if (a == "--brute-force")
            o.search = meanshift::NeighbourSearch::BruteForce;
        else if (a == "--grid")
            o.search = meanshift::NeighbourSearch::Grid;
        else if (a == "--tree")
            o.search = meanshift::NeighbourSearch::Tree;
        else {
            std::fprintf(stderr, "unknown argument %s\n", a.c_str());
            return 2;
        }
    }
    const auto x = read<float>(prefix + ".f32", std::size_t(n) * std::size_t(k));
    const auto truth = read<int>(prefix + ".labels", std::size_t(n));
    const auto t0 = std::chrono::steady_clock::now();
    const meanshift::Result r = meanshift::cluster(x.data(), n, k, o);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("meanshift %s h=%g n=%ld k=%d: time %.3f s (prepare %.3f, iterate %.3f, group %.3f) clusters %zu "
                "ARI vs truth %.4f, %.3g candidate pairs | cutoff %g, search: %s | seeding: %s, iterations %d\n",
                o.exact ? "exact" : "defaults", h, n, k, dt, r.timing.seconds_prepare, r.timing.seconds_iterate,
                r.timing.seconds_group, r.cluster_sizes.size(), ari(r.labels, truth), r.timing.pair_interactions,
                r.cutoff, r.search.c_str(), r.seeding.c_str(), r.timing.iterations);
    if (vs_exact) {
        meanshift::Options e = o;
        e.exact = true;
        const auto t1 = std::chrono::steady_clock::now();
        const meanshift::Result x2 = meanshift::cluster(x.data(), n, k, e);
        const double de = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
        double worst = 0;  // largest distance of a point's mode to its exact mode, bandwidths
        for (long i = 0; i < n; ++i) {
            double d2 = 0;
            for (int d = 0; d < k; ++d) {
                const double t = (double(r.modes(i, d)) - double(x2.modes(i, d))) / h;
                d2 += t * t;
            }
            worst = std::max(worst, d2);
        }
        std::printf("  exact: time %.3f s clusters %zu ARI vs truth %.4f | ARI(defaults, exact) %.4f, "
                    "largest |mode - exact mode| %.3g bandwidths\n",
                    de, x2.cluster_sizes.size(), ari(x2.labels, truth), ari(r.labels, x2.labels), std::sqrt(worst));
    }
    return 0;
}

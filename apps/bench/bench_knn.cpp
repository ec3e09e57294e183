// bench_knn: the k-nearest-neighbour search of the adaptive bandwidths on each backend,
// through the public API (knn_distances, adaptive_bandwidths with AdaptiveBandwidthOptions::backend),
// on data that peers/sklearn_knn.py wrote (raw float32, n × k) and timed with scikit-learn's
// NearestNeighbors in the same run.
//   bench_knn FILE N K RANK [--backend NAME]... [--reps R]
// Prints one JSON line per backend: seconds of knn_distances(data, RANK) (best of R) and of
// adaptive_bandwidths with the defaults, and the largest difference of d_RANK from the first
// backend's.
#include <meanshift/bandwidth_selection.hpp>
#include <meanshift/errors.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace ms = meanshift;

int main(int argc, char** argv)
{
    if (argc < 5) {
        std::fprintf(stderr, "usage: bench_knn FILE N K RANK [--backend NAME]... [--reps R]\n");
        return 2;
    }
    const std::string file = argv[1];
    const ms::Index n = std::stoll(argv[2]);
    const int k = std::stoi(argv[3]), rank = std::stoi(argv[4]);
    std::vector<std::string> backends;
    int reps = 2;
    for (int a = 5; a + 1 < argc; a += 2) {
        const std::string arg = argv[a];
        if (arg == "--backend")
            backends.push_back(argv[a + 1]);
        else if (arg == "--reps")
            reps = std::stoi(argv[a + 1]);
    }
    if (backends.empty()) backends = {"serial", "openmp"};
    ms::MatrixF data(n, k);
    std::ifstream in(file, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(data.data()), std::streamsize(data.size() * sizeof(float)))) {
        std::fprintf(stderr, "bench_knn: cannot read %lld x %d floats from %s\n", static_cast<long long>(n), k,
                     file.c_str());
        return 1;
    }
    using clock = std::chrono::steady_clock;
    auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
    std::vector<double> first;
    for (const std::string& b : backends) {
        try {
            double best = 1e300;
            std::vector<double> d;
            for (int r = 0; r < reps; ++r) {
                const auto t0 = clock::now();
                d = ms::knn_distances(data, rank, {}, b);
                best = std::min(best, since(t0));
            }
            if (first.empty()) first = d;
            double diff = 0;
            for (std::size_t i = 0; i < d.size(); ++i)
                diff = std::max(diff, std::abs(d[i] - first[i]) / (1e-12 + first[i]));
            ms::AdaptiveBandwidthOptions o;
            o.backend = b;
            const auto t0 = clock::now();
            const ms::MatrixD h = ms::adaptive_bandwidths(data, o);
            const double adaptive_s = since(t0);
            std::printf(
                "{\"backend\":\"%s\",\"n\":%lld,\"k\":%d,\"rank\":%d,\"knn_s\":%.4f,\"adaptive_default_s\":%.4f,"
                "\"adaptive_k\":%d,\"max_rel_diff_vs_first\":%.3g}\n",
                b.c_str(), static_cast<long long>(n), k, rank, best, adaptive_s, ms::default_adaptive_k(n), diff);
            std::fflush(stdout);
        } catch (const ms::Error& e) {
            std::printf("{\"backend\":\"%s\",\"error\":\"%s\"}\n", b.c_str(), e.what());
        }
    }
    return 0;
}

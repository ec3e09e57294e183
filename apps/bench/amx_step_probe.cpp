// On the CPU, the AMX probe: one exact step of all n points (every point a mode) in the
// openmp backend's GEMM form, with its products on AMX bf16 tiles (backends/openmp/gemm_amx_step.hpp,
// three-limb split, software-pipelined) against the AVX-512 unit with Eigen's float32 products, in one
// process, on the data `meanshift bench` draws (8 blobs, centres uniform in [−10, 10]^k, unit noise,
// bandwidth 1; --kernel diagonal: σ_id uniform in [0.5, 1.5]). The modes are grouped by blob and
// cut into blocks of each unit's size as the backend's grouping does. Prints seconds per step (best of --reps)
// and the largest deviation (max |coordinate|, in bandwidths) from a float64 step over --check modes.
// Links the internal archive: it calls the backend's block functions (gemm_step.hpp) directly.
// Usage: amx_step_probe [--n 16384] [--dims 64] [--kernel isotropic|diagonal] [--threads 2] [--reps 3] [--check 256]
//                       [--rows 256] [--modes 0]     (points per tile, modes per block; 0: each unit's own)
//                       [--units both|amx|eigen]     (which block functions run: amx alone for a profile)
#include "backends/openmp/cpu_features.hpp"
#include "backends/openmp/gemm_step.hpp"

#include <meanshift/backend.hpp>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <ctime>
#include <vector>

using namespace meanshift;
using openmp_detail::GemmData;
using openmp_detail::GemmTable;

namespace {

double cpu_seconds()
{
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Timing {
    double wall = 1e300, cpu = 1e300;  ///< best of the repetitions: wall seconds, CPU seconds of all threads
};

/// One step of every mode through `table` (best of reps); out = the new modes. The modes are in blob
/// order (groups, each its blob's, as the backend's pivots would make them); blocks of ≤ mpb modes (0:
/// the unit's own GemmTable::modes_per_block) never straddle two groups.
Timing time_step(const GemmTable& table, GemmData gd, int mpb, const std::vector<double>& modes,
                 const std::vector<std::int64_t>& groups, int threads, int reps, std::vector<double>& out)
{
    gd.modes_per_block = mpb > 0 ? mpb : table.modes_per_block;
    std::vector<std::int64_t> first;
    for (std::size_t g = 0; g + 1 < groups.size(); ++g)
        for (std::int64_t f = groups[g]; f < groups[g + 1]; f += gd.modes_per_block) first.push_back(f);
    first.push_back(groups.back());
    const int k = gd.k;
    const std::size_t scratch = table.scratch_bytes(gd);
    std::vector<unsigned char> buf(scratch * static_cast<std::size_t>(threads), 0), sup(modes.size() / k);
    out.assign(modes.size(), 0.0);
    const auto blocks = static_cast<std::int64_t>(first.size()) - 1;
    Timing best;
    for (int r = 0; r < reps; ++r) {
        const double c0 = cpu_seconds();
        const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
        {
            unsigned char* s = buf.data() + scratch * static_cast<std::size_t>(omp_get_thread_num());
#pragma omp for schedule(dynamic, 1)
            for (std::int64_t b = 0; b < blocks; ++b) {
                const std::int64_t f = first[std::size_t(b)];
                const int m = static_cast<int>(first[std::size_t(b) + 1] - f);
                table.run(gd, modes.data() + f * k, m, nullptr, -1, out.data() + f * k, sup.data() + f, s);
            }
        }
        best.wall = std::min(best.wall, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        best.cpu = std::min(best.cpu, cpu_seconds() - c0);
    }
    return best;
}

/// The float64 step of mode y over D (eq. 1 / 5-6).
void reference_step(const PreparedData& D, const double* y, double* out)
{
    const int k = D.k();
    const bool pp = D.model == KernelModel::PerPoint;
    std::vector<long double> num(k, 0.0L), den(k, 0.0L);
    for (Index i = 0; i < D.n(); ++i) {
        double d2 = 0;
        for (int d = 0; d < k; ++d) {
            const double t = y[d] - D.points(i, d);
            d2 += (pp ? D.precision(i, d) : 1.0) * t * t;
        }
        const double e = std::exp((pp ? D.log_weight[i] : 0.0) - 0.5 * d2);
        for (int d = 0; d < k; ++d) {
            const double w = pp ? D.precision(i, d) : 1.0;
            num[d] += static_cast<long double>(e * w * D.points(i, d));
            den[d] += static_cast<long double>(e * w);
        }
    }
    for (int d = 0; d < k; ++d) out[d] = static_cast<double>(num[d] / den[d]);
}

}  // namespace

int main(int argc, char** argv)
{
    Index n = 16384;
    int k = 64, threads = 2, reps = 3, check = 256, nblobs = 8, rows = 256, mpb = 0;
    std::string kernel = "isotropic", units = "both";
    for (int a = 1; a + 1 < argc; a += 2) {
        const std::string o = argv[a], v = argv[a + 1];
        if (o == "--n") n = std::atol(v.c_str());
        else if (o == "--dims") k = std::atoi(v.c_str());
        else if (o == "--kernel") kernel = v;
        else if (o == "--threads") threads = std::atoi(v.c_str());
        else if (o == "--reps") reps = std::atoi(v.c_str());
        else if (o == "--check") check = std::atoi(v.c_str());
        else if (o == "--rows") rows = std::atoi(v.c_str());
        else if (o == "--modes") mpb = std::atoi(v.c_str());
        else if (o == "--units" && (v == "both" || v == "amx" || v == "eigen")) units = v;
        else {
            std::fprintf(stderr, "unknown option %s\n", o.c_str());
            return 2;
        }
    }
    const bool pp = kernel == "diagonal";
    if (rows % 32 != 0 || rows <= 0 || mpb % 16 != 0 || mpb < 0) {
        std::fprintf(stderr, "--rows must be a multiple of 32 (the AMX unit's K-steps) and --modes of 16\n");
        return 2;
    }

    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> centre(-10.0, 10.0), sigma(0.5, 1.5);
    std::normal_distribution<double> noise(0.0, 1.0);
    std::vector<double> c(static_cast<std::size_t>(nblobs) * k);
    for (double& v : c) v = centre(rng);
    PreparedData D;
    D.model = pp ? KernelModel::PerPoint : KernelModel::Shared;
    D.points.resize(n, k);
    for (Index i = 0; i < n; ++i)
        for (int d = 0; d < k; ++d) D.points(i, d) = double(float(c[std::size_t(i % nblobs) * k + d] + noise(rng)));
    if (pp) {
        D.precision.resize(n, k);
        for (Index i = 0; i < n; ++i)
            for (int d = 0; d < k; ++d) {
                const double s = sigma(rng);
                D.precision(i, d) = double(float(1.0 / (s * s)));
            }
    }
    D.finalize();

    GemmData gd;
    gd.per_point = pp;
    gd.n = n;
    gd.k = k;
    gd.x = D.points_f.data();
    gd.w = pp ? D.precision_f.data() : nullptr;
    gd.c = pp ? D.log_weight_f.data() : nullptr;
    gd.rows_per_tile = rows;

    // Modes = the points, grouped by blob (as the backend's pivots would), blocks of ≤ 128 per blob.
    std::vector<Index> order;
    for (int b = 0; b < nblobs; ++b)
        for (Index i = b; i < n; i += nblobs) order.push_back(i);
    std::vector<double> modes(static_cast<std::size_t>(n) * k);
    for (Index t = 0; t < n; ++t)
        for (int d = 0; d < k; ++d) modes[std::size_t(t) * k + d] = D.points(order[std::size_t(t)], d);
    std::vector<std::int64_t> groups;
    for (int b = 0; b < nblobs; ++b) groups.push_back(b * (n / nblobs) + std::min<Index>(b, n % nblobs));
    groups.push_back(n);

    // float64 reference of `check` modes spread over the order.
    std::vector<Index> probe;
    for (int q = 0; q < check; ++q) probe.push_back(static_cast<Index>((static_cast<double>(q) + 0.5) * n / check));
    std::vector<double> ref(probe.size() * k);
#pragma omp parallel for num_threads(threads)
    for (std::size_t q = 0; q < probe.size(); ++q)
        reference_step(D, modes.data() + probe[q] * k, ref.data() + q * k);
    auto deviation = [&](const std::vector<double>& out) {
        double worst = 0;
        for (std::size_t q = 0; q < probe.size(); ++q)
            for (int d = 0; d < k; ++d)
                worst = std::max(worst, std::abs(out[std::size_t(probe[q]) * k + d] - ref[q * k + d]));
        return worst;
    };

    std::printf("{\"probe\":\"amx_step\",\"n\":%lld,\"k\":%d,\"kernel\":\"%s\",\"threads\":%d,\"pairs\":%.0f", static_cast<long long>(n), k,
                kernel.c_str(), threads, double(n) * double(n));
    std::vector<double> out;
    const auto* avx512 = units != "amx" && openmp_detail::kernel_for_width(16) ? openmp_detail::gemm_table_avx512() : nullptr;
    if (avx512) {
        const Timing t = time_step(*avx512, gd, mpb, modes, groups, threads, reps, out);
        std::printf(",\"eigen_avx512_s\":%.4f,\"eigen_avx512_cpu_s\":%.4f,\"eigen_avx512_dev\":%.3g", t.wall, t.cpu, deviation(out));
    }
    if (units == "eigen") {
    } else if (openmp_detail::amx_usable()) {
        const Timing t = time_step(*openmp_detail::gemm_table_amx(), gd, mpb, modes, groups, threads, reps, out);
        std::printf(",\"amx_s\":%.4f,\"amx_cpu_s\":%.4f,\"amx_dev\":%.3g", t.wall, t.cpu, deviation(out));
    } else {
        std::printf(",\"amx\":\"not usable here\"");
    }
    std::printf("}\n");
    return 0;
}

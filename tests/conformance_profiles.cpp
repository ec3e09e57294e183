// Conformance of the kernel profiles (kernel_profile.hpp): every profile × {shared, per-point}
// bandwidth (vMF: shared only, on unit vectors) × {exact, default options}, the backend under test
// against the float64 serial oracle with the same options: the same clusters, centres within 0.02
// bandwidths, and the positions after a fixed number of iterations. A backend whose
// supports_profile() is false skips the profile with a MESSAGE (and must refuse it with
// BackendUnavailable naming the profile).
//
// Tolerances. Epanechnikov and biweight weights are continuous at the support's edge, so a float32
// backend's step is within conf::step_tolerance of the oracle's. The flat profile's weight jumps
// from 1 to 0 at q = 1: a point that float32 rounding puts on the other side of the radius than
// float64 moves a mode by |x − m| / N ≤ 1/N bandwidths (N ≥ 30 points within the radius here), so
// flat positions are allowed 0.02 bandwidths per comparison, the tolerance of the centres.
#include "conformance.hpp"

#include <cmath>
#include <limits>

using namespace meanshift;
using namespace mstest;

namespace {

constexpr double kCentreTolerance = 0.02;  // bandwidths

bool backend_has(KernelProfile p)
{
    const std::string name = conf::backend();
    if (make_backend(name)->supports_profile(p)) return true;
    MESSAGE("backend " << name << " has no kernel profile '" << profile_name(p) << "': skipped");
    return false;
}

/// Largest |a − b| per entry over h (bandwidths), plus float32 output rounding.
double worst_bandwidths(const MatrixF& a, const MatrixF& b, double h)
{
    if (a.rows() != b.rows() || a.cols() != b.cols()) return 1e300;
    double w = 0;
    for (Index i = 0; i < a.rows(); ++i)
        for (Index d = 0; d < a.cols(); ++d) {
            const double slack = std::ldexp(std::abs(double(b(i, d))), -23) / h;
            w = std::max(w, std::abs(double(a(i, d)) - double(b(i, d))) / h - slack);
        }
    return w;
}

/// Same partition; centres (through the partition) within kCentreTolerance bandwidths.
void check_clusters(const Result& got, const Result& want, double h)
{
    CHECK(got.backend == conf::backend());
    CHECK(same_partition(got.labels, want.labels));
    REQUIRE(got.centres.rows() == want.centres.rows());
    if (!same_partition(got.labels, want.labels)) return;
    MatrixF mapped(want.centres.rows(), want.centres.cols());
    for (std::size_t i = 0; i < got.labels.size(); ++i) mapped.row(want.labels[i]) = got.centres.row(got.labels[i]);
    CHECK(worst_bandwidths(mapped, want.centres, h) <= kCentreTolerance);
}

/// Per-point standard deviations h·e^{u}, u uniform in [−0.2, 0.2].
Bandwidth per_point_bandwidth(std::mt19937_64& rng, Index n, int k, double h)
{
    std::uniform_real_distribution<double> u(-0.2, 0.2);
    MatrixD H(n, k);
    for (Index i = 0; i < n; ++i)
        for (int d = 0; d < k; ++d) H(i, d) = h * std::exp(u(rng));
    return Bandwidth::per_point(H);
}

/// Unit vectors of R^k around `nb` directions (the coordinate axes ± ...), noise sigma before the
/// normalisation.
MatrixF sphere_clusters(std::mt19937_64& rng, int k, const std::vector<int>& sizes, double sigma)
{
    std::normal_distribution<double> N(0.0, 1.0);
    Index n = 0;
    for (int s : sizes) n += s;
    MatrixF x(n, k);
    Index i = 0;
    for (std::size_t c = 0; c < sizes.size(); ++c)
        for (int j = 0; j < sizes[c]; ++j, ++i) {
            std::vector<double> v(static_cast<std::size_t>(k), 0.0);
            v[c % std::size_t(k)] = c < std::size_t(k) ? 1.0 : -1.0;
            double norm = 0;
            for (int d = 0; d < k; ++d) {
                v[std::size_t(d)] += sigma * N(rng);
                norm += v[std::size_t(d)] * v[std::size_t(d)];
            }
            for (int d = 0; d < k; ++d) x(i, d) = static_cast<float>(v[std::size_t(d)] / std::sqrt(norm));
        }
    return x;
}

Options profile_options(KernelProfile p, const Bandwidth& bw, bool exact, const std::string& name = conf::backend())
{
    Options o = conf::options(bw, name);
    o.kernel = p;
    o.exact = exact;
    return o;
}

/// The three comparisons for one data set and profile.
void compare(const MatrixF& data, KernelProfile p, const Bandwidth& bw, double h, bool exact)
{
    INFO("profile " << profile_name(p) << (exact ? ", exact" : ", default options") << ", n = " << data.rows()
                    << ", k = " << data.cols());
    const Result got = cluster(data, profile_options(p, bw, exact));
    const Result want = cluster(data, profile_options(p, bw, exact, "serial"));
    INFO("search: " << got.search << "; seeding: " << got.seeding);
    if (is_compact(p)) {
        CHECK(got.cutoff == 1.0);  // the support, exact
        CHECK(want.cutoff == 1.0);
    }
    check_clusters(got, want, h);

    // Positions after a fixed number of iterations, from every point.
    Options fo = profile_options(p, bw, exact);
    fo.fixed_iterations = 4;
    fo.grouping = GroupingMethod::None;
    fo.seeding = Seeding::AllPoints;
    Options fw = fo;
    fw.backend = "serial";
    const Result gf = cluster(data, fo);
    const Result wf = cluster(data, fw);
    const double tol = p == KernelProfile::Flat ? kCentreTolerance : 4 * conf::step_tolerance(20.0);
    INFO("positions after 4 iterations, tolerance " << tol << " bandwidths");
    CHECK(worst_bandwidths(gf.modes, wf.modes, h) <= tol);
    if (p == KernelProfile::VonMisesFisher)
        for (Index i = 0; i < gf.modes.rows(); ++i) CHECK(std::abs(double(gf.modes.row(i).norm()) - 1.0) <= 1e-5);
}

}  // namespace

TEST_CASE("conformance profiles: flat, Epanechnikov, biweight, Gaussian x shared and per-point x exact and default vs "
          "the oracle")
{
    auto rng = make_rng("conf-profiles-blobs");
    MSTEST_SEED_INFO();
    for (KernelProfile p : kernel_profiles()) {
        if (p == KernelProfile::VonMisesFisher || !backend_has(p)) continue;
        for (bool exact : {true, false}) {
            // Default options run their approximations (bins, grid) only beyond the exact budget.
            const int per_blob = exact ? 100 : 1200;
            const double h = 1.5;
            const Blobs b = make_blobs(rng, 2, {per_blob, per_blob * 3 / 4, per_blob / 2}, {0.5, 0.45, 0.4}, 6.0);
            compare(b.data, p, Bandwidth::isotropic(h), h, exact);
            compare(b.data, p, per_point_bandwidth(rng, b.data.rows(), 2, h), h, exact);
        }
    }
}

TEST_CASE("conformance profiles: k = 3 and 5 blobs, compact profiles, shared bandwidth, exact vs the oracle")
{
    auto rng = make_rng("conf-profiles-k");
    MSTEST_SEED_INFO();
    for (int k : {3, 5})
        for (KernelProfile p : kernel_profiles()) {  // every compact profile of the list
            if (!is_compact(p) || !backend_has(p)) continue;
            const double h = 2.0;
            const Blobs b = make_blobs(rng, k, {150, 110, 80}, {0.5, 0.45, 0.4}, 7.0);
            compare(b.data, p, Bandwidth::isotropic(h), h, true);
        }
}

TEST_CASE("conformance profiles: von Mises-Fisher on the circle and the sphere, exact and default vs the oracle")
{
    if (!backend_has(KernelProfile::VonMisesFisher)) return;
    auto rng = make_rng("conf-profiles-vmf");
    MSTEST_SEED_INFO();
    for (int k : {2, 3})
        for (bool exact : {true, false}) {
            const int per = exact ? 120 : 1500;
            const MatrixF x = sphere_clusters(rng, k, {per, per * 3 / 4, per / 2}, 0.15);
            const double h = 0.3;  // κ = 1/h² ≈ 11
            compare(x, KernelProfile::VonMisesFisher, Bandwidth::isotropic(h), h, exact);
        }
}

TEST_CASE("conformance profiles: a backend without a profile refuses it by name")
{
    for (KernelProfile p : kernel_profiles()) {
        if (make_backend(conf::backend())->supports_profile(p)) continue;
        const MatrixF x = MatrixF::Identity(3, 3);
        Options o = conf::options(Bandwidth::isotropic(1.0));
        o.kernel = p;
        CHECK_THROWS_KEYWORD(BackendUnavailable, cluster(x, o), conf::backend().c_str(), profile_name(p));
    }
}

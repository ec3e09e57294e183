// Blurring mean shift (blurring.hpp): X <- D^-1 W X each iteration, on any backend through
// Backend::bind + Binding::set_modes/step/read_modes, then the moved points grouped like modes.
#include "skeleton/src/core/blurring.hpp"

#include "skeleton/src/core/prepare.hpp"
#include "skeleton/src/core/sklearn_grouping.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace meanshift::detail {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0)
{
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// Change of the shift entropy below which the iterations stop (Carreira-Perpiñán 2006).
constexpr double kEntropyChange = 1e-8;

/// VonMisesFisher: one isotropic bandwidth (κ = 1/h²) and unit vectors (|x| = 1 within 1e-3).
void check_unit_rows(const Bandwidth& bw, const float* data, Index n, int k)
{
    if (bw.kind() != BandwidthKind::Isotropic)
        throw InvalidArgument("blurring with kernel 'vmf' needs an isotropic bandwidth (kappa = 1/h^2)");
    for (Index i = 0; i < n; ++i) {
        double s = 0;
        for (int d = 0; d < k; ++d) s += double(data[i * k + d]) * double(data[i * k + d]);
        if (!(std::fabs(std::sqrt(s) - 1.0) <= 1e-3))
            throw InvalidArgument("blurring with kernel 'vmf' takes unit vectors: row " + std::to_string(i) +
                                  " has norm " + std::to_string(std::sqrt(s)));
    }
}

}  // namespace

double shift_entropy(const std::vector<double>& shifts)
{
    const std::size_t n = shifts.size();
    if (n == 0) return 0;
    const double top = *std::max_element(shifts.begin(), shifts.end());
    const double bottom = *std::min_element(shifts.begin(), shifts.end());
    if (!(top > bottom)) return 0;  // one bin holds everything
    const std::size_t bins = std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(0.1 * double(n))));
    std::vector<std::size_t> count(bins, 0);
    for (double e : shifts) {
        // Bins of width max/B over [0, max]; the maximum itself falls in the last bin.
        const auto b = static_cast<std::size_t>(e / top * double(bins));
        ++count[std::min(b, bins - 1)];
    }
    double h = 0;
    for (std::size_t c : count)
        if (c > 0) {
            const double f = double(c) / double(n);
            h -= f * std::log(f);
        }
    return h;
}

bool blurring_converged(double entropy, double previous_entropy, double max_shift, double tolerance)
{
    if (max_shift <= tolerance) return true;
    return previous_entropy >= 0 && std::fabs(entropy - previous_entropy) < kEntropyChange;
}

Result run_blurring(PendingBackend& pending, std::unique_ptr<Binding>& binding, const float* data, Index n, int k,
                    const Options& options, const float* weights, const float* seeds)
{
    if (seeds) throw InvalidArgument("blurring mean shift moves the data themselves: explicit seeds are not taken");
    const bool vmf = options.kernel == KernelProfile::VonMisesFisher;
    if (vmf) check_unit_rows(options.bandwidth, data, n, k);
    const auto t_start = Clock::now();
    Result r;
    Prepared prep = prepare(data, n, k, options.bandwidth, weights);
    PreparedData base = std::move(prep.data);
    base.profile = options.kernel;
    if (vmf) {
        // The caller's unit sphere in prepared units ((x − centre) · scale, one scale = 1/h): the
        // backend projects every moved point back onto it after each step, as it does modes.
        base.sphere_origin = -(prep.centre.array() * prep.scale.array()).matrix();
        base.sphere_radius = prep.scale[0];
    }
    r.timing.seconds_validate = seconds_since(t_start);
    r.seeding = "all points (blurring)";
    r.seed_count = n;
    r.search = "brute force (blurring: the points move every iteration)";

    const auto t_bind0 = Clock::now();
    Backend& backend = pending.get();
    if (!backend.supports_profile(options.kernel))
        throw BackendUnavailable("backend '" + backend.name() + "' has no '" + profile_name(options.kernel) +
                                 "' kernel profile");
    // Compact profiles weigh 0 beyond their support; a backend that masks by cutoff2 gets it.
    base.cutoff2 =
        is_compact(options.kernel) && backend.supports_cutoff() ? 1.0 : std::numeric_limits<double>::infinity();
    r.cutoff = is_compact(options.kernel) ? 1.0 : std::numeric_limits<double>::infinity();
    r.backend = backend.name();
    r.topology = backend.resolve_topology(options.topology, base);
    r.timing.seconds_bind += seconds_since(t_bind0);
    r.timing.seconds_prepare = seconds_since(t_start);

    const bool fixed = options.fixed_iterations.has_value();
    const int max_it = fixed ? *options.fixed_iterations : options.max_iterations;
    MatrixD X = base.points, next(n, k);
    std::vector<double> shift(static_cast<std::size_t>(n));
    StepReport report;
    double previous_entropy = -1;
    bool converged = false;
    int it = 0;
    const auto t_iter = Clock::now();
    double bind_seconds = 0;
    while (it < max_it && !(converged && !fixed)) {
        // The current points become the data of this iteration; H_i and sample weights keep their
        // rows, so they travel with their points.
        const auto t_bind = Clock::now();
        auto D = std::make_shared<PreparedData>(base);
        D->points = X;
        D->points_f = X.cast<float>();
        binding.reset();
        binding = backend.bind(D, r.topology);
        binding->set_modes(X.data(), n, nullptr);
        bind_seconds += seconds_since(t_bind);
        binding->step(0.0, false, report);
        if (report.kernel_seconds > 0) r.timing.seconds_kernels += report.kernel_seconds;
        r.timing.pair_interactions += report.pairs >= 0 ? report.pairs : double(n) * double(n);
        binding->read_modes(next.data());
        double max_shift = 0;
        for (Index i = 0; i < n; ++i) {
            shift[std::size_t(i)] = (next.row(i) - X.row(i)).norm();
            max_shift = std::max(max_shift, shift[std::size_t(i)]);
        }
        X.swap(next);
        ++it;
        const double entropy = shift_entropy(shift);
        converged = blurring_converged(entropy, previous_entropy, max_shift, options.tolerance);
        previous_entropy = entropy;
        if (options.progress && !options.progress(it, converged ? 0 : n, n))
            throw Error("cancelled by the progress callback");
    }
    r.timing.iterations = it;
    r.timing.seconds_bind += bind_seconds;
    r.timing.seconds_iterate = seconds_since(t_iter) - bind_seconds;

    // Group the moved points; every original point takes its moved position's group.
    const auto t_group = Clock::now();
    Grouping g;
    if (options.grouping == GroupingMethod::ScikitLearn) {
        g = group_like_sklearn(X, {}, base.points, options.merge_eps);
    } else if (options.grouping != GroupingMethod::None) {
        g = group_modes(X, options.merge_eps, options.grouping);
    } else {
        g.centres.resize(0, k);
    }
    r.timing.seconds_grouping = seconds_since(t_group);
    const auto t_label = Clock::now();
    r.labels = std::move(g.labels);
    r.cluster_sizes = std::move(g.sizes);
    r.centres = from_prepared(prep, g.centres);
    r.modes = from_prepared(prep, X);
    r.iterations.assign(static_cast<std::size_t>(n), it);
    r.converged.assign(static_cast<std::size_t>(n), fixed || converged);
    r.no_support.assign(static_cast<std::size_t>(n), false);
    r.timing.seconds_label = seconds_since(t_label);
    r.timing.seconds_group = seconds_since(t_group);
    r.timing.seconds_total = seconds_since(t_start);
    r.timing.peak_memory_bytes = peak_memory_bytes();
    return r;
}

}  // namespace meanshift::detail

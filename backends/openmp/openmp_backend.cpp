// openmp: Alg. 3/4 of Malysiak & Handmann on CPU threads and SIMD lanes, float32.
//   PPU  = one OpenMP thread (z = topology.ppus, BackendOptions::threads or all of them);
//   PU   = one float32 SIMD lane (τ = 16 for AVX-512, 8 for AVX2, 4 for SSE2/generic);
//   vPPU = f_vppu consecutive lanes; f_load of them share the n-loop.
// Threads take blocks of modes dynamically; the SIMD kernels (kernel_*.cpp) advance one block.
// See docs/backend-openmp.md.
#include "backends/common/host_binding.hpp"
#include "backends/common/partial_sums.hpp"
#include "backends/factory.hpp"
#include "backends/openmp/calibration_openmp.hpp"
#include "backends/openmp/cpu_features.hpp"
#include "backends/openmp/gemm_step.hpp"
#include "backends/openmp/openmp_binding.hpp"
#include "skeleton/src/core/host_nearest.hpp"

#include <meanshift/errors.hpp>

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace meanshift {
namespace {

using openmp_detail::KernelData;
using openmp_detail::KernelTable;
using openmp_detail::kMaxSimdK;
using openmp_detail::OpenMPBinding;

/// Smallest run (points) that measures an uncalibrated configuration (~0.1-0.3 s once per machine,
/// build, threads and k bucket); smaller runs take the fixed rule until a larger one or
/// `meanshift calibrate` has measured it.
constexpr Index kCalibrateMinPoints = 4096;

/// amx: the GEMM form's products run on AMX tiles (gemm_step_amx.cpp), "AVX-512+AMX".
std::string isa_label(const KernelTable& t, bool amx)
{
    return std::string(t.isa) + (amx ? "+AMX" : "") + " (" + std::to_string(t.width) + " float lanes)";
}

std::size_t physical_memory()
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : 0;
}

DeviceInfo host_device(int threads, const KernelTable& widest, bool amx)
{
    DeviceInfo d;
    d.name = std::to_string(threads) + (threads == 1 ? " thread, " : " threads, ") + isa_label(widest, amx);
    d.kind = "cpu";
    d.compute_units = threads;
    d.pus_per_ppu = widest.width;
    d.global_memory = physical_memory();
    return d;
}

class OpenMPBackend final : public Backend {
public:
    explicit OpenMPBackend(const BackendOptions& options) : options_(options)
    {
        if (options.threads < 0)
            throw InvalidArgument("openmp backend: threads must be >= 0 (0 = all), got " +
                                  std::to_string(options.threads));
        // 100,000 threads overflowed libgomp's stack in GOMP_parallel: refuse up front.
        check_thread_count("openmp backend", "threads", options.threads);
        widest_ = widest_allowed(options.openmp.isa);
        // AMX: by default where usable (it needs the AVX-512 kernels); "amx" insists, any other isa forbids it.
        amx_ = (options.openmp.isa == "auto" || options.openmp.isa == "amx") && widest_->width == 16 &&
               openmp_detail::amx_usable();
        if (options.openmp.isa == "amx" && !amx_)
            throw InvalidArgument("openmp backend: isa 'amx' is not compiled in or this CPU / OS does not run it");
    }

    std::string name() const override { return "openmp"; }

    std::vector<DeviceInfo> devices() const override { return {host_device(default_threads(), *widest_, amx_)}; }

    Topology resolve_topology(const Topology& requested, const PreparedData& data) const override
    {
        if (data.n() < 1 || data.k() < 1)
            throw InvalidArgument("openmp backend: data must have n >= 1 points and k >= 1 dimensions");
        Topology t = requested;
        if (t.ppus == 0) {
            t.ppus = default_threads();
        } else if (t.ppus > max_threads()) {
            // z is the number of OpenMP threads here: the same limit as BackendOptions::threads.
            check_thread_count("openmp backend", "z (ppus)", t.ppus);
        } else if (options_.threads > 0 && options_.threads != t.ppus) {
            throw InvalidArgument("openmp backend: z (ppus) = " + std::to_string(t.ppus) +
                                  " conflicts with threads = " + std::to_string(options_.threads) +
                                  "; both name the number of OpenMP threads, set only one");
        }
        if (t.pus_per_ppu == 0) t.pus_per_ppu = widest_->width;
        if (t.f_vppu == 0) t.f_vppu = 1;  // one mode per lane: the fast path
        if (t.f_load == 0) t.f_load = t.f_vppu;
        validate_topology(t, name());
        if (!openmp_detail::kernel_for_width(t.pus_per_ppu)) {
            std::string widths;
            for (const KernelTable* k : openmp_detail::usable_kernels())
                widths += (widths.empty() ? "" : ", ") + std::to_string(k->width) + " (" + k->isa + ")";
            throw InvalidArgument("invalid topology for backend 'openmp' (" + t.to_string() +
                                  "): tau must be a SIMD width in float32 lanes that this CPU runs: " + widths +
                                  ", or 0 for the widest");
        }
        return t;
    }

    bool supports_cutoff() const override { return true; }
    /// Every profile: the compact ones in the direct SIMD kernels (never the GEMM forms), vMF as the
    /// Gaussian with the sphere projection of HostBinding::step.
    bool supports_profile(KernelProfile) const override { return true; }

    int max_neighbours() const override { return std::numeric_limits<int>::max(); }
    /// The host search (kd-tree or brute force, detail::HostNearest) with the queries shared
    /// among the threads in chunks.
    MatrixD nearest_distances(const MatrixF& points, const MatrixF& queries, int count) override
    {
        detail::check_nearest_arguments(points, queries, count, max_neighbours(), "openmp backend");
        const detail::HostNearest search(points);
        MatrixD out(queries.rows(), count);
        const Index m = queries.rows(), chunk = 256;
#pragma omp parallel for schedule(dynamic, 1) num_threads(default_threads())
        for (Index b = 0; b < m; b += chunk) search.query_rows(queries, count, b, std::min(m, b + chunk), out);
        return out;
    }

    std::unique_ptr<Binding> bind(std::shared_ptr<const PreparedData> data, const Topology& topology) override
    {
        if (!data) throw InvalidArgument("openmp backend: bind() without data");
        // Resolving is idempotent for a resolved topology and fills defaults for a partial one.
        const Topology t = resolve_topology(topology, *data);
        // PairForm::Auto with the default lanes: the form (and AMX or Eigen products) measured on this
        // machine (calibration_openmp.hpp), first measured by a run of >= kCalibrateMinPoints points.
        // (Compact profiles run the direct form only: nothing to calibrate.)
        if (options_.pair_form == PairForm::Auto && t.f_vppu == 1 && t.pus_per_ppu == widest_->width &&
            data->k() <= kMaxSimdK && !is_compact(data->profile)) {
            const openmp_detail::AutoForm f =
                auto_form(t.ppus, data->model == KernelModel::PerPoint, data->k(), data->n() >= kCalibrateMinPoints);
            return std::make_unique<OpenMPBinding>(std::move(data), t, options_.pair_form, f.amx, f.gemm);
        }
        return std::make_unique<OpenMPBinding>(std::move(data), t, options_.pair_form, amx_);
    }

    /// openmp_detail::calibrate(): the calibration at k with this backend's threads and isa.
    std::optional<CalibrationEntry> calibration(int k, bool per_point) const
    {
        if (k < 1 || k > kMaxSimdK) return std::nullopt;  // the direct SIMD kernels stop there
        return auto_form(default_threads(), per_point, k, true).entry;
    }

private:
    /// What PairForm::Auto takes with `threads` threads at k (the calibration, or the unit's min_k).
    openmp_detail::AutoForm auto_form(int threads, bool per_point, int k, bool may_measure) const
    {
        const openmp_detail::GemmTable* unit =
            widest_->width == 16  ? (amx_ ? openmp_detail::gemm_table_amx() : openmp_detail::gemm_table_avx512())
            : widest_->width == 8 ? openmp_detail::gemm_table_avx2()
                                  : openmp_detail::gemm_table_generic();
        return openmp_detail::calibrated_auto_form(options_, isa_label(*widest_, amx_), threads, per_point, k,
                                                   k >= unit->min_k, amx_, may_measure);
    }

    /// threads, else OpenMP's default (OMP_NUM_THREADS), never above max_threads().
    int default_threads() const
    {
        return options_.threads > 0 ? options_.threads : std::min(omp_get_max_threads(), max_threads());
    }

    /// The kernel table OpenMPTuning::isa names ("auto" = the widest this CPU runs).
    static const KernelTable* widest_allowed(const std::string& isa)
    {
        const auto& usable = openmp_detail::usable_kernels();
        if (isa == "auto") return usable.front();
        if (isa == "amx")
            return openmp_detail::kernel_for_width(16) ? openmp_detail::kernel_table_avx512() : usable.front();
        const KernelTable* want = isa == "avx512"    ? openmp_detail::kernel_table_avx512()
                                  : isa == "avx2"    ? openmp_detail::kernel_table_avx2()
                                  : isa == "generic" ? openmp_detail::kernel_table_generic()
                                                     : nullptr;
        if (!want)
            throw InvalidArgument("openmp backend: unknown isa '" + isa + "' (auto, amx, avx512, avx2, generic)");
        if (std::find(usable.begin(), usable.end(), want) == usable.end())
            throw InvalidArgument("openmp backend: isa '" + isa + "' is not compiled in or this CPU does not run it");
        return want;
    }

    BackendOptions options_;
    const KernelTable* widest_ = nullptr;
    bool amx_ = false;  // the GEMM form's AVX-512 unit with AMX products (gemm_step_amx.cpp)
};

}  // namespace

std::optional<CalibrationEntry> openmp_detail::calibrate(const BackendOptions& options, int k, bool per_point)
{
    return OpenMPBackend(options).calibration(k, per_point);
}

namespace detail {
BackendFactory openmp_factory()
{
    BackendFactory f;
    f.name = "openmp";
    // Always usable: the generic kernel runs on any CPU.
    f.probe = [] {
        return usable_status("openmp", {host_device(omp_get_max_threads(), *openmp_detail::usable_kernels().front(),
                                                    openmp_detail::amx_usable())});
    };
    f.create = [](const BackendOptions& o) { return std::unique_ptr<Backend>(new OpenMPBackend(o)); };
    return f;
}
}  // namespace detail

}  // namespace meanshift
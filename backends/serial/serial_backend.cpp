// serial: a plain float64 implementation of Alg. 1 driven by Alg. 4. It is the oracle every other
// backend is tested against, so it favours clarity and accuracy over speed.
#include "backends/common/host_binding.hpp"
#include "backends/factory.hpp"
#include "skeleton/src/core/host_nearest.hpp"

#include <meanshift/errors.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

namespace meanshift {
namespace {

/// Alg. 1 in float64, one mode after the other.
class SerialBinding final : public detail::HostBinding {
public:
    using HostBinding::HostBinding;

private:
    void advance(const double* in, double* out, unsigned char* supported, Index count) override
    {
        const int k = data_->k();
        // Truncated kernel: a pair with D² > cutoff2 has weight 0; with a grid each mode visits the
        // rows of its own ±1 cell neighbourhood only (every point within the cutoff lies there).
        std::vector<double> s0(static_cast<std::size_t>(k)), s1(static_cast<std::size_t>(k));
        std::vector<Index> ranges;
        pairs_ = 0;
        for (Index q = 0; q < count; ++q) {
            const double* y = in + q * k;
            pairs_ += static_cast<double>(mode_sums(y, ranges, s0.data(), s1.data()));
            supported[q] = detail::finish_mode(s0.data(), 1, s1.data(), 1, 1.0, y, out + q * k, k) ? 1 : 0;
        }
    }
};

class SerialBackend final : public Backend {
public:
    std::string name() const override { return "serial"; }

    std::vector<DeviceInfo> devices() const override { return {host_device()}; }

    static DeviceInfo host_device()
    {
        DeviceInfo d;
        d.name = "host CPU, one thread, float64";
        d.kind = "cpu";
        d.compute_units = 1;
        d.pus_per_ppu = 1;
        return d;
    }

    Topology resolve_topology(const Topology& requested, const PreparedData&) const override
    {
        // One PPU with one PU: Alg. 1 exactly. Anything else is a request this backend cannot honour.
        Topology t;
        t.ppus = t.pus_per_ppu = t.f_vppu = t.f_load = 1;
        auto check = [](int v, const char* what) {
            if (v != 0 && v != 1)
                throw InvalidArgument(std::string("serial backend runs one PPU with one PU; ") + what +
                                      " must be 1 (or 0 for the default), got " + std::to_string(v));
        };
        check(requested.ppus, "z (ppus)");
        check(requested.pus_per_ppu, "tau (pus_per_ppu)");
        check(requested.f_vppu, "f_vppu");
        check(requested.f_load, "f_load");
        validate_topology(t, name());
        return t;
    }

    bool supports_cutoff() const override { return true; }
    /// Every profile, in float64 (HostBinding::mode_sums, profile_weight()).
    bool supports_profile(KernelProfile) const override { return true; }

    int max_neighbours() const override { return std::numeric_limits<int>::max(); }
    /// The host search (kd-tree or brute force, float64 distances) on one thread: the oracle.
    MatrixD nearest_distances(const MatrixF& points, const MatrixF& queries, int count) override
    {
        detail::check_nearest_arguments(points, queries, count, max_neighbours(), "serial backend");
        MatrixD out(queries.rows(), count);
        detail::HostNearest(points).query_rows(queries, count, 0, queries.rows(), out);
        return out;
    }

    std::unique_ptr<Binding> bind(std::shared_ptr<const PreparedData> data, const Topology& topology) override
    {
        if (!data) throw InvalidArgument("serial backend: bind() without data");
        const Topology t = resolve_topology(topology, *data);
        return std::make_unique<SerialBinding>(std::move(data), t);
    }
};

}  // namespace

namespace detail {
BackendFactory serial_factory()
{
    BackendFactory f;
    f.name = "serial";
    f.probe = [] { return usable_status("serial", {SerialBackend::host_device()}); };
    f.create = [](const BackendOptions& o) {
        // threads only sizes the library's host passes here, but a value no machine can start is
        // refused as the openmp backend refuses it.
        check_thread_count("serial backend", "threads", o.threads);
        return std::unique_ptr<Backend>(new SerialBackend());
    };
    return f;
}
}  // namespace detail

}  // namespace meanshift

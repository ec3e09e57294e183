#pragma once
// The conformance suite: the same tests run against every backend (chosen by --backend=NAME or
// MEANSHIFT_TEST_BACKEND, see conformance_main.cpp) and compared with the float64 serial backend
// (the oracle) and with the independent reference of reference.hpp.
//
// Tolerance of one step, in bandwidth units (prepared coordinates are whitened for a shared H, so
// one unit is one bandwidth; the per-point test data have bandwidths within e^{±0.35} of 1):
//
//     step_tolerance(R) = 1e-4 + 1e-5 · R
//
// where R is the largest |coordinate| in prepared units. Why: a float32 backend rounds every
// coordinate to 2^-24 R ≈ 6e-8 R, and accumulates Σ e_i x_i over up to ~10^4 non-negligible terms;
// the rounding of a running sum grows at most like √(terms) in practice, i.e. ≤ 100 × 6e-8 R ≈
// 1e-5 R. exp() in float32 (or exp2/ex2.approx, relative error ≤ 2^-22) perturbs each weight by
// ~1e-6 relative, which moves the weighted mean by ≤ 1e-6 of the kernel's spread (a few
// bandwidths): covered by the constant 1e-4, which is also the "1e-4 of the bandwidth per step"
// the project promises. A float64 backend meets it with many orders of magnitude to spare.

#include "checks.hpp"
#include "reference.hpp"
#include "step_support.hpp"

#include <meanshift/meanshift.hpp>

#include <limits>
#include <set>
#include <string>
#include <vector>

namespace conf {

using namespace meanshift;

/// The backend under test (set once by main()).
const std::string& backend();

inline double step_tolerance(double R)
{
    return 1e-4 + 1e-5 * R;
}

/// Largest |coordinate| of data and queries, in prepared units.
inline double extent(const MatrixD& a, const MatrixD& b)
{
    double r = 0;
    if (a.size()) r = std::max(r, a.cwiseAbs().maxCoeff());
    if (b.size()) r = std::max(r, b.cwiseAbs().maxCoeff());
    return r;
}

/// Topologies to test for `be` on data D: the default plus non-default f_vppu/f_load requests
/// (f_vppu = τ with f_load = 1 and = τ, f_vppu = 1, f_vppu = 2, f_vppu = τ/2 with f_load = τ/4,
/// z = 1 and z = 3 PPUs, τ/2 PUs per PPU). A request the backend rejects with InvalidArgument (a documented backend limit)
/// is left out; an accepted one must keep the requested values. Returned resolved and distinct.
inline std::vector<Topology> topologies(const Backend& be, const PreparedData& D)
{
    std::vector<Topology> out;
    std::set<std::string> seen;
    const Topology def = be.resolve_topology(Topology{}, D);
    CHECK_NOTHROW(validate_topology(def, be.name()));
    out.push_back(def);
    seen.insert(def.to_string());
    const int tau = def.pus_per_ppu;
    auto req = [](int z, int f_vppu, int f_load) { return mstest::topo(z, 0, f_vppu, f_load); };
    std::vector<Topology> asks{req(0, tau, 1), req(0, tau, tau), req(0, 1, 1), req(1, 0, 0)};
    if (tau % 2 == 0) asks.push_back(req(0, 2, 1));
    if (tau % 4 == 0) asks.push_back(req(0, tau / 2, tau / 4));
    asks.push_back(req(3, 0, 0));  // a few PPUs that must loop over many modes
    if (tau % 2 == 0) {  // a narrower PPU (τ/2), e.g. a smaller work-group or block
        Topology t = req(0, 1, 1);
        t.pus_per_ppu = tau / 2;
        asks.push_back(t);
    }
    for (const Topology& ask : asks) {
        Topology got;
        try {
            got = be.resolve_topology(ask, D);
        } catch (const InvalidArgument& e) {
            MESSAGE("backend " << be.name() << " declines " << ask.to_string() << ": " << std::string(e.what()));
            continue;
        }
        INFO("requested " << ask.to_string() << ", resolved " << got.to_string());
        if (ask.f_vppu) CHECK(got.f_vppu == ask.f_vppu);
        if (ask.f_load) CHECK(got.f_load == ask.f_load);
        if (ask.ppus) CHECK(got.ppus == ask.ppus);
        if (ask.pus_per_ppu) CHECK(got.pus_per_ppu == ask.pus_per_ppu);
        CHECK_NOTHROW(validate_topology(got, be.name()));
        if (seen.insert(got.to_string()).second) out.push_back(got);
    }
    return out;
}

/// One backend step of Q (count × k) on bound data, output poisoned with NaN.
using mstest::step;

/// Options for the backend under test (or the oracle with backend = "serial").
inline Options options(const Bandwidth& bw, const std::string& name = backend())
{
    Options o;
    o.backend = name;
    o.bandwidth = bw;
    o.tolerance = 1e-4;
    o.max_iterations = 300;
    // A backend without a truncated kernel runs the exact one (Backend::supports_cutoff): the oracle
    // then runs it too, so that the two stay comparable.
    static const bool truncates = make_backend(backend())->supports_cutoff();
    if (!truncates) o.cutoff = std::numeric_limits<double>::infinity();
    return o;
}

}  // namespace conf

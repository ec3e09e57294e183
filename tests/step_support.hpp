#pragma once
// Helpers for tests that drive a backend one step at a time (tests/backend/*.cpp, the conformance
// suite, topology and cost-model tests): topology requests, one poisoned step, the float64 serial
// oracle and the deviation from it, the "is this backend usable here" skip.

#include "test_support.hpp"

#include <meanshift/meanshift.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>

namespace mstest {

/// A topology request (0 = let the backend choose): z PPUs of τ PUs each, f_vppu PUs per vPPU,
/// f_load of them sharing the n-loop (topology.hpp).
inline meanshift::Topology topo(int z, int tau, int f_vppu, int f_load)
{
    meanshift::Topology t;
    t.ppus = z;
    t.pus_per_ppu = tau;
    t.f_vppu = f_vppu;
    t.f_load = f_load;
    return t;
}

/// Shares a copy of D for binding (a binding holds shared ownership of its data).
inline std::shared_ptr<const meanshift::PreparedData> share(const meanshift::PreparedData& D)
{
    return std::make_shared<const meanshift::PreparedData>(D);
}

/// One step of Q (count × k, prepared units) on a binding. The output is poisoned with NaN, so an
/// entry the backend did not write fails every comparison (max_abs_diff treats NaN as infinite).
inline meanshift::MatrixD step(meanshift::Binding& b, const meanshift::MatrixD& Q,
                               meanshift::StepReport* report = nullptr)
{
    meanshift::MatrixD out = meanshift::MatrixD::Constant(Q.rows(), Q.cols(), std::nan(""));
    b.step_once(Q.data(), out.data(), Q.rows(), report);
    return out;
}

/// Resolves `want`, binds D and runs one step of Q; the resolved topology goes to *used if given.
inline meanshift::MatrixD run_step(meanshift::Backend& b, const meanshift::PreparedData& D,
                                   const meanshift::Topology& want, const meanshift::MatrixD& Q,
                                   meanshift::Topology* used = nullptr)
{
    const meanshift::Topology t = b.resolve_topology(want, D);
    if (used) *used = t;
    auto binding = b.bind(share(D), t);
    return step(*binding, Q);
}

/// The same step on the float64 serial backend (the oracle).
inline meanshift::MatrixD oracle_step(const meanshift::PreparedData& D, const meanshift::MatrixD& Q)
{
    auto s = meanshift::make_backend("serial");
    return run_step(*s, D, meanshift::Topology{}, Q);
}

/// Largest deviation of one step of backend `name` (options o) from the oracle, in prepared units
/// (= bandwidths for the shared model); NaN (an unwritten entry) counts as infinite.
inline double deviation(const std::string& name, const meanshift::PreparedData& D, const meanshift::MatrixD& Q,
                        const meanshift::Topology& want, const meanshift::BackendOptions& o = {},
                        meanshift::Topology* used = nullptr)
{
    auto b = meanshift::make_backend(name, o);
    return max_abs_diff(run_step(*b, D, want, Q, used), oracle_step(D, Q));
}

/// True when backend `name` is usable here; otherwise says why (the caller then skips its test).
inline bool backend_usable(const std::string& name)
{
    for (const auto& s : meanshift::list_backends())
        if (s.name == name) {
            if (!s.usable) MESSAGE(name << " backend not usable here, test skipped: " << s.reason);
            return s.usable;
        }
    return false;
}

}  // namespace mstest

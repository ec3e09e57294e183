#pragma once
// Internal: the parts of one Alg. 3 step that the CPU backends (serial, openmp) share around their
// own pair arithmetic: which points a mode visits (its candidate list, or all n points) and the
// final update of the mode.

#include <meanshift/backend.hpp>

namespace meanshift::detail {

/// Calls visit(i) for every point i that mode q sums over: the candidates of q when
/// req.candidates is set (truncated kernel; the list must be valid), else all n points (exact
/// Gaussian).
template <class Visit>
void for_each_point(const StepRequest& req, Index q, Index n, Visit&& visit)
{
    if (req.candidates) {
        const CandidateList& c = *req.candidates;
        for (Index j = c.offsets[q]; j < c.offsets[q + 1]; ++j) visit(c.indices[j]);
    } else {
        for (Index i = 0; i < n; ++i) visit(i);
    }
}

/// Alg. 3 line 20 for one mode (k dimensions): out = S1 / S0, the weighted mean, per dimension;
/// the old position y where S0 = 0 (no point within reach: the mode stays).
inline void finish_mode(const double* s0, const double* s1, const double* y, double* out, int k)
{
    for (int d = 0; d < k; ++d) out[d] = s0[d] > 0 ? s1[d] / s0[d] : y[d];
}

}  // namespace meanshift::detail

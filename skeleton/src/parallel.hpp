#pragma once
// Internal: the data-parallel loops of the host's preparation and post-processing (whitening,
// gathers into the backends' order, conversions back to data units). They are memory-bound passes
// over n × k values whose cost is mostly first-touch page faults; on a 16-core host a photo's
// passes took ~25 ms on one thread. With OpenMP (the library is built with it whenever the openmp
// backend is) they run on all threads when the pass is large enough to pay for the fork.

#include <meanshift/types.hpp>

#define MS_PRAGMA(x) _Pragma(#x)
#if defined(_OPENMP)
/// `for` loop over independent iterations, parallel when `values` ≥ kParallelMinValues.
#define MS_PARALLEL_FOR(values) MS_PRAGMA(omp parallel for schedule(static) if ((values) >= ::meanshift::detail::kParallelMinValues))
/// The same, or-reducing the bool `flag` over the iterations.
#define MS_PARALLEL_FOR_OR(values, flag) \
    MS_PRAGMA(omp parallel for schedule(static) reduction(|| : flag) if ((values) >= ::meanshift::detail::kParallelMinValues))
#else
#define MS_PARALLEL_FOR(values)
#define MS_PARALLEL_FOR_OR(values, flag)
#endif

namespace meanshift::detail {

/// Smallest pass (values touched) worth a parallel loop: below it the fork costs more than it saves.
inline constexpr Index kParallelMinValues = Index{1} << 17;

}  // namespace meanshift::detail

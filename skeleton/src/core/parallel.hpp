#pragma once
// Internal: the data-parallel loops of the host's preparation and post-processing (whitening,
// gathers into the backends' order, conversions back to data units). They are memory-bound passes
// over n × k values whose cost is mostly first-touch page faults; on a 16-core host a photo's
// passes took ~25 ms on one thread. With OpenMP (the library is built with it whenever the openmp
// backend is) they run on the threads the caller allows (BackendOptions::threads, see HostThreads)
// when the pass is large enough to pay for the fork.

#include <meanshift/tuning.hpp>
#include <meanshift/types.hpp>

#include <algorithm>

#if defined(_OPENMP)
#include <omp.h>
#endif

#define MS_PRAGMA(x) _Pragma(#x)
#if defined(_OPENMP)
/// `for` loop over independent iterations, parallel when `values` ≥ kParallelMinValues.
#define MS_PARALLEL_FOR(values)                                                                                        \
    MS_PRAGMA(omp parallel for schedule(static) num_threads(::meanshift::detail::host_threads())          \
                  if ((values) >= ::meanshift::detail::kParallelMinValues))
/// The same, or-reducing the bool `flag` over the iterations.
#define MS_PARALLEL_FOR_OR(values, flag)                                                                               \
    MS_PRAGMA(omp parallel for schedule(static) reduction(|| : flag)                                        \
                  num_threads(::meanshift::detail::host_threads())                                          \
                  if ((values) >= ::meanshift::detail::kParallelMinValues))
#else
#define MS_PARALLEL_FOR(values)
#define MS_PARALLEL_FOR_OR(values, flag)
#endif

namespace meanshift::detail {

/// Smallest pass (values touched) worth a parallel loop: below it the fork costs more than it saves.
inline constexpr Index kParallelMinValues = Index{1} << 17;

/// The threads of this thread's host passes: HostThreads' value, else all (OpenMP's default).
inline int& host_threads_limit() noexcept
{
    thread_local int limit = 0;
    return limit;
}
/// Never more than max_threads() (tuning.hpp): a backend that ignores BackendOptions::threads
/// does not refuse a huge value, and 100,000 threads crashed libgomp.
inline int host_threads() noexcept
{
#if defined(_OPENMP)
    const int limit = host_threads_limit();
    return std::min(limit > 0 ? limit : omp_get_max_threads(), max_threads());
#else
    return 1;
#endif
}

/// Scope of one cluster() call: its host passes use `threads` threads (BackendOptions::threads;
/// 0 = all). MPI ranks sharing a node pass their share, so the passes do not oversubscribe it.
class HostThreads {
public:
    explicit HostThreads(int threads) noexcept : previous_(host_threads_limit()) { host_threads_limit() = threads; }
    ~HostThreads() { host_threads_limit() = previous_; }
    HostThreads(const HostThreads&) = delete;
    HostThreads& operator=(const HostThreads&) = delete;

private:
    int previous_;
};

}  // namespace meanshift::detail

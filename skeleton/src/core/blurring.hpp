#pragma once
// Internal: blurring mean shift (Options::blurring; Carreira-Perpiñán, "Fast nonparametric
// clustering with Gaussian blurring mean-shift", ICML 2006), run through the Backend/Binding API so
// every backend and every profile it supports runs it.

#include "skeleton/src/core/pending_backend.hpp"

#include <meanshift/meanshift.hpp>

#include <memory>
#include <vector>

namespace meanshift::detail {

/// Entropy (nats) of the histogram of the shifts e_n ≥ 0: B = max(1, round(0.1 n)) equal bins over
/// [0, max_n e_n] (Carreira-Perpiñán's choice, as we read the paper); 0 when every shift is equal.
double shift_entropy(const std::vector<double>& shifts);

/// The stopping rule of blurring mean shift after an iteration: every shift ≤ tolerance, or
/// |H(e^(t)) − H(e^(t−1))| < 1e-8 (the entropy of the shift histogram stopped changing).
/// `previous_entropy` < 0 means there is no previous iteration yet.
bool blurring_converged(double entropy, double previous_entropy, double max_shift, double tolerance);

/// cluster() with Options::blurring: each iteration binds the current points X (prepared units,
/// the caller's row order; per-point H_i and sample weights travel with their rows), moves every
/// point to its mean-shift update over X (set_modes(X) + step + read_modes: the backend's own
/// profile and model), until blurring_converged() or max_iterations (fixed_iterations: exactly that
/// many). Then the final points are grouped (Options::grouping, merge_eps) and every point is
/// labelled with its moved position's group. Exact kernel (no neighbour search: the points move
/// every iteration), so O(n² k) a step. Result::modes = the final points (data units), iterations
/// = the iterations run for every point. Explicit seeds are refused (InvalidArgument): the data
/// are their own seeds. VonMisesFisher (isotropic h, unit vectors, else InvalidArgument): the
/// backend projects the moved points back onto the unit sphere each step, as it does modes.
Result run_blurring(PendingBackend& pending, std::unique_ptr<Binding>& binding, const float* data, Index n, int k,
                    const Options& options, const float* weights, const float* seeds);

}  // namespace meanshift::detail

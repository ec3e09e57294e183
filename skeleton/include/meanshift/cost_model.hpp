#pragma once
/// @file cost_model.hpp
/// The run-time model of Malysiak & Handmann, Theorems 1-3, restated in this library's topology
/// (topology.hpp: f_vppu = PUs per vPPU, τ' = τ / f_vppu vPPUs per PPU, f_load ≤ f_vppu PUs share
/// the n-loop) and turned into a linear model whose machine constants are fitted to measurements.
/// docs/complexity-model.md derives every term.
///
/// One call of Backend::step() that advances m modes over n points in k dimensions costs
///
///   T = W · ( a·⌈n/f_load⌉·(5k+λ)          loop of Alg. 3 lines 11-16 (λ: cost of H_i, 0 or 2k+1)
///           + c'·⌈n/f_load⌉·k·[f_vppu > 1] the loop's point reads when a vPPU spans several PUs, so
///                                          the PUs of a PPU read different points (no broadcast;
///                                          the paper's Sec. V / Fig. 3 effect, outside Theorem 1's
///                                          uniform access cost c)
///           + b·2·⌊log2 f_load⌋·k          tree steps of the two vPPU reductions, lines 17-18
///           + c·2·(f_load-1)·k             reduction traffic: every partial sum fetched once
///                                          (Σ_{i=1}^{log2 l} l/2^i = l-1 in the tree, l = 2^⌊log2 f_load⌋,
///                                          plus f_load-l folded into the tree first)
///           + d·ℵ(k, f_load)               ℵ = 2k when f_load is not a power of two (the fold step
///                                          before the tree, docs/topology.md), else 0
///           + e·2k )                       final y_p = H_h y_p,t (Theorem 3's 2k)
///     + g·m·k                              host work and transfers per mode (outside the theorems)
///     + h                                  per-step overhead: launch, synchronisation
///
/// with W = ⌈m / (z·τ')⌉ waves of modes (Theorem 2: z·τ' modes advance in parallel). A run of
/// `iterations` steps (fixed-iteration mode) costs `iterations` times that. The constants
/// a, c', b, c, d, e, g, h (seconds per unit) are fitted by non-negative least squares on the relative
/// error, so small and large runs weigh the same.

#include <meanshift/export.hpp>
#include <meanshift/backend.hpp>
#include <meanshift/topology.hpp>
#include <meanshift/types.hpp>

#include <array>
#include <string>
#include <vector>

namespace meanshift::model {

/// One configuration to predict or one measured run.
struct Workload {
    Index n = 0;  ///< data points
    int k = 0;  ///< dimensions
    Index m = 0;  ///< modes advanced per step (active queries)
    Topology topology;  ///< fully resolved (every field ≥ 1)
    KernelModel kernel = KernelModel::Shared;
    int iterations = 1;  ///< steps (fixed iterations); the prediction scales linearly
    /// Truncated kernel with a neighbour grid: candidate (mode, point) pairs one step visits
    /// (StepReport::pairs, Timing::pair_interactions / iterations), 0 < C ≤ m·n. The n-loop terms
    /// then run over C/m points per mode instead of n (Theorems 1-3 with the candidate count in place
    /// of n). 0 = m·n (the exact kernel / brute force).
    double candidates = 0;
};

/// Number of terms (columns of the design matrix) of the model.
inline constexpr int kTerms = 8;

/// Names of the terms, in column order: "loop", "loop_distinct", "reduce_adds", "reduce_traffic",
/// "aleph", "finalize", "per_mode", "per_step".
MEANSHIFT_API const std::array<std::string, kTerms>& term_names();

/// The counts of Theorems 1-3 for one workload, one step (before multiplying by constants).
struct MEANSHIFT_API CostTerms {
    double waves = 0;  ///< W = ⌈m / (z·τ')⌉
    double loop = 0;  ///< ⌈n/f_load⌉·(5k+λ) per wave
    double loop_distinct = 0;  ///< ⌈n/f_load⌉·k per wave when f_vppu > 1, else 0
    double reduce_adds = 0;  ///< 2·⌊log2 f_load⌋·k per wave
    double reduce_traffic = 0;  ///< 2·(f_load-1)·k per wave (the c term)
    double aleph = 0;  ///< ℵ(k, f_load): 2k per wave when f_load is not a power of two
    double finalize = 0;  ///< 2k per wave
    double per_mode = 0;  ///< m·k per step
    /// Fraction of the PU-slots of all waves that do loop work on a real point:
    ///   m·n / (W · z·τ' · f_vppu · ⌈n/f_load⌉).
    /// Three under-utilisations of Theorems 1-2 multiply here: idle vPPUs in the last wave
    /// (m not a multiple of z·τ'), idle PUs of a vPPU (f_load < f_vppu) and the ragged last
    /// chunk of the n-loop (f_load ∤ n).
    double utilisation = 0;
    /// Design-matrix row for one step: {W·loop, W·loop_distinct, W·reduce_adds, W·reduce_traffic,
    /// W·aleph, W·finalize, per_mode, 1}.
    std::array<double, kTerms> row() const;
};

/// λ of Theorem 1: operations to form H_i^{-1} and |H_i| per point. 0 for KernelModel::Shared
/// (whitened data, unit kernel), 2k+1 for KernelModel::PerPoint (precision weights in D² and in
/// both sums, plus the log-weight).
MEANSHIFT_API int lambda(KernelModel kernel, int k);

/// Counts for `w`. Throws InvalidArgument for n, k, m < 1, iterations < 1 or an unresolved /
/// invalid topology (validate_topology's rules).
MEANSHIFT_API CostTerms cost_terms(const Workload& w);

/// Fitted machine constants, seconds per unit of each term (term_names() order).
struct Constants {
    std::array<double, kTerms> value{};  ///< ≥ 0
    std::array<bool, kTerms> identified{};  ///< false: the term was 0 in every sample
};

/// Predicted seconds for `w` (all `w.iterations` steps).
MEANSHIFT_API double predict_seconds(const Workload& w, const Constants& c);

/// One measurement for the fit.
struct Sample {
    Workload workload;
    double seconds = 0;  ///< measured, > 0 (a median of repeats, all iterations)
};

struct FitResult {
    Constants constants;
    /// Coefficient of determination on seconds: 1 - Σ(t-t̂)² / Σ(t-t̄)².
    double r2 = 0;
    /// The same on log(seconds): meaningful when the samples span orders of magnitude.
    double r2_log = 0;
    /// max |t̂-t| / t over the samples, and the sample where it occurs.
    double worst_relative_residual = 0;
    std::size_t worst_index = 0;
    std::vector<double> predicted;  ///< t̂ per sample, seconds
};

/// Fits the constants by non-negative least squares (Lawson-Hanson on Eigen) minimising
/// Σ ((t̂ - t)/t)². Terms that are zero in every sample stay 0 and are marked not identified;
/// collinear terms share the weight as NNLS decides (the fit stays valid, the split does not).
/// Throws InvalidArgument for no samples, a non-positive or non-finite time, or an invalid
/// workload.
MEANSHIFT_API FitResult fit(const std::vector<Sample>& samples);

}  // namespace meanshift::model

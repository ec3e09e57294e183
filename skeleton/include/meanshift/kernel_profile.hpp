#pragma once
/// @file kernel_profile.hpp
/// Kernel profiles of mean shift (Comaniciu & Meer 2002, sec. 2): the weight a point gets in one
/// mean-shift step, as a function of its squared Mahalanobis distance q = D² (eq. 3 of Malysiak &
/// Handmann, bandwidth units) from the current mode.
///
/// A profile here names the weight profile g of the update y' = Σ_i g(q_i) x_i / Σ_i g(q_i) (with
/// the per-point factors |H_i|^{-1/2} H_i^{-1} of eq. 4-6 for per-point bandwidths). Mean shift with
/// weights g climbs the density estimated with the profile k, g = −k′ (the "shadow" relation):
///
/// | profile          | weight g(q)                    | support | density it climbs   | bandwidth h means |
/// |------------------|--------------------------------|---------|---------------------|-------------------|
/// | Gaussian         | exp(−q/2)                      | none    | Gaussian            | σ per dimension   |
/// | Flat             | 1 for q ≤ 1                    | q ≤ 1   | Epanechnikov        | the radius (scikit-learn's `bandwidth`) |
/// | Epanechnikov     | 1 − q for q ≤ 1                | q ≤ 1   | biweight            | the radius        |
/// | Biweight         | (1 − q)² for q ≤ 1             | q ≤ 1   | triweight           | the radius        |
/// | Triweight        | (1 − q)³ for q ≤ 1             | q ≤ 1   | quadweight          | the radius        |
/// | VonMisesFisher   | exp(κ y·x) on the unit sphere  | none    | von Mises–Fisher    | κ = 1/h²          |
///
/// Compact profiles (support q ≤ 1) are exact under the truncated search: pairs beyond the
/// radius weigh 0, so Options::cutoff does not apply to them (the cutoff that runs is 1).
/// VonMisesFisher takes unit vectors (|x_i| = 1 within 1e-3) and an isotropic bandwidth h: for unit
/// vectors exp(κ y·x) = e^κ · exp(−κ |y − x|²/2), so its weights are the Gaussian's at σ = κ^{-1/2},
/// and every mode is projected back onto the unit sphere after each step (Kobayashi & Otsu 2010).
#include <meanshift/export.hpp>
#include <meanshift/profile_list.h>

#include <limits>
#include <string>
#include <vector>

namespace meanshift {

/// Which weight profile the mean-shift step uses (see the table above). One enumerator per row of
/// meanshift/profile_list.h (kernels/profiles/profile_list.h in the source tree), whose values are
/// the device headers' MS_PROFILE_* constants: Gaussian = 0, Flat = 1, Epanechnikov = 2,
/// Biweight = 3, VonMisesFisher = 4, Triweight = 5, ...
#define MEANSHIFT_PROFILE_ENUM_ROW(Enum, name, NAME, value, compact, a) Enum = value,
enum class KernelProfile : int { MS_PROFILE_LIST(MEANSHIFT_PROFILE_ENUM_ROW, ~) };
#undef MEANSHIFT_PROFILE_ENUM_ROW

/// Every profile, in the list's order.
MEANSHIFT_API const std::vector<KernelProfile>& kernel_profiles();

/// The profile's name as the CLI (--kernel), Python (kernel=) and reports write it (the list's
/// `name` column: "gaussian", "flat", "epanechnikov", "biweight", "vmf", "triweight", ...).
MEANSHIFT_API const char* profile_name(KernelProfile profile) noexcept;

/// Parses a name written by profile_name() (case-insensitive; "von-mises-fisher" and "uniform" are
/// accepted for "vmf" and "flat"). Throws InvalidArgument naming the known profiles.
MEANSHIFT_API KernelProfile parse_profile(const std::string& name);

/// Radius of the profile's support in bandwidth units (1 for compact profiles, infinity otherwise).
MEANSHIFT_API double profile_support(KernelProfile profile) noexcept;

/// True when the weights vanish beyond profile_support() (the list's compact rows: Flat, Epanechnikov, ...).
inline bool is_compact(KernelProfile profile) noexcept
{
    return profile_support(profile) < std::numeric_limits<double>::infinity();
}

/// The float64 reference weight g(q) of the table above for q = D² ≥ 0 in bandwidth units
/// (VonMisesFisher: its Gaussian form exp(−q/2), q = κ |y − x|²). The serial oracle uses it.
MEANSHIFT_API double profile_weight(KernelProfile profile, double q) noexcept;

}  // namespace meanshift

#pragma once
// The openmp backend's calibrated crossovers (calibration.hpp): whether PairForm::Auto takes the
// GEMM form at a k, and with AMX or Eigen products where AMX runs. Measured by timing one step of
// each candidate form on the same synthetic data, with the run's threads and instruction set.

#include <meanshift/calibration.hpp>
#include <meanshift/tuning.hpp>

#include <optional>
#include <string>

namespace meanshift::openmp_detail {

/// What PairForm::Auto takes at one k.
struct AutoForm {
    bool gemm = false;  ///< the GEMM form (else the direct SIMD kernels)
    bool amx = false;  ///< the GEMM form's products on AMX tiles (only where amx was allowed)
    std::optional<CalibrationEntry> entry;  ///< the calibration behind it; nullopt: the fixed default rule
};

/// The choice for `threads` threads of the kernels of `isa_label` (the device string of the key),
/// per_point (KernelModel::PerPoint) at k dimensions. gemm_default is the fixed rule's answer
/// (k ≥ the unit's min_k), amx whether AMX may be used (usable and allowed by openmp.isa).
/// Measures only when may_measure (the caller's run is large enough to pay for it) or
/// options.calibration is Rerun; otherwise a cached entry or the fixed rule.
AutoForm calibrated_auto_form(const BackendOptions& options, const std::string& isa_label, int threads, bool per_point,
                              int k, bool gemm_default, bool amx, bool may_measure);

/// meanshift::calibrate() for the openmp backend created with `options` (openmp_backend.cpp).
std::optional<CalibrationEntry> calibrate(const BackendOptions& options, int k, bool per_point);

}  // namespace meanshift::openmp_detail

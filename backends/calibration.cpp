// meanshift::calibrate() (calibration.hpp): each backend's own calibration; only openmp has one.
#include <meanshift/calibration.hpp>
#include <meanshift/config.hpp>
#include <meanshift/registry.hpp>

#include "backends/factory.hpp"
#if MEANSHIFT_HAVE_OPENMP
#include "backends/openmp/calibration_openmp.hpp"
#endif

namespace meanshift {

std::optional<CalibrationEntry> calibrate(const std::string& backend, const BackendOptions& options, int k,
                                          KernelModel model)
{
    const std::string name = make_backend(backend, options)->name();  // checks the name and the options
#if MEANSHIFT_HAVE_OPENMP
    if (name == "openmp") return openmp_detail::calibrate(options, k, model == KernelModel::PerPoint);
#endif
    (void)k;
    (void)model;
    return std::nullopt;
}

}  // namespace meanshift

// Out-of-line parts of the backend interface (backend.hpp): the key functions of Backend and
// Binding (one vtable and typeinfo, exported from the library) and Binding::step_once.
#include <meanshift/backend.hpp>
#include <meanshift/errors.hpp>

namespace meanshift {

Backend::~Backend() = default;
Binding::~Binding() = default;

double Binding::accumulate(const double*, Index, double*)
{
    throw NotSupported("this backend's binding does not expose partial sums (Binding::accumulate); the library's "
                       "backends (serial, openmp, opencl, cuda) do");
}

Index Binding::sum_width() const noexcept
{
    const Index k = data().k();
    return data().model == KernelModel::PerPoint ? 2 * k : 1 + k;
}

MatrixD Backend::nearest_distances(const MatrixF&, const MatrixF&, int)
{
    throw InvalidArgument("backend '" + name() + "' has no nearest-neighbour search");
}

void Binding::step_once(const double* positions, double* out, Index count, StepReport* report)
{
    if (count < 1) throw InvalidArgument("step_once: need at least one mode (count = " + std::to_string(count) + ")");
    StepReport local;
    set_modes(positions, count);
    step(0.0, false, report ? *report : local);
    read_modes(out);
}

}  // namespace meanshift

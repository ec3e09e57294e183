// Out-of-line parts of the backend interface (backend.hpp): the key functions of Backend and
// Binding (one vtable and typeinfo, exported from the library) and Binding::step_once.
#include <meanshift/backend.hpp>
#include <meanshift/errors.hpp>

namespace meanshift {

Backend::~Backend() = default;
Binding::~Binding() = default;

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

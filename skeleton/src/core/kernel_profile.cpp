// Names, supports and float64 reference weights of the kernel profiles (kernel_profile.hpp), all
// expanded from the one list (kernels/profiles/profile_list.h). A compact profile's float64 weight
// is its device header's MS_FACTOR_<NAME>(q) evaluated on a double (the headers' float literals
// then promote), so the oracle and the kernels cannot disagree on the formula.
#include <meanshift/errors.hpp>
#include <meanshift/kernel_profile.hpp>

#include "kernels/meanshift_device.h"
#include "kernels/profiles/profiles.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace meanshift {

#define MS_CHECK_VALUE_ROW(E, n, N, v, c, a)                                                                           \
    static_assert(static_cast<int>(KernelProfile::E) == MS_PROFILE_##N, "enum and device constant agree");
MS_PROFILE_LIST(MS_CHECK_VALUE_ROW, ~)
#undef MS_CHECK_VALUE_ROW

const std::vector<KernelProfile>& kernel_profiles()
{
#define MS_ENUM_ROW(E, n, N, v, c, a) KernelProfile::E,
    static const std::vector<KernelProfile> all{MS_PROFILE_LIST(MS_ENUM_ROW, ~)};
#undef MS_ENUM_ROW
    return all;
}

const char* profile_name(KernelProfile profile) noexcept
{
    switch (profile) {
#define MS_NAME_ROW(E, n, N, v, c, a)                                                                                  \
    case KernelProfile::E: return #n;
        MS_PROFILE_LIST(MS_NAME_ROW, ~)
#undef MS_NAME_ROW
    }
    return "unknown";
}

KernelProfile parse_profile(const std::string& name)
{
    std::string s = name;
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (s == "uniform") s = "flat";
    if (s == "von-mises-fisher" || s == "vonmisesfisher") s = "vmf";
    std::string known;
    for (KernelProfile p : kernel_profiles()) {
        if (s == profile_name(p)) return p;
        known += known.empty() ? "" : ", ";
        known += profile_name(p);
    }
    throw InvalidArgument("unknown kernel profile '" + name + "' (known: " + known + ")");
}

double profile_support(KernelProfile profile) noexcept
{
    switch (profile) {
#define MS_SUPPORT_ROW(E, n, N, v, c, a)                                                                               \
    case KernelProfile::E: return c ? 1.0 : std::numeric_limits<double>::infinity();
        MS_PROFILE_LIST(MS_SUPPORT_ROW, ~)
#undef MS_SUPPORT_ROW
    }
    return std::numeric_limits<double>::infinity();
}

double profile_weight(KernelProfile profile, double q) noexcept
{
    switch (profile) {
#define MS_WEIGHT_ROW(E, n, N, v, c, a)                                                                                \
    MS_PROFILE_IF(c, case KernelProfile::E : return q <= 1.0 ? static_cast<double>(MS_FACTOR_##N(q)) : 0.0;)
        MS_PROFILE_LIST(MS_WEIGHT_ROW, ~)
#undef MS_WEIGHT_ROW
    default: break;
    }
    return std::exp(-0.5 * q);  // the Gaussian, and vMF in its Gaussian form
}

}  // namespace meanshift

// Names, supports and float64 reference weights of the kernel profiles (kernel_profile.hpp).
#include <meanshift/errors.hpp>
#include <meanshift/kernel_profile.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace meanshift {

const std::vector<KernelProfile>& kernel_profiles()
{
    static const std::vector<KernelProfile> all{KernelProfile::Gaussian,       KernelProfile::Flat,
                                                KernelProfile::Epanechnikov,   KernelProfile::Biweight,
                                                KernelProfile::VonMisesFisher, KernelProfile::Triweight};
    return all;
}

const char* profile_name(KernelProfile profile) noexcept
{
    switch (profile) {
    case KernelProfile::Gaussian: return "gaussian";
    case KernelProfile::Flat: return "flat";
    case KernelProfile::Epanechnikov: return "epanechnikov";
    case KernelProfile::Biweight: return "biweight";
    case KernelProfile::VonMisesFisher: return "vmf";
    case KernelProfile::Triweight: return "triweight";
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
    case KernelProfile::Flat:
    case KernelProfile::Epanechnikov:
    case KernelProfile::Biweight:
    case KernelProfile::Triweight: return 1.0;
    case KernelProfile::Gaussian:
    case KernelProfile::VonMisesFisher: break;
    }
    return std::numeric_limits<double>::infinity();
}

double profile_weight(KernelProfile profile, double q) noexcept
{
    switch (profile) {
    case KernelProfile::Gaussian:
    case KernelProfile::VonMisesFisher: return std::exp(-0.5 * q);
    case KernelProfile::Flat: return q <= 1.0 ? 1.0 : 0.0;
    case KernelProfile::Epanechnikov: return q <= 1.0 ? 1.0 - q : 0.0;
    case KernelProfile::Biweight: return q <= 1.0 ? (1.0 - q) * (1.0 - q) : 0.0;
    case KernelProfile::Triweight: return q <= 1.0 ? (1.0 - q) * (1.0 - q) * (1.0 - q) : 0.0;
    }
    return 0.0;
}

}  // namespace meanshift

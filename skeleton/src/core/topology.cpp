#include <meanshift/errors.hpp>
#include <meanshift/topology.hpp>

#include <sstream>

namespace meanshift {

std::string Topology::to_string() const
{
    std::ostringstream s;
    s << "z=" << ppus << " tau=" << pus_per_ppu << " f_vppu=" << f_vppu << " f_load=" << f_load
      << " (vPPUs per PPU tau'=" << vppus_per_ppu() << ")";
    return s.str();
}

void validate_topology(const Topology& t, const std::string& backend)
{
    auto fail = [&](const std::string& why) {
        throw InvalidArgument("invalid topology for backend '" + backend + "' (" + t.to_string() + "): " + why);
    };
    if (t.ppus < 1) fail("z (number of PPUs) must be >= 1");
    if (t.pus_per_ppu < 1) fail("tau (PUs per PPU) must be >= 1");
    if (t.f_vppu < 1) fail("f_vppu (PUs per vPPU) must be >= 1");
    if (t.f_vppu > t.pus_per_ppu) fail("f_vppu must be <= tau: a vPPU cannot span more PUs than its PPU has");
    if (t.pus_per_ppu % t.f_vppu != 0) fail("f_vppu must divide tau (remark after Alg. 3)");
    if (t.f_load < 1) fail("f_load (load factor) must be >= 1");
    if (t.f_load > t.f_vppu) fail("f_load must be <= f_vppu: only the PUs of one vPPU can share its n-loop");
}

}  // namespace meanshift

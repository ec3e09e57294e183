#pragma once
/// @file topology.hpp
/// The abstract machine of Malysiak & Handmann (Sec. II-III): z PPUs (parallel processing units),
/// each with τ PUs (primitive units); PUs are grouped into vPPUs (virtual PPUs) of f_vppu
/// consecutive PUs; each vPPU approximates one mode at a time, and f_load of its PUs share the
/// loop over the n points (Alg. 3), then reduce their partial sums inside the vPPU.
///
/// Definition used throughout this library (the paper uses f_vppu two ways, see docs/topology.md):
///   f_vppu = number of PUs in one vPPU (Alg. 3 indices: j_pu = ⌊i_pu / f_vppu⌋);
///   τ'     = τ / f_vppu = number of vPPUs (modes in flight) per PPU;
///   f_load = number of PUs of one vPPU that share the n-loop, 1 ≤ f_load ≤ f_vppu.
///   PUs of a vPPU with local index ≥ f_load stay idle (they contribute zero partial sums).
/// Up to z · τ' modes advance in parallel (Theorem 2/3).

#include <meanshift/export.hpp>
#include <string>

namespace meanshift {

struct MEANSHIFT_API Topology {
    int ppus = 0;  ///< z; 0 = let the backend choose (all it has).
    int pus_per_ppu = 0;  ///< τ; 0 = backend default (SIMD width, work-group size, block size).
    int f_vppu = 0;  ///< PUs per vPPU; 0 = backend default.
    int f_load = 0;  ///< PUs of a vPPU sharing the n-loop; 0 = f_vppu (all of them).

    /// Number of vPPUs per PPU, τ' = τ / f_vppu (valid after resolve()).
    int vppus_per_ppu() const noexcept { return f_vppu > 0 ? pus_per_ppu / f_vppu : 0; }
    /// Human-readable "z=…, tau=…, f_vppu=…, f_load=…".
    std::string to_string() const;
};

/// Checks the generic rules of Alg. 3 on a fully resolved topology and throws InvalidArgument
/// with a message naming the violated rule: all values ≥ 1, f_vppu divides τ (remark after
/// Alg. 3), 1 ≤ f_load ≤ f_vppu. `backend` names the backend in the message.
MEANSHIFT_API void validate_topology(const Topology& t, const std::string& backend);

}  // namespace meanshift

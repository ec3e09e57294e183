#pragma once
// SIMD vector of float32 lanes for one kernel translation unit, written with GCC/Clang vector
// extensions so that one kernel source serves AVX-512 (16 lanes), AVX2 (8) and SSE2/generic (4).
// The including TU defines MS_SIMD_WIDTH and is compiled with the matching -m flags.
// Everything lives in an anonymous namespace: each TU gets its own copy compiled for its own ISA,
// and the linker can never merge an AVX-512 copy into code that runs on an older CPU.

#ifndef MS_SIMD_WIDTH
#  error "define MS_SIMD_WIDTH (float lanes per vector) before including simd_vec.hpp"
#endif

#include <cstdint>
#include <cstring>

namespace meanshift::openmp_detail {
namespace {

constexpr int W = MS_SIMD_WIDTH;  // τ: PUs of one PPU

typedef float vf __attribute__((vector_size(W * sizeof(float))));
typedef std::int32_t vi __attribute__((vector_size(W * sizeof(float))));
typedef std::uint32_t vu __attribute__((vector_size(W * sizeof(float))));

inline vf splat(float s) { return vf{} + s; }

inline vf loadu(const float* p)
{
    vf v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline void storeu(float* p, vf v) { std::memcpy(p, &v, sizeof v); }

/// Lane l receives p[l mod G]: the G points of one vPPU's n-loop step, replicated to every vPPU
/// of the vector (reads exactly G floats).
template <int G>
inline vf load_replicated(const float* p)
{
    if constexpr (G == W) {
        return loadu(p);
    } else {
        vf v = {};
        std::memcpy(&v, p, G * sizeof(float));
#if defined(__clang__)
        vf r;
        for (int l = 0; l < W; ++l) r[l] = v[l % G];
        return r;
#else
        vi idx;
        for (int l = 0; l < W; ++l) idx[l] = l % G;  // constant-folded into one permute
        return __builtin_shuffle(v, idx);
#endif
    }
}

/// Round p up to a multiple of 64 bytes (scratch buffers come with 64 bytes of slack).
inline void* align64(void* p)
{
    const auto u = reinterpret_cast<std::uintptr_t>(p);
    return reinterpret_cast<void*>((u + 63u) & ~static_cast<std::uintptr_t>(63u));
}

}  // namespace
}  // namespace meanshift::openmp_detail

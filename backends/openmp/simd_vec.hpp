#pragma once
// SIMD vector of float32 lanes for one kernel translation unit, written with GCC/Clang vector
// extensions so that one kernel source serves AVX-512 (16 lanes), AVX2 (8) and SSE2/generic (4).
// The including TU defines MS_SIMD_WIDTH and is compiled with the matching -m flags.
// Everything lives in an anonymous namespace: each TU gets its own copy compiled for its own ISA,
// and the linker can never merge an AVX-512 copy into code that runs on an older CPU.

#ifndef MS_SIMD_WIDTH
#error "define MS_SIMD_WIDTH (float lanes per vector) before including simd_vec.hpp"
#endif

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace meanshift::openmp_detail {
namespace {

constexpr int W = MS_SIMD_WIDTH;  // τ: PUs of one PPU

typedef float vf __attribute__((vector_size(W * sizeof(float))));
typedef std::int32_t vi __attribute__((vector_size(W * sizeof(float))));
typedef std::uint32_t vu __attribute__((vector_size(W * sizeof(float))));

inline vf splat(float s)
{
    return vf{} + s;
}

inline vf loadu(const float* p)
{
    vf v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline void storeu(float* p, vf v)
{
    std::memcpy(p, &v, sizeof v);
}

/// Lane-wise maximum (one instruction; a vector ?: is not turned into max without fast-math).
inline vf vmax(vf a, vf b)
{
#if MS_SIMD_WIDTH == 16 && defined(__AVX512F__)
    return (vf)_mm512_max_ps((__m512)a, (__m512)b);
#elif MS_SIMD_WIDTH == 8 && defined(__AVX__)
    return (vf)_mm256_max_ps((__m256)a, (__m256)b);
#elif MS_SIMD_WIDTH == 4 && defined(__SSE2__)
    return (vf)_mm_max_ps((__m128)a, (__m128)b);
#else
    return a > b ? a : b;
#endif
}

/// Lane-wise minimum (one instruction, as vmax).
inline vf vmin(vf a, vf b)
{
#if MS_SIMD_WIDTH == 16 && defined(__AVX512F__)
    return (vf)_mm512_min_ps((__m512)a, (__m512)b);
#elif MS_SIMD_WIDTH == 8 && defined(__AVX__)
    return (vf)_mm256_min_ps((__m256)a, (__m256)b);
#elif MS_SIMD_WIDTH == 4 && defined(__SSE2__)
    return (vf)_mm_min_ps((__m128)a, (__m128)b);
#else
    return a < b ? a : b;
#endif
}

/// Lane l receives p[l mod G]: the G points of one vPPU's n-loop step, replicated to every vPPU
/// of the vector (reads exactly G floats; one broadcast-load instruction on x86).
template <int G>
inline vf load_replicated(const float* p)
{
    static_assert(G >= 1 && W % G == 0, "G must divide the SIMD width");
    if constexpr (G == W) {
        return loadu(p);
    } else if constexpr (G == 1) {
        return splat(*p);
    } else if constexpr (G == 2) {  // two floats = one 64-bit value, broadcast
        typedef std::uint64_t vq __attribute__((vector_size(W * sizeof(float))));
        std::uint64_t bits;
        std::memcpy(&bits, p, sizeof bits);
        return (vf)(vq{} + bits);
    } else {
#if MS_SIMD_WIDTH == 16 && defined(__AVX512F__)
        // (The all-lanes zero-masked forms avoid GCC 12's bogus -Wmaybe-uninitialized in
        // the unmasked intrinsics; they compile to the same broadcast.)
        if constexpr (G == 4) {
            return (vf)_mm512_maskz_broadcast_f32x4(0xFFFF, _mm_loadu_ps(p));
        } else {
            static_assert(G == 8, "");
            const __m256d half = _mm256_loadu_pd(reinterpret_cast<const double*>(p));
            return (vf)_mm512_castpd_ps(_mm512_maskz_broadcast_f64x4(0xFF, half));
        }
#elif MS_SIMD_WIDTH == 8 && defined(__AVX__)
        static_assert(G == 4, "");
        return (vf)_mm256_broadcast_ps(reinterpret_cast<const __m128*>(p));
#else
        vf r;
        for (int l = 0; l < W; ++l) r[l] = p[l % G];
        return r;
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

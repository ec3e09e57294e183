#pragma once
// Internal: a GPU step's per-mode records, as the CUDA and OpenCL kernels leave them in host memory,
// turned into the StepReport the driver reads. A band of a large image advances ~4·10^6 modes a step:
// unpacking them on one thread cost more than the step's kernels, so the records are read on the
// host threads (HostThreads), and the report's vectors are resized in place (no zero fill when a step
// reports fewer modes than the last).
//
// API (namespace meanshift::gpu):
//   void resize_report(report, total)          report.mode/shift2/status sized to `total`, pairs and
//                                               kernel_seconds reset (the driver's clear() without the refill)
//   Index unpack_records(words, count, offset, limit, report, at, who)
//       records[j] = (mode int32, shift² float32 bits, status int32) at words[3j .. 3j+2], j < count,
//       written to report entries at + j with mode + offset. Returns how many are still Active.
//       Throws meanshift::Error naming `who` if a record's mode is outside [0, limit) or its status
//       is not a ModeStatus (a kernel that left a slot unwritten).

#include <meanshift/backend.hpp>

#include <cstdint>

namespace meanshift::gpu {

/// Sizes the report's three vectors to `total` entries without refilling the ones kept, and resets
/// pairs and kernel_seconds to "not measured" (-1).
void resize_report(StepReport& report, Index total);

/// Unpacks `count` records (3 × 32-bit words each: mode, shift² as float32 bits, status) into
/// report entries [at, at + count), adding `offset` to the modes (a device's first mode). Runs on
/// the host threads. Returns the records whose status is Active. Throws Error("<who>: ...") for a
/// record whose mode is outside [0, limit) or whose status is not 0, 1 or 2.
Index unpack_records(const std::int32_t* words, Index count, Index offset, Index limit, StepReport& report, Index at,
                     const char* who);

}  // namespace meanshift::gpu

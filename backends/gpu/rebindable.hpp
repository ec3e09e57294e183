#pragma once
// Internal: a Binding that can take new data in place of its own (the banded image ascent,
// segmentation_filter.cpp, refills one binding band after band instead of allocating and freeing
// ~15 device buffers, a stream and the kernels' warm-up per band). A side interface, found with
// dynamic_cast, so that the public Binding keeps its layout.
//
//   bool rebind(data)   binds `data` with the same topology, keeping the device buffers that are
//                       large enough; the modes are dropped (set_modes() follows). Returns false,
//                       changing nothing, where it cannot (another dimension, kernel model or form,
//                       points that do not fit the buffers): the caller binds afresh. Throws
//                       DeviceError on a device failure (the binding is then to be discarded).

#include <meanshift/backend.hpp>

#include <memory>

namespace meanshift::gpu {

class Rebindable {
public:
    virtual bool rebind(std::shared_ptr<const PreparedData> data) = 0;

protected:
    ~Rebindable() = default;
};

}  // namespace meanshift::gpu

// Ranks that share a node share its devices (include/meanshift/mpi.hpp, docs/mpi.md): unless the
// caller chose, each rank takes one CUDA device (local rank mod the device count) or one OpenCL GPU
// (the same rule over the GPUs) and its share of the CPUs it may run on, instead of every rank using
// every GPU (CUDA) or the first GPU (OpenCL) and every core.
#include "common.hpp"

#include <meanshift/registry.hpp>

#include <sched.h>

#include <algorithm>

namespace meanshift::mpi::detail {
namespace {

/// CPUs this process may run on (the launcher's binding narrows it).
int allowed_cpus()
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
    return std::max(1, CPU_COUNT(&set));
}

}  // namespace

NodePlacement place_on_node(MPI_Comm comm, Options& options)
{
    NodePlacement p;
    int rank = 0;
    check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    MPI_Comm_rank(node, &p.local_rank);
    MPI_Comm_size(node, &p.local_size);
    MPI_Comm_free(&node);
    if (p.local_size < 2) return p;
    BackendOptions& b = options.backend_options;
    if (b.threads == 0) {
        // Unbound ranks (e.g. --oversubscribe) each see every core: split them. Bound ranks see
        // their own cores already.
        b.threads = std::max(1, allowed_cpus() / p.local_size);
        p.threads_set = true;
    }
    if (b.devices.empty() && b.device_spec.empty()) {
        const std::string name = options.backend == "auto" ? resolve_auto_backend() : options.backend;
        if (name == "cuda") {
            const std::size_t count = make_backend("cuda", b)->devices().size();
            if (count > 0) {
                b.devices = {static_cast<int>(static_cast<std::size_t>(p.local_rank) % count)};
                p.device = b.devices.front();
            }
        } else if (name == "opencl") {
            const std::vector<DeviceInfo> devices = make_backend("opencl", b)->devices();
            const int at = gpu_of_rank(devices, p.local_rank);
            if (at >= 0) {
                b.device_spec = devices[static_cast<std::size_t>(at)].spec;
                p.device = at;
            }
        }
    }
    return p;
}

int gpu_of_rank(const std::vector<DeviceInfo>& devices, int local_rank)
{
    // OpenCL's default is the first GPU: ranks on a node take the GPUs in turn instead. CPU devices
    // are left to the default (every rank shares the one CPU device, like the openmp ranks share cores).
    std::vector<int> gpus;
    for (std::size_t i = 0; i < devices.size(); ++i)
        if (devices[i].kind == "gpu" && !devices[i].spec.empty()) gpus.push_back(static_cast<int>(i));
    if (gpus.size() < 2) return -1;
    return gpus[static_cast<std::size_t>(local_rank) % gpus.size()];
}

}  // namespace meanshift::mpi::detail

// meanshift::mpi::agree (include/meanshift/mpi.hpp): after a phase, every rank learns whether any
// rank failed and throws the lowest failing rank's error, so no rank waits for a collective the
// others never reach.
#include "common.hpp"

#include <climits>
#include <string>
#include <typeinfo>

namespace meanshift::mpi {
namespace {

using detail::check_mpi;

std::string kind_of(const std::exception& e)
{
    if (dynamic_cast<const DistributedError*>(&e)) return static_cast<const DistributedError&>(e).kind();
    if (dynamic_cast<const InvalidArgument*>(&e)) return "InvalidArgument";
    if (dynamic_cast<const BackendUnavailable*>(&e)) return "BackendUnavailable";
    if (dynamic_cast<const DeviceError*>(&e)) return "DeviceError";
    if (dynamic_cast<const NotSupported*>(&e)) return "NotSupported";
    if (dynamic_cast<const IoError*>(&e)) return "IoError";
    if (dynamic_cast<const Error*>(&e)) return "Error";
    return "std::exception";
}

}  // namespace

void agree(MPI_Comm comm, std::exception_ptr local_error)
{
    int rank = 0, size = 1;
    check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    int mine = local_error ? rank : INT_MAX, first = INT_MAX;
    check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce (error flag)");
    if (first == INT_MAX) return;

    // The lowest failing rank broadcasts its message (and the class of its exception).
    std::string text, kind;
    if (rank == first) {
        try {
            std::rethrow_exception(local_error);
        } catch (const DistributedError& e) {  // already agreed elsewhere: keep its text
            text = e.what();
            kind = e.kind();
        } catch (const std::exception& e) {
            text = "rank " + std::to_string(rank) + ": " + e.what();
            kind = kind_of(e);
        } catch (...) {
            text = "rank " + std::to_string(rank) + ": unknown exception";
            kind = "unknown";
        }
    }
    long long lengths[2] = {static_cast<long long>(text.size()), static_cast<long long>(kind.size())};
    check_mpi(MPI_Bcast(lengths, 2, MPI_LONG_LONG, first, comm), "MPI_Bcast (error length)");
    text.resize(static_cast<std::size_t>(lengths[0]));
    kind.resize(static_cast<std::size_t>(lengths[1]));
    if (lengths[0] > 0)
        check_mpi(MPI_Bcast(text.data(), static_cast<int>(lengths[0]), MPI_CHAR, first, comm), "MPI_Bcast (error)");
    if (lengths[1] > 0)
        check_mpi(MPI_Bcast(kind.data(), static_cast<int>(lengths[1]), MPI_CHAR, first, comm), "MPI_Bcast (error)");
    throw DistributedError(first, kind, text);
}

}  // namespace meanshift::mpi

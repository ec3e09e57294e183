#pragma once
// Internal: the exact k-nearest-neighbour search on the host, shared by the serial and openmp
// backends' Backend::nearest_distances (one thread or all of them) and the bandwidth selection.

#include <meanshift/types.hpp>

#include <memory>
#include <string>

namespace meanshift::detail {

/// Above this many dimensions a kd-tree visits most leaves anyway; brute force is as fast.
inline constexpr Index kHostTreeMaxDims = 16;

/// Exact search over `points` (n × k, float32 values, float64 distances): a nanoflann kd-tree for
/// k ≤ kHostTreeMaxDims; above, brute force through matrix products on centred float64 copies
/// (|q − p|² = |q|² + |p|² − 2 q·p, Eigen's GEMM per block of 1024 points) with a max-heap per
/// query. query_rows() is const and thread-safe.
/// `points` must outlive the object.
class HostNearest {
public:
    explicit HostNearest(const MatrixF& points);
    ~HostNearest();
    HostNearest(const HostNearest&) = delete;
    HostNearest& operator=(const HostNearest&) = delete;

    /// The `count` smallest squared distances from queries.row(i), i in [begin, end), to the
    /// points, ascending, into out.row(i) (out: m × count, allocated by the caller).
    void query_rows(const MatrixF& queries, int count, Index begin, Index end, MatrixD& out) const;

private:
    void brute_rows(const MatrixF& queries, int count, Index begin, Index end, MatrixD& out) const;

    struct Tree;
    const MatrixF& points_;
    std::unique_ptr<Tree> tree_;  // null: brute force
    Eigen::RowVectorXd centre_;  // brute force: the points' mean,
    MatrixF centred_;  // the points minus it (n × k, float32: the screening GEMM),
    VectorF norms_;  // and their squared norms (n)
};

/// The checks every Backend::nearest_distances makes: finite data, matching k, n, m >= 1,
/// 1 <= count <= min(n, max_count). Throws InvalidArgument naming `who`.
void check_nearest_arguments(const MatrixF& points, const MatrixF& queries, int count, int max_count,
                             const std::string& who);

}  // namespace meanshift::detail

// The kd-tree neighbour search (neighbours.hpp): nanoflann builds the tree (its splits and its
// index permutation vAcc); we copy it into a flat preorder array with reach boxes, which is all the
// host backends' block_ranges() walk.
#include "skeleton/src/approx/kdtree.hpp"

#include <meanshift/errors.hpp>

#include <nanoflann.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <utility>

namespace meanshift {

namespace {

/// v rounded to float32 towards −inf / +inf: a float box then still contains the double one.
inline float down(double v)
{
    float f = static_cast<float>(v);
    if (static_cast<double>(f) > v) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
    return f;
}
inline float up(double v)
{
    float f = static_cast<float>(v);
    if (static_cast<double>(f) < v) f = std::nextafter(f, std::numeric_limits<float>::infinity());
    return f;
}

}  // namespace

Index KdTree::box_ranges(const double* lo, const double* hi, std::vector<Index>& ranges) const
{
    if (begin.empty()) return 0;
    const std::size_t ku = static_cast<std::size_t>(k);
    const Index first_new = static_cast<Index>(ranges.size());
    Index rows = 0;
    // Explicit stack: nanoflann's trees can be deep on skewed data. Pushing child 1 before child 0
    // visits leaves in row order, so ranges come out ascending and adjacent leaves merge.
    Index stack_buf[128];
    std::vector<Index> stack_vec;
    Index* stack = stack_buf;
    std::size_t cap = 128, top = 0;
    stack[top++] = 0;
    while (top > 0) {
        const Index node = stack[--top];
        const float* rl = reach_lo.data() + static_cast<std::size_t>(node) * ku;
        const float* rh = reach_hi.data() + static_cast<std::size_t>(node) * ku;
        bool meets = true;
        for (int d = 0; d < k && meets; ++d)
            meets = static_cast<double>(rl[d]) <= hi[d] && lo[d] <= static_cast<double>(rh[d]);
        if (!meets) continue;
        const Index c0 = child[2 * static_cast<std::size_t>(node)];
        // Every leaf below meets the box: take the node's rows whole (most of the walk when a block
        // reaches most of the data).
        const float* cl = common_lo.data() + static_cast<std::size_t>(node) * ku;
        const float* ch = common_hi.data() + static_cast<std::size_t>(node) * ku;
        bool all = true;
        for (int d = 0; d < k && all; ++d)
            all = static_cast<double>(cl[d]) <= hi[d] && lo[d] <= static_cast<double>(ch[d]);
        if (c0 < 0 || all) {
            const Index b = begin[std::size_t(node)], e = end[std::size_t(node)];
            const std::size_t sz = ranges.size();
            if (static_cast<Index>(sz) > first_new && ranges[sz - 1] == b)
                ranges[sz - 1] = e;
            else {
                ranges.push_back(b);
                ranges.push_back(e);
            }
            rows += e - b;
            continue;
        }
        if (top + 2 > cap) {
            std::vector<Index> grown(cap * 2);
            std::copy_n(stack, top, grown.begin());
            stack_vec.swap(grown);
            stack = stack_vec.data();
            cap *= 2;
        }
        stack[top++] = child[2 * static_cast<std::size_t>(node) + 1];
        stack[top++] = c0;
    }
    return rows;
}

Index KdTree::leaf_start(const double* y) const noexcept
{
    if (begin.empty()) return 0;
    Index node = 0;
    while (child[2 * static_cast<std::size_t>(node)] >= 0) {
        const std::size_t s = static_cast<std::size_t>(node);
        node = y[split_dim[s]] < split[s] ? child[2 * s] : child[2 * s + 1];
    }
    return begin[std::size_t(node)];
}

std::string KdTree::describe() const
{
    std::ostringstream s;
    s << "kd-tree, " << leaves << " leaves of <= " << leaf_size << " points";
    return s.str();
}

namespace detail {

namespace {

/// nanoflann's dataset interface over the rows of a row-major n × k matrix.
struct RowsAdaptor {
    const MatrixD& P;
    std::size_t kdtree_get_point_count() const { return static_cast<std::size_t>(P.rows()); }
    double kdtree_get_pt(std::uint32_t i, int d) const { return P(static_cast<Index>(i), d); }
    template <class Box>
    bool kdtree_get_bbox(Box&) const
    {
        return false;
    }
};

using NanoTree = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<double, RowsAdaptor>, RowsAdaptor, -1,
                                                     std::uint32_t>;

}  // namespace

Index tree_leaf_size(int k)
{
    return k <= 16 ? 32 : 128;
}

KdTree build_kdtree(const PreparedData& D, Index leaf_size, std::vector<Index>& order)
{
    const Index n = D.n();
    const int k = D.k();
    if (n < 1 || k < 1) throw InvalidArgument("kd-tree: no data");
    if (n >= static_cast<Index>(std::numeric_limits<std::uint32_t>::max()))
        throw InvalidArgument("kd-tree: n = " + std::to_string(n) + " exceeds nanoflann's 32-bit indices");
    const RowsAdaptor rows{D.points};
    NanoTree nano(k, rows,
                  nanoflann::KDTreeSingleIndexAdaptorParams(static_cast<std::size_t>(std::max<Index>(1, leaf_size))));

    order.resize(static_cast<std::size_t>(n));
    for (Index r = 0; r < n; ++r) order[std::size_t(r)] = static_cast<Index>(nano.vAcc[std::size_t(r)]);

    // Preorder copy of nanoflann's nodes (explicit stack: children get larger indices than their
    // parent, so a reverse sweep below computes the boxes bottom-up).
    KdTree T;
    T.k = k;
    T.leaf_size = leaf_size;
    using Node = NanoTree::Node;
    std::vector<std::pair<const Node*, Index>> todo;  // (node, its parent's slot in child[], or -1)
    todo.push_back({nano.root_node, -1});
    while (!todo.empty()) {
        const auto [node, slot] = todo.back();
        todo.pop_back();
        const Index me = T.node_count();
        if (slot >= 0) T.child[std::size_t(slot)] = me;
        T.child.push_back(-1);
        T.child.push_back(-1);
        if (!node->child1 && !node->child2) {
            T.begin.push_back(static_cast<Index>(node->node_type.lr.left));
            T.end.push_back(static_cast<Index>(node->node_type.lr.right));
            T.split_dim.push_back(-1);
            T.split.push_back(0);
            ++T.leaves;
        } else {
            T.begin.push_back(0);  // set bottom-up below
            T.end.push_back(0);
            const int d = node->node_type.sub.divfeat;
            T.split_dim.push_back(d);
            // nanoflann's own descent: child1 when (y − divlow) + (y − divhigh) < 0.
            T.split.push_back(0.5 * (node->node_type.sub.divlow + node->node_type.sub.divhigh));
            // Pushed in reverse so child1 is copied first (preorder = row order).
            todo.push_back({node->child2, 2 * me + 1});
            todo.push_back({node->child1, 2 * me});
        }
    }

    const std::size_t ku = static_cast<std::size_t>(k), nodes = static_cast<std::size_t>(T.node_count());
    T.reach_lo.assign(nodes * ku, std::numeric_limits<float>::infinity());
    T.reach_hi.assign(nodes * ku, -std::numeric_limits<float>::infinity());
    T.common_lo.assign(nodes * ku, 0.0f);
    T.common_hi.assign(nodes * ku, 0.0f);
    const double c = std::sqrt(D.cutoff2);
    const bool per_point = D.model == KernelModel::PerPoint;
    for (std::size_t s = nodes; s-- > 0;) {
        float* lo = T.reach_lo.data() + s * ku;
        float* hi = T.reach_hi.data() + s * ku;
        const Index c0 = T.child[2 * s], c1 = T.child[2 * s + 1];
        if (c0 < 0) {
            for (Index r = T.begin[s]; r < T.end[s]; ++r) {
                const Index i = order[std::size_t(r)];
                for (int d = 0; d < k; ++d) {
                    // σ_id = 1/√w_id; w = 0 gives an infinite reach (conservative).
                    const double reach = per_point ? c / std::sqrt(D.precision(i, d)) : c;
                    const double x = D.points(i, d);
                    lo[d] = std::min(lo[d], down(x - reach));
                    hi[d] = std::max(hi[d], up(x + reach));
                }
            }
            // A leaf's own reach box is the test for its rows (the conservative rounding included).
            std::copy_n(lo, ku, T.common_lo.data() + s * ku);
            std::copy_n(hi, ku, T.common_hi.data() + s * ku);
        } else {
            const std::size_t a = static_cast<std::size_t>(c0), b = static_cast<std::size_t>(c1);
            T.begin[s] = std::min(T.begin[a], T.begin[b]);
            T.end[s] = std::max(T.end[a], T.end[b]);
            for (std::size_t d = 0; d < ku; ++d) {
                lo[d] = std::min(T.reach_lo[a * ku + d], T.reach_lo[b * ku + d]);
                hi[d] = std::max(T.reach_hi[a * ku + d], T.reach_hi[b * ku + d]);
                T.common_lo[s * ku + d] = std::max(T.common_lo[a * ku + d], T.common_lo[b * ku + d]);
                T.common_hi[s * ku + d] = std::min(T.common_hi[a * ku + d], T.common_hi[b * ku + d]);
            }
        }
    }
    return T;
}

double tree_candidate_fraction(const KdTree& tree, const MatrixD& points)
{
    const Index n = points.rows();
    const Index samples = std::min<Index>(n, 512);
    std::vector<Index> ranges;
    double total = 0;
    for (Index s = 0; s < samples; ++s) {
        const Index i = samples == n ? s : (s * n) / samples;
        const double* x = points.row(i).data();
        ranges.clear();
        total += static_cast<double>(tree.box_ranges(x, x, ranges));
    }
    return total / (static_cast<double>(samples) * static_cast<double>(n));
}

}  // namespace detail
}  // namespace meanshift

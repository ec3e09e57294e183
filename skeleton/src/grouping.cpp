// groupModes on the host: Alg. 6 (sequential, as intended) and connected components (003).
// A uniform grid with cell size eps limits each search to the 3^k neighbouring cells for small k.
#include <meanshift/errors.hpp>
#include <meanshift/grouping.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace meanshift {
namespace {

constexpr int kMaxGridDims = 5;  // 3^5 = 243 neighbour cells; beyond that a linear scan wins

struct CellHash {
    std::size_t operator()(const std::vector<std::int64_t>& c) const noexcept
    {
        std::size_t h = 1469598103934665603ull;
        for (auto v : c) h = (h ^ static_cast<std::size_t>(v)) * 1099511628211ull;
        return h;
    }
};

class Grid {
public:
    Grid(const MatrixD& pts, double eps) : pts_(pts), cell_(eps > 0 ? eps : 1.0)
    {
        usable_ = pts.cols() <= kMaxGridDims;
        // Cell coordinates must fit comfortably in int64.
        if (usable_ && pts.size() > 0 && pts.cwiseAbs().maxCoeff() / cell_ > 1e15) usable_ = false;
    }
    bool usable() const { return usable_; }
    std::vector<std::int64_t> cell_of(Index i) const
    {
        std::vector<std::int64_t> c(static_cast<std::size_t>(pts_.cols()));
        for (Index d = 0; d < pts_.cols(); ++d) c[std::size_t(d)] = static_cast<std::int64_t>(std::floor(pts_(i, d) / cell_));
        return c;
    }
    void insert(Index i, int id) { cells_[cell_of(i)].push_back(id); }
    /// Calls f(id) for every id stored in the 3^k cells around point i.
    template <class F>
    void for_neighbours(Index i, F&& f) const
    {
        const auto base = cell_of(i);
        const int k = static_cast<int>(base.size());
        std::vector<int> off(static_cast<std::size_t>(k), -1);
        std::vector<std::int64_t> c(base);
        while (true) {
            for (int d = 0; d < k; ++d) c[std::size_t(d)] = base[std::size_t(d)] + off[std::size_t(d)];
            auto it = cells_.find(c);
            if (it != cells_.end())
                for (int id : it->second) f(id);
            int d = 0;
            while (d < k && off[std::size_t(d)] == 1) off[std::size_t(d++)] = -1;
            if (d == k) break;
            ++off[std::size_t(d)];
        }
    }

private:
    const MatrixD& pts_;
    double cell_;
    bool usable_ = false;
    std::unordered_map<std::vector<std::int64_t>, std::vector<int>, CellHash> cells_;
};

double dist2(const MatrixD& p, Index a, Index b) { return (p.row(a) - p.row(b)).squaredNorm(); }

// Relabel so that groups are numbered by decreasing size (ties: first appearance), then centres.
Grouping finish(const MatrixD& modes, std::vector<int> raw, int groups)
{
    std::vector<Index> size(static_cast<std::size_t>(groups), 0);
    for (int g : raw) ++size[std::size_t(g)];
    std::vector<int> order(static_cast<std::size_t>(groups));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return size[std::size_t(a)] > size[std::size_t(b)]; });
    std::vector<int> rank(static_cast<std::size_t>(groups));
    for (int r = 0; r < groups; ++r) rank[std::size_t(order[std::size_t(r)])] = r;

    Grouping out;
    out.labels.resize(raw.size());
    out.sizes.resize(static_cast<std::size_t>(groups));
    out.centres = MatrixD::Zero(groups, modes.cols());
    for (std::size_t i = 0; i < raw.size(); ++i) {
        const int g = rank[std::size_t(raw[i])];
        out.labels[i] = g;
        out.centres.row(g) += modes.row(Index(i));
    }
    for (int g = 0; g < groups; ++g) {
        out.sizes[std::size_t(g)] = size[std::size_t(order[std::size_t(g)])];
        out.centres.row(g) /= static_cast<double>(out.sizes[std::size_t(g)]);
    }
    return out;
}

Grouping sequential(const MatrixD& modes, double eps)
{
    // Alg. 6 with the intended test: a mode joins the first group (in creation order) whose
    // representative (first mode) is within eps, else opens a new group.
    const Index m = modes.rows();
    const double eps2 = eps * eps;
    std::vector<int> raw(static_cast<std::size_t>(m));
    std::vector<Index> rep;  // representative mode of each group
    Grid grid(modes, eps);
    for (Index i = 0; i < m; ++i) {
        int found = -1;
        if (grid.usable()) {
            grid.for_neighbours(i, [&](int g) {
                if ((found < 0 || g < found) && dist2(modes, i, rep[std::size_t(g)]) <= eps2) found = g;
            });
        } else {
            for (std::size_t g = 0; g < rep.size(); ++g)
                if (dist2(modes, i, rep[g]) <= eps2) {
                    found = static_cast<int>(g);
                    break;
                }
        }
        if (found < 0) {
            found = static_cast<int>(rep.size());
            rep.push_back(i);
            if (grid.usable()) grid.insert(i, found);
        }
        raw[std::size_t(i)] = found;
    }
    return finish(modes, std::move(raw), static_cast<int>(rep.size()));
}

Index find_root(std::vector<Index>& parent, Index x)
{
    while (parent[std::size_t(x)] != x) {
        parent[std::size_t(x)] = parent[std::size_t(parent[std::size_t(x)])];
        x = parent[std::size_t(x)];
    }
    return x;
}

Grouping components(const MatrixD& modes, double delta)
{
    const Index m = modes.rows();
    const double d2max = delta * delta;
    std::vector<Index> parent(static_cast<std::size_t>(m));
    std::iota(parent.begin(), parent.end(), Index(0));
    auto unite = [&](Index a, Index b) {
        a = find_root(parent, a);
        b = find_root(parent, b);
        if (a != b) parent[std::size_t(std::max(a, b))] = std::min(a, b);
    };
    Grid grid(modes, delta);
    if (grid.usable()) {
        for (Index i = 0; i < m; ++i) {
            grid.for_neighbours(i, [&](int j) {
                if (dist2(modes, i, j) <= d2max) unite(i, j);
            });
            grid.insert(i, static_cast<int>(i));
        }
    } else {
        for (Index i = 0; i < m; ++i)
            for (Index j = 0; j < i; ++j)
                if (dist2(modes, i, j) <= d2max) unite(i, j);
    }
    std::vector<int> raw(static_cast<std::size_t>(m));
    std::unordered_map<Index, int> id;
    for (Index i = 0; i < m; ++i) {
        const Index r = find_root(parent, i);
        auto it = id.emplace(r, static_cast<int>(id.size())).first;
        raw[std::size_t(i)] = it->second;
    }
    return finish(modes, std::move(raw), static_cast<int>(id.size()));
}

}  // namespace

Grouping group_modes(const MatrixD& modes, double eps, GroupingMethod method)
{
    if (!std::isfinite(eps) || eps < 0)
        throw InvalidArgument("groupModes: eps must be finite and >= 0, got " + std::to_string(eps));
    if (modes.rows() > std::numeric_limits<int>::max())
        throw InvalidArgument("groupModes: too many modes for int labels");
    if (modes.rows() == 0 || method == GroupingMethod::None) return Grouping{{}, MatrixD(0, modes.cols()), {}};
    return method == GroupingMethod::Sequential ? sequential(modes, eps) : components(modes, eps);
}

}  // namespace meanshift

// groupModes (Alg. 6, sequential as intended) and connected components: edge cases, the
// difference between the two (transitivity, order), label numbering and centres, and a random
// comparison against brute-force versions written here (exercises the grid path for small k and
// the linear scan for large k).
#include "test_support.hpp"

#include <meanshift/grouping.hpp>

#include <numeric>

using namespace meanshift;
using mstest::same_partition;

namespace {

MatrixD column(std::initializer_list<double> v)
{
    MatrixD m(static_cast<Index>(v.size()), 1);
    Index i = 0;
    for (double x : v) m(i++, 0) = x;
    return m;
}

/// Common invariants: labels in [0, c), sizes match the labels and do not increase, centres are
/// the means of their modes.
void check_invariants(const Grouping& g, const MatrixD& modes)
{
    const Index m = modes.rows();
    const int c = static_cast<int>(g.sizes.size());
    REQUIRE(g.labels.size() == std::size_t(m));
    REQUIRE(g.centres.rows() == c);
    REQUIRE(g.centres.cols() == modes.cols());
    std::vector<Index> count(std::size_t(c), 0);
    MatrixD sum = MatrixD::Zero(c, modes.cols());
    for (Index i = 0; i < m; ++i) {
        const int l = g.labels[std::size_t(i)];
        REQUIRE(l >= 0);
        REQUIRE(l < c);
        ++count[std::size_t(l)];
        sum.row(l) += modes.row(i);
    }
    for (int l = 0; l < c; ++l) {
        CHECK(count[std::size_t(l)] == g.sizes[std::size_t(l)]);
        CHECK(g.sizes[std::size_t(l)] >= 1);
        if (l > 0) CHECK(g.sizes[std::size_t(l - 1)] >= g.sizes[std::size_t(l)]);
        const double scale = 1.0 + sum.row(l).cwiseAbs().maxCoeff();
        CHECK((g.centres.row(l) - sum.row(l) / double(count[std::size_t(l)])).cwiseAbs().maxCoeff() <= 1e-12 * scale);
    }
}

// Brute-force Alg. 6 as intended: first group (creation order) whose first mode is within eps.
std::vector<int> brute_sequential(const MatrixD& p, double eps)
{
    std::vector<Index> rep;
    std::vector<int> raw(std::size_t(p.rows()));
    for (Index i = 0; i < p.rows(); ++i) {
        int found = -1;
        for (std::size_t g = 0; g < rep.size() && found < 0; ++g)
            if ((p.row(i) - p.row(rep[g])).norm() <= eps) found = int(g);
        if (found < 0) {
            found = int(rep.size());
            rep.push_back(i);
        }
        raw[std::size_t(i)] = found;
    }
    return raw;
}

// Brute-force connected components of the graph "distance <= delta".
std::vector<int> brute_components(const MatrixD& p, double delta)
{
    const Index m = p.rows();
    std::vector<int> comp(std::size_t(m), -1);
    int c = 0;
    for (Index s = 0; s < m; ++s) {
        if (comp[std::size_t(s)] >= 0) continue;
        std::vector<Index> stack{s};
        comp[std::size_t(s)] = c;
        while (!stack.empty()) {
            const Index a = stack.back();
            stack.pop_back();
            for (Index b = 0; b < m; ++b)
                if (comp[std::size_t(b)] < 0 && (p.row(a) - p.row(b)).norm() <= delta) {
                    comp[std::size_t(b)] = c;
                    stack.push_back(b);
                }
        }
        ++c;
    }
    return comp;
}

const GroupingMethod kMethods[] = {GroupingMethod::Sequential, GroupingMethod::ConnectedComponents};

std::string name(GroupingMethod g)
{
    return g == GroupingMethod::Sequential ? "sequential" : "components";
}

}  // namespace

TEST_CASE("grouping: a single mode is one group")
{
    for (GroupingMethod method : kMethods) {
        INFO(name(method));
        MatrixD p(1, 3);
        p << 1.5, -2.0, 7.25;
        for (double eps : {0.0, 0.5, 1e9}) {
            Grouping g = group_modes(p, eps, method);
            check_invariants(g, p);
            CHECK(g.labels == std::vector<int>{0});
            CHECK(g.sizes == std::vector<Index>{1});
            CHECK(g.centres == p);
        }
    }
}

TEST_CASE("grouping: no modes gives no groups or InvalidArgument, never a crash")
{
    for (GroupingMethod method : kMethods) {
        INFO(name(method));
        MatrixD p(0, 2);
        try {
            Grouping g = group_modes(p, 0.5, method);
            CHECK(g.labels.empty());
            CHECK(g.sizes.empty());
            CHECK(g.centres.rows() == 0);
        } catch (const InvalidArgument&) {
        }
    }
}

TEST_CASE("grouping: identical modes form one group, also with eps = 0")
{
    for (GroupingMethod method : kMethods) {
        INFO(name(method));
        MatrixD p(10, 2);
        for (Index i = 0; i < 10; ++i) p.row(i) << -3.25, 1e-3;
        for (double eps : {0.0, 1e-12, 0.5}) {
            Grouping g = group_modes(p, eps, method);
            check_invariants(g, p);
            CHECK(g.sizes == std::vector<Index>{10});
            CHECK((g.centres.row(0) - p.row(0)).cwiseAbs().maxCoeff() <= 1e-15 * 4);
        }
    }
}

TEST_CASE("grouping: eps = 0 groups only identical modes")
{
    for (GroupingMethod method : kMethods) {
        INFO(name(method));
        MatrixD p = column({1.0, 1.0 + 1e-12, 1.0, 2.0, 1.0 + 1e-12});
        Grouping g = group_modes(p, 0.0, method);
        check_invariants(g, p);
        REQUIRE(g.sizes.size() == 3);
        CHECK(g.sizes == std::vector<Index>{2, 2, 1});
        CHECK(g.labels[0] == g.labels[2]);
        CHECK(g.labels[1] == g.labels[4]);
        CHECK(g.labels[0] != g.labels[1]);
        CHECK(g.labels[3] == 2);
    }
}

TEST_CASE("grouping: chains merge transitively in connected components, not in Alg. 6")
{
    // Gaps 0.5, 0.4, 0.3, 0.4 are all below eps = 1, but 0 and 1.2 are 1.2 apart.
    const MatrixD p = column({0.0, 0.5, 0.9, 1.2, 1.6});
    Grouping cc = group_modes(p, 1.0, GroupingMethod::ConnectedComponents);
    check_invariants(cc, p);
    CHECK(cc.sizes == std::vector<Index>{5});
    CHECK(cc.centres(0, 0) == doctest::Approx(4.2 / 5));

    // Alg. 6: 0 opens group A (representative 0); 0.5 and 0.9 join A; 1.2 is 1.2 from 0: opens B;
    // 1.6 joins B. A (3 modes) is label 0, B (2 modes) is label 1.
    Grouping seq = group_modes(p, 1.0, GroupingMethod::Sequential);
    check_invariants(seq, p);
    CHECK(seq.labels == std::vector<int>{0, 0, 0, 1, 1});
    CHECK(seq.sizes == std::vector<Index>{3, 2});
    CHECK(seq.centres(0, 0) == doctest::Approx(1.4 / 3));
    CHECK(seq.centres(1, 0) == doctest::Approx(1.4));
}

TEST_CASE("grouping: Alg. 6 depends on the order of the modes, connected components do not")
{
    const MatrixD fwd = column({0.0, 0.5, 0.9, 1.2, 1.6});
    const MatrixD rev = column({1.6, 1.2, 0.9, 0.5, 0.0});
    Grouping a = group_modes(fwd, 1.0, GroupingMethod::Sequential);
    Grouping b = group_modes(rev, 1.0, GroupingMethod::Sequential);
    // Reversed: 1.6 opens A; 1.2 and 0.9 join A (0.7 from 1.6); 0.5 opens B; 0.0 joins B.
    CHECK(b.labels == std::vector<int>{0, 0, 0, 1, 1});
    CHECK(b.centres(0, 0) == doctest::Approx(3.7 / 3));
    // The mode 0.9 is grouped with 0 going forward but with 1.6 going backward.
    CHECK(a.labels[0] == a.labels[2]);
    CHECK(b.labels[2] == b.labels[0]);
    CHECK(b.labels[2] != b.labels[4]);

    auto rng = mstest::make_rng("grouping-order");
    MSTEST_SEED_INFO();
    MatrixD p(200, 2);
    std::uniform_real_distribution<double> U(0.0, 10.0);
    for (Index i = 0; i < p.rows(); ++i) p.row(i) << U(rng), U(rng);
    std::vector<Index> perm(200);
    std::iota(perm.begin(), perm.end(), Index(0));
    std::shuffle(perm.begin(), perm.end(), rng);
    MatrixD q(200, 2);
    for (Index i = 0; i < 200; ++i) q.row(i) = p.row(perm[std::size_t(i)]);
    Grouping gp = group_modes(p, 0.6, GroupingMethod::ConnectedComponents);
    Grouping gq = group_modes(q, 0.6, GroupingMethod::ConnectedComponents);
    std::vector<int> back(200);
    for (Index i = 0; i < 200; ++i) back[std::size_t(perm[std::size_t(i)])] = gq.labels[std::size_t(i)];
    CHECK(same_partition(gp.labels, back));
    CHECK(gp.sizes == gq.sizes);
}

TEST_CASE("grouping: labels are numbered by decreasing group size, centres are group means")
{
    // Four far-apart groups of sizes 1, 5, 3, 7, interleaved.
    const double where[4] = {0.0, 10.0, 20.0, 30.0};
    const int size[4] = {1, 5, 3, 7};
    std::vector<int> group;
    for (int g = 0; g < 4; ++g) group.insert(group.end(), std::size_t(size[g]), g);
    auto rng = mstest::make_rng("grouping-sizes");
    MSTEST_SEED_INFO();
    std::shuffle(group.begin(), group.end(), rng);
    std::uniform_real_distribution<double> jitter(-0.1, 0.1);
    MatrixD p(Index(group.size()), 2);
    for (Index i = 0; i < p.rows(); ++i) p.row(i) << where[group[std::size_t(i)]] + jitter(rng), jitter(rng);
    const int expected_label[4] = {3, 1, 2, 0};  // by decreasing size 7, 5, 3, 1
    for (GroupingMethod method : kMethods) {
        INFO(name(method));
        Grouping g = group_modes(p, 1.0, method);
        check_invariants(g, p);
        CHECK(g.sizes == std::vector<Index>{7, 5, 3, 1});
        for (Index i = 0; i < p.rows(); ++i) CHECK(g.labels[std::size_t(i)] == expected_label[group[std::size_t(i)]]);
        for (int gi = 0; gi < 4; ++gi) CHECK(std::abs(g.centres(expected_label[gi], 0) - where[gi]) < 0.1);
    }
}

TEST_CASE("grouping: modes on both sides of a grid-cell boundary or of zero are grouped")
{
    for (GroupingMethod method : kMethods) {
        INFO(name(method));
        for (double eps : {0.01, 1.0, 3.0}) {
            INFO("eps = " << eps);
            MatrixD p(6, 2);
            p << -0.001 * eps, 0.0,  //
                0.001 * eps, 0.0,  //
                0.999 * eps, 5.0 * eps,  //
                1.001 * eps, 5.0 * eps,  //
                -7.0 * eps, -0.999 * eps,  //
                -7.0 * eps, -1.001 * eps;
            Grouping g = group_modes(p, eps, method);
            check_invariants(g, p);
            CHECK(g.sizes.size() == 3);
            CHECK(g.labels[0] == g.labels[1]);
            CHECK(g.labels[2] == g.labels[3]);
            CHECK(g.labels[4] == g.labels[5]);
        }
    }
}

TEST_CASE("grouping: agrees with brute force on random clustered modes, any k")
{
    auto rng = mstest::make_rng("grouping-brute");
    MSTEST_SEED_INFO();
    for (int k : {1, 2, 3, 5, 6, 9}) {
        for (double eps : {0.35, 1.0, 2.5}) {
            INFO("k = " << k << ", eps = " << eps);
            std::uniform_real_distribution<double> U(-10.0, 10.0);
            std::normal_distribution<double> N(0.0, 0.4);
            MatrixD c(25, k);
            for (Index j = 0; j < c.rows(); ++j)
                for (int d = 0; d < k; ++d) c(j, d) = U(rng);
            MatrixD p(300, k);
            std::uniform_int_distribution<Index> pick(0, c.rows() - 1);
            for (Index i = 0; i < p.rows(); ++i) {
                const Index j = pick(rng);
                for (int d = 0; d < k; ++d) p(i, d) = c(j, d) + N(rng);
            }
            Grouping seq = group_modes(p, eps, GroupingMethod::Sequential);
            check_invariants(seq, p);
            CHECK(same_partition(seq.labels, brute_sequential(p, eps)));
            Grouping cc = group_modes(p, eps, GroupingMethod::ConnectedComponents);
            check_invariants(cc, p);
            CHECK(same_partition(cc.labels, brute_components(p, eps)));
            CHECK(cc.sizes.size() <= seq.sizes.size());
        }
    }
}

TEST_CASE("grouping: eps < 0 or non-finite is rejected")
{
    const MatrixD p = column({0.0, 1.0});
    for (GroupingMethod method : kMethods) {
        INFO(name(method));
        for (double eps : {-1e-9, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
            INFO("eps = " << eps);
            CHECK_THROWS_KEYWORD(InvalidArgument, group_modes(p, eps, method), "eps");
        }
    }
}

TEST_CASE("grouping: blocks of the parallel scan keep Alg. 6's order, many groups, far from the origin")
{
    // Several blocks (block_rows() >= 1024 modes), more representatives than one GEMM tile (512), a
    // grid (k <= 5) and the GEMM tiles (k > 5), and an offset of 1e6 where |y|^2 + |r|^2 - 2 y.r
    // cancels: every decision must still be brute force's.
    auto rng = mstest::make_rng("grouping-blocks");
    MSTEST_SEED_INFO();
    for (int k : {2, 7, 40}) {
        for (double offset : {0.0, 1e6}) {
            INFO("k = " << k << ", offset = " << offset);
            std::uniform_real_distribution<double> U(-30.0, 30.0);
            std::normal_distribution<double> N(0.0, 0.3);
            MatrixD c(1200, k);
            for (Index j = 0; j < c.rows(); ++j)
                for (int d = 0; d < k; ++d) c(j, d) = U(rng);
            MatrixD p(2600, k);
            std::uniform_int_distribution<Index> pick(0, c.rows() - 1);
            for (Index i = 0; i < p.rows(); ++i) {
                const Index j = pick(rng);
                for (int d = 0; d < k; ++d) p(i, d) = offset + c(j, d) + N(rng);
            }
            const double eps = 0.75;
            Grouping seq = group_modes(p, eps, GroupingMethod::Sequential);
            check_invariants(seq, p);
            CHECK(seq.sizes.size() > 600);
            CHECK(same_partition(seq.labels, brute_sequential(p, eps)));
            Grouping cc = group_modes(p, eps, GroupingMethod::ConnectedComponents);
            check_invariants(cc, p);
            CHECK(same_partition(cc.labels, brute_components(p, eps)));
        }
    }
}

TEST_CASE("grouping: a mode exactly eps from a representative joins it, also at large k and offsets")
{
    // Coordinates 2^20 + multiples of 1/4: every distance below is exact in float64, so "within eps"
    // is decided by <= eps alone; the GEMM form's rounding must not move a mode across that border.
    for (int k : {1, 3, 16, 64}) {
        INFO("k = " << k);
        const double base = 1048576.0, eps = 0.5;
        MatrixD p(2100, k);
        for (Index i = 0; i < p.rows(); ++i) {
            p.row(i).setConstant(base + 4.0 * double(i / 3));  // triples far apart
            if (i % 3 == 1) p(i, 0) += eps;  // exactly eps from the first: joins
            if (i % 3 == 2) p(i, k - 1) -= eps + 0x1p-30;  // just beyond eps (exact at 2^20): its own group
        }
        const Grouping g = group_modes(p, eps, GroupingMethod::Sequential);
        check_invariants(g, p);
        CHECK(g.sizes.size() == std::size_t(1400));
        for (Index i = 0; i + 2 < p.rows(); i += 3) {
            CHECK(g.labels[std::size_t(i)] == g.labels[std::size_t(i + 1)]);
            CHECK(g.labels[std::size_t(i)] != g.labels[std::size_t(i + 2)]);
        }
    }
}

// The run-time model of Theorems 1-3 (meanshift/cost_model.hpp): the counts for hand-computed
// workloads, the under-utilisation factor, validation, and the NNLS fit recovering known constants
// from synthetic times.
#include "step_support.hpp"
#include "test_support.hpp"

#include <meanshift/cost_model.hpp>

using namespace meanshift;
using namespace meanshift::model;

namespace {

using mstest::topo;

Workload work(Index n, int k, Index m, Topology t, KernelModel kernel = KernelModel::Shared, int iterations = 1)
{
    Workload w;
    w.n = n;
    w.k = k;
    w.m = m;
    w.topology = t;
    w.kernel = kernel;
    w.iterations = iterations;
    return w;
}

}  // namespace

TEST_CASE("cost model: term names and lambda")
{
    const auto& names = term_names();
    CHECK(names[0] == "loop");
    CHECK(names[1] == "loop_distinct");
    CHECK(names[2] == "reduce_adds");
    CHECK(names[3] == "reduce_traffic");
    CHECK(names[4] == "aleph");
    CHECK(names[5] == "finalize");
    CHECK(names[6] == "per_mode");
    CHECK(names[7] == "per_step");
    CHECK(lambda(KernelModel::Shared, 5) == 0);
    CHECK(lambda(KernelModel::PerPoint, 5) == 11);
}

TEST_CASE("cost model: Alg. 1 on one PU (z = tau = f_vppu = f_load = 1)")
{
    const CostTerms c = cost_terms(work(10, 3, 7, topo(1, 1, 1, 1)));
    CHECK(c.waves == 7);
    CHECK(c.loop == 150);  // 10 · (5·3 + 0)
    CHECK(c.loop_distinct == 0);
    CHECK(c.reduce_adds == 0);
    CHECK(c.reduce_traffic == 0);
    CHECK(c.aleph == 0);
    CHECK(c.finalize == 6);
    CHECK(c.per_mode == 21);
    CHECK(c.utilisation == doctest::Approx(1.0));
    const auto row = c.row();
    const std::array<double, kTerms> want{7 * 150.0, 0, 0, 0, 0, 7 * 6.0, 21, 1};
    for (int i = 0; i < kTerms; ++i) CHECK(row[std::size_t(i)] == doctest::Approx(want[std::size_t(i)]));
}

TEST_CASE("cost model: vPPUs, load factor, reductions and the fold step")
{
    // z = 4, tau = 64, f_vppu = 8: tau' = 8, 32 modes per wave.
    SUBCASE("f_load = f_vppu = 8 (power of two), m = 64: two full waves, full utilisation")
    {
        const CostTerms c = cost_terms(work(1000, 3, 64, topo(4, 64, 8, 8)));
        CHECK(c.waves == 2);
        CHECK(c.loop == 125 * 15);
        CHECK(c.loop_distinct == 125 * 3);
        CHECK(c.reduce_adds == 2 * 3 * 3);
        CHECK(c.reduce_traffic == 2 * 7 * 3);
        CHECK(c.aleph == 0);
        CHECK(c.finalize == 6);
        CHECK(c.per_mode == 192);
        CHECK(c.utilisation == doctest::Approx(1.0));
    }
    SUBCASE("f_load = 6: ragged n-loop and the fold step before the tree")
    {
        const CostTerms c = cost_terms(work(1000, 3, 64, topo(4, 64, 8, 6)));
        CHECK(c.loop == 167 * 15);
        CHECK(c.reduce_adds == 2 * 2 * 3);
        CHECK(c.reduce_traffic == 2 * 5 * 3);
        CHECK(c.aleph == 6);
        CHECK(c.utilisation == doctest::Approx(64.0 * 1000 / (2 * 32 * 8 * 167)));
    }
    SUBCASE("utilisation = f_load / f_vppu when m is a multiple of z·tau' and f_load divides n")
    {
        CHECK(cost_terms(work(1000, 3, 64, topo(4, 64, 8, 4))).utilisation == doctest::Approx(0.5));
        CHECK(cost_terms(work(1000, 3, 96, topo(4, 64, 8, 2))).utilisation == doctest::Approx(0.25));
        CHECK(cost_terms(work(1024, 2, 2, topo(1, 64, 64, 64))).utilisation == doctest::Approx(1.0));
    }
    SUBCASE("an incomplete last wave")
    {
        const CostTerms c = cost_terms(work(1000, 3, 33, topo(4, 64, 8, 8)));
        CHECK(c.waves == 2);
        CHECK(c.utilisation == doctest::Approx(33.0 / 64.0));
    }
    SUBCASE("per-point kernel: lambda = 2k + 1 in the loop")
    {
        const CostTerms c = cost_terms(work(100, 4, 1, topo(1, 1, 1, 1), KernelModel::PerPoint));
        CHECK(c.loop == 100 * (20 + 9));
    }
}

TEST_CASE("cost model: invalid workloads are rejected")
{
    const Topology ok = topo(1, 1, 1, 1);
    CHECK_THROWS_AS(cost_terms(work(0, 3, 1, ok)), InvalidArgument);
    CHECK_THROWS_AS(cost_terms(work(10, 0, 1, ok)), InvalidArgument);
    CHECK_THROWS_AS(cost_terms(work(10, 3, 0, ok)), InvalidArgument);
    CHECK_THROWS_AS(cost_terms(work(10, 3, 1, ok, KernelModel::Shared, 0)), InvalidArgument);
    CHECK_THROWS_KEYWORD(InvalidArgument, cost_terms(work(10, 3, 1, Topology{})), "topology", "must be");
    CHECK_THROWS_KEYWORD(InvalidArgument, cost_terms(work(10, 3, 1, topo(1, 64, 3, 1))), "divide");
    CHECK_THROWS_AS(fit({}), InvalidArgument);
    for (double t : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
        INFO("seconds " << t);
        Sample s;
        s.workload = work(10, 3, 1, ok);
        s.seconds = t;
        CHECK_THROWS_AS(fit({s}), InvalidArgument);
    }
}

TEST_CASE("cost model: the fit recovers known constants from synthetic times")
{
    Constants truth;
    truth.value = {1e-9, 3e-10, 2e-9, 5e-10, 1e-8, 4e-9, 2e-8, 1e-5};
    std::vector<Sample> samples;
    const Topology tops[] = {topo(1, 1, 1, 1),   topo(4, 64, 8, 8), topo(4, 64, 8, 6),
                             topo(2, 16, 16, 3), topo(8, 32, 1, 1), topo(2, 64, 64, 64)};
    for (Index n : {100, 1000, 5000})
        for (int k : {1, 3, 8})
            for (Index m : {1, 50, 300})
                for (const Topology& t : tops)
                    for (KernelModel km : {KernelModel::Shared, KernelModel::PerPoint}) {
                        Sample s;
                        s.workload = work(n, k, m, t, km, 1 + int(n % 3));
                        s.seconds = predict_seconds(s.workload, truth);
                        samples.push_back(s);
                    }
    // predict_seconds is iterations × (row · constants).
    const Workload w3 = work(1000, 3, 50, tops[2], KernelModel::Shared, 3);
    const auto row = cost_terms(w3).row();
    double one = 0;
    for (int i = 0; i < kTerms; ++i) one += row[std::size_t(i)] * truth.value[std::size_t(i)];
    CHECK(predict_seconds(w3, truth) == doctest::Approx(3 * one).epsilon(1e-12));

    const FitResult f = fit(samples);
    CHECK(f.r2 == doctest::Approx(1.0).epsilon(1e-9));
    CHECK(f.r2_log == doctest::Approx(1.0).epsilon(1e-9));
    CHECK(f.worst_relative_residual < 1e-6);
    REQUIRE(f.predicted.size() == samples.size());
    for (int i = 0; i < kTerms; ++i) {
        INFO("term " << term_names()[std::size_t(i)]);
        CHECK(f.constants.identified[std::size_t(i)]);
        CHECK(f.constants.value[std::size_t(i)] == doctest::Approx(truth.value[std::size_t(i)]).epsilon(1e-4));
    }
}

TEST_CASE("cost model: terms absent from every sample are not identified")
{
    // One PU per vPPU and f_load = 1 everywhere: no loop_distinct, no reduction, no fold step.
    Constants truth;
    truth.value = {2e-9, 0, 0, 0, 0, 3e-9, 1e-8, 2e-6};
    std::vector<Sample> samples;
    for (Index n : {100, 2000})
        for (int k : {1, 4})
            for (Index m : {1, 37, 500})
                for (const Topology& t : {topo(1, 1, 1, 1), topo(4, 8, 1, 1)}) {
                    Sample s;
                    s.workload = work(n, k, m, t);
                    s.seconds = predict_seconds(s.workload, truth);
                    samples.push_back(s);
                }
    const FitResult f = fit(samples);
    for (int i : {1, 2, 3, 4}) {
        INFO("term " << term_names()[std::size_t(i)]);
        CHECK_FALSE(f.constants.identified[std::size_t(i)]);
        CHECK(f.constants.value[std::size_t(i)] == 0.0);
    }
    CHECK(f.worst_relative_residual < 1e-6);
}

TEST_CASE("cost model: candidate pairs of the truncated kernel replace m*n in the loop terms")
{
    Workload w = work(1000, 3, 40, topo(1, 1, 1, 1));
    const CostTerms full = cost_terms(w);
    w.candidates = 40.0 * 1000;  // = m·n: unchanged
    CHECK(cost_terms(w).loop == doctest::Approx(full.loop));
    w.candidates = 40.0 * 250;  // each mode visits a quarter of the points
    const CostTerms cut = cost_terms(w);
    CHECK(cut.loop == doctest::Approx(250.0 * 15));
    CHECK(cut.finalize == full.finalize);
    CHECK(cut.per_mode == full.per_mode);
    CHECK(cut.utilisation == doctest::Approx(1.0));
    w.candidates = 40.0 * 1000 + 1;
    CHECK_THROWS_AS(cost_terms(w), meanshift::InvalidArgument);
    w.candidates = -1;
    CHECK_THROWS_AS(cost_terms(w), meanshift::InvalidArgument);
}

// Conformance through the backend interface: make_backend + bind + step_once, one iteration of Alg. 3
// for a set of modes, against the serial oracle and the independent reference, for ragged n,
// k = 1…64, both kernel models, ragged mode counts and every topology the backend accepts.
#include "conformance.hpp"

using namespace meanshift;
using namespace mstest;

namespace {

std::string model_name(KernelModel m)
{
    return m == KernelModel::Shared ? "shared" : "per-point";
}

/// Steps Q on D with the backend under test in every topology, compares with the oracle and the
/// reference. Per-point test bandwidths are within e^{±0.35} of 1 (sqrt of e^{±0.7} precision), so
/// the tolerance in prepared units is step_tolerance(R) × 1.5.
void check_step(Backend& be, Backend& oracle, const PreparedData& D, const MatrixD& Q,
                std::size_t max_topologies = 1000)
{
    const auto shared = share(D);
    const MatrixD want = conf::step(*oracle.bind(shared, Topology{}), Q);
    const ref::Model M(D.points, D.model == KernelModel::Shared ? MatrixD::Ones(D.n(), D.k())
                                                                : MatrixD(D.precision.cwiseInverse()));
    MatrixD ref_out(Q.rows(), Q.cols());
    for (Index q = 0; q < Q.rows(); ++q) ref::step(M, Q.row(q).data(), ref_out.row(q).data());
    const double R = conf::extent(D.points, Q);
    const double tol = conf::step_tolerance(R) * (D.model == KernelModel::Shared ? 1.0 : 1.5);
    CHECK(max_abs_diff(want, ref_out) <= 1e-10 * (1 + R));  // the oracle itself
    auto ts = conf::topologies(be, D);
    if (ts.size() > max_topologies) ts.resize(max_topologies);
    for (const Topology& t : ts) {
        INFO("topology " << t.to_string() << ", count " << Q.rows() << ", tolerance " << tol);
        const MatrixD got = conf::step(*be.bind(shared, t), Q);
        CHECK(got.allFinite());
        CHECK(max_abs_diff(got, want) <= tol);
        CHECK(max_abs_diff(got, ref_out) <= tol);
    }
}

}  // namespace

TEST_CASE("conformance step: ragged n and ragged mode counts")
{
    auto rng = make_rng("conf-step-ragged");
    MSTEST_SEED_INFO();
    auto be = make_backend(conf::backend());
    auto oracle = make_backend("serial");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        for (Index n : {1, 2, 7, 63, 64, 65, 1000, 1023}) {
            for (int k : {1, 3}) {
                const PreparedData D = random_prepared(rng, n, k, model);
                for (Index count : {Index(1), Index(63), n}) {
                    INFO(model_name(model) << ", n = " << n << ", k = " << k << ", count = " << count);
                    check_step(*be, *oracle, D, random_queries(rng, D, count));
                }
            }
        }
    }
}

TEST_CASE("conformance step: k = 1 ... 64")
{
    auto rng = make_rng("conf-step-k");
    MSTEST_SEED_INFO();
    auto be = make_backend(conf::backend());
    auto oracle = make_backend("serial");
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        for (int k : {1, 2, 3, 4, 5, 7, 8, 16, 17, 33, 64}) {
            for (Index n : {65, 200}) {
                INFO(model_name(model) << ", n = " << n << ", k = " << k);
                const PreparedData D = random_prepared(rng, n, k, model);
                check_step(*be, *oracle, D, random_queries(rng, D, n == 65 ? 130 : 33));
            }
        }
    }
}

TEST_CASE("conformance step: a mode without support keeps its position; count 0 is a no-op")
{
    auto rng = make_rng("conf-step-support");
    MSTEST_SEED_INFO();
    auto be = make_backend(conf::backend());
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        INFO(model_name(model));
        const PreparedData D = random_prepared(rng, 100, 3, model);
        auto binding = be->bind(share(D), Topology{});
        MatrixD Q(2, 3);
        Q << 1000.25, -1000.5, 999.75,  // every weight underflows, in float64 too
            0.5, 0.5, 0.5;
        StepReport report;
        const MatrixD got = conf::step(*binding, Q, &report);
        CHECK(got(0, 0) == 1000.25);
        CHECK(got(0, 1) == -1000.5);
        CHECK(got(0, 2) == 999.75);
        CHECK(got.row(1).allFinite());
        REQUIRE(report.mode.size() == 2);
        for (std::size_t j = 0; j < 2; ++j)
            CHECK(report.status[j] == (report.mode[j] == 0 ? ModeStatus::NoSupport : ModeStatus::Active));

        double dummy = 42.0;
        CHECK_THROWS_AS(binding->set_modes(&dummy, 0), InvalidArgument);
    }
}

TEST_CASE("conformance step: binding new data replaces the old (different n, k, model)")
{
    auto rng = make_rng("conf-step-rebind");
    MSTEST_SEED_INFO();
    auto be = make_backend(conf::backend());
    auto oracle = make_backend("serial");
    const PreparedData A = random_prepared(rng, 300, 4, KernelModel::Shared);
    const PreparedData B = random_prepared(rng, 77, 2, KernelModel::PerPoint);
    const PreparedData C = random_prepared(rng, 513, 4, KernelModel::Shared);
    for (const PreparedData* D : {&A, &B, &C, &A}) {
        INFO("n = " << D->n() << ", k = " << D->k());
        const MatrixD Q = random_queries(rng, *D, 40);
        const MatrixD got = conf::step(*be->bind(share(*D), Topology{}), Q);
        const MatrixD want = conf::step(*oracle->bind(share(*D), Topology{}), Q);
        CHECK(max_abs_diff(got, want) <= 1.5 * conf::step_tolerance(conf::extent(D->points, Q)));
    }
}

TEST_CASE("conformance step: invalid topology requests are rejected with InvalidArgument")
{
    auto rng = make_rng("conf-step-topology");
    MSTEST_SEED_INFO();
    auto be = make_backend(conf::backend());
    const PreparedData D = random_prepared(rng, 100, 3, KernelModel::Shared);
    const Topology def = be->resolve_topology(Topology{}, D);
    const int tau = def.pus_per_ppu;
    Topology t;
    t.pus_per_ppu = tau;
    t.f_vppu = tau + 1;  // cannot divide tau
    CHECK_THROWS_KEYWORD(InvalidArgument, be->resolve_topology(t, D), "f_vppu", "tau");
    t = Topology{};
    t.f_vppu = def.f_vppu;
    t.f_load = def.f_vppu + 1;  // more loaders than PUs in the vPPU
    CHECK_THROWS_KEYWORD(InvalidArgument, be->resolve_topology(t, D), "f_load");
    t = Topology{};
    t.f_load = -1;
    CHECK_THROWS_KEYWORD(InvalidArgument, be->resolve_topology(t, D), "f_load");
    t = Topology{};
    t.ppus = -2;
    CHECK_THROWS_KEYWORD(InvalidArgument, be->resolve_topology(t, D), "ppu", "z");
}

TEST_CASE("conformance step: topologies under test (listed for the log)")
{
    auto rng = make_rng("conf-step-list");
    auto be = make_backend(conf::backend());
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        const PreparedData D = random_prepared(rng, 1000, 3, model);
        const auto ts = conf::topologies(*be, D);
        CHECK_FALSE(ts.empty());
        for (const Topology& t : ts)
            MESSAGE(conf::backend() << ", " << model_name(model) << ", n = 1000, k = 3: " << t.to_string());
    }
}

TEST_CASE("conformance step: Alg. 7 preloading (BackendOptions::preload and preload_size)")
{
    // Backends without preloading ignore the option; one that declines a size (InvalidArgument or
    // NotSupported at creation or bind, e.g. a tile larger than local memory) is reported and skipped.
    auto rng = make_rng("conf-step-preload");
    MSTEST_SEED_INFO();
    auto oracle = make_backend("serial");
    struct Variant {
        Preload preload;
        int size;
    };
    for (const Variant v : {Variant{Preload::On, 0}, Variant{Preload::On, 1}, Variant{Preload::On, 7},
                            Variant{Preload::On, 64}, Variant{Preload::Off, 0}, Variant{Preload::Auto, 0}}) {
        INFO("preload " << static_cast<int>(v.preload) << ", preload_size " << v.size);
        BackendOptions bo;
        bo.preload = v.preload;
        bo.preload_size = v.size;
        std::unique_ptr<Backend> be;
        try {
            be = make_backend(conf::backend(), bo);
        } catch (const InvalidArgument& e) {
            MESSAGE("declined at creation: " << std::string(e.what()));
            continue;
        } catch (const NotSupported& e) {
            MESSAGE("declined at creation: " << std::string(e.what()));
            continue;
        }
        for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
            for (Index n : {63, 1023}) {
                for (int k : {1, 17}) {
                    INFO(model_name(model) << ", n = " << n << ", k = " << k);
                    const PreparedData D = random_prepared(rng, n, k, model);
                    try {
                        (void)be->resolve_topology(Topology{}, D);
                    } catch (const InvalidArgument& e) {
                        MESSAGE("declined at bind: " << std::string(e.what()));
                        continue;
                    }
                    check_step(*be, *oracle, D, random_queries(rng, D, std::min<Index>(n, 130)), 3);
                }
            }
        }
    }
}

TEST_CASE("conformance step: a binding owns its data and outlives the backend")
{
    auto rng = make_rng("conf-step-owned");
    MSTEST_SEED_INFO();
    const PreparedData D = random_prepared(rng, 257, 3, KernelModel::PerPoint);
    const MatrixD Q = random_queries(rng, D, 33);
    const MatrixD want = oracle_step(D, Q);
    std::unique_ptr<Binding> binding;
    {
        auto be = make_backend(conf::backend());
        binding = be->bind(share(D), Topology{});  // the caller's copy and the backend go away
    }
    CHECK(binding->data().n() == 257);
    CHECK(max_abs_diff(conf::step(*binding, Q), want) <= 1.5 * conf::step_tolerance(conf::extent(D.points, Q)));
}

TEST_CASE("conformance step: modes stay bound across steps; converged modes leave the active set")
{
    auto rng = make_rng("conf-step-active");
    MSTEST_SEED_INFO();
    for (KernelModel model : {KernelModel::Shared, KernelModel::PerPoint}) {
        INFO(model_name(model));
        const PreparedData D = random_prepared(rng, 300, 2, model);
        auto be = make_backend(conf::backend());
        auto oracle = make_backend("serial");
        auto b = be->bind(share(D), Topology{});
        auto o = oracle->bind(share(D), Topology{});
        const MatrixD Y0 = random_queries(rng, D, 70);
        const Index m = Y0.rows();
        b->set_modes(Y0.data(), m);
        o->set_modes(Y0.data(), m);
        CHECK(b->mode_count() == m);
        CHECK(b->active_count() == m);
        // Three fixed steps on the device equal three oracle steps (the modes never left it).
        StepReport rb, ro;
        for (int it = 0; it < 3; ++it) {
            b->step(0.0, false, rb);
            o->step(0.0, false, ro);
            CHECK(static_cast<Index>(rb.mode.size()) == m);
        }
        MatrixD yb(m, 2), yo(m, 2);
        b->read_modes(yb.data());
        o->read_modes(yo.data());
        CHECK(max_abs_diff(yb, yo) <= 3 * conf::step_tolerance(conf::extent(D.points, Y0)));
        // Each reported shift is the squared distance moved in that step.
        MatrixD before = yb;
        b->step(0.0, false, rb);
        b->read_modes(yb.data());
        for (std::size_t j = 0; j < rb.mode.size(); ++j) {
            const Index q = rb.mode[j];
            const double d2 = (yb.row(q) - before.row(q)).squaredNorm();
            CHECK(std::abs(rb.shift2[j] - d2) <= 1e-3 * d2 + 1e-9);
        }
        // Retiring: with a huge tolerance every mode converges at once and leaves.
        b->step(1e6, true, rb);
        CHECK(rb.mode.size() == static_cast<std::size_t>(m));
        for (ModeStatus st : rb.status) CHECK(st == ModeStatus::Converged);
        CHECK(b->active_count() == 0);
        b->step(1e6, true, rb);
        CHECK(rb.mode.empty());
        // A mode far from the data leaves as NoSupport, the others stay active under tol = 0.
        MatrixD Y1 = Y0.topRows(5);
        Y1.row(2).setConstant(1e6);
        b->set_modes(Y1.data(), 5);
        b->step(0.0, true, rb);
        REQUIRE(rb.mode.size() == 5);
        for (std::size_t j = 0; j < 5; ++j)
            CHECK(rb.status[j] == (rb.mode[j] == 2 ? ModeStatus::NoSupport : ModeStatus::Active));
        CHECK(b->active_count() == 4);
        MatrixD y1(5, 2);
        b->read_modes(y1.data());
        CHECK(y1(2, 0) == 1e6);
        CHECK(y1(2, 1) == 1e6);
    }
}

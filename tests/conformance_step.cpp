// Conformance through the backend interface: make_backend + bind + step, one iteration of Alg. 3
// for a set of modes, against the serial oracle and the independent reference, for ragged n,
// k = 1…64, both kernel models, ragged mode counts and every topology the backend accepts.
#include "conformance.hpp"

using namespace meanshift;
using namespace mstest;

namespace {

std::string model_name(KernelModel m) { return m == KernelModel::Shared ? "shared" : "per-point"; }

/// Steps Q on D with the backend under test in every topology, compares with the oracle and the
/// reference. Per-point test bandwidths are within e^{±0.35} of 1 (sqrt of e^{±0.7} precision), so
/// the tolerance in prepared units is step_tolerance(R) × 1.5.
void check_step(Backend& be, Backend& oracle, const PreparedData& D, const MatrixD& Q, std::size_t max_topologies = 1000)
{
    oracle.bind(D, oracle.resolve_topology(Topology{}, D));
    const MatrixD want = conf::step(oracle, Q);
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
        be.bind(D, t);
        const MatrixD got = conf::step(be, Q);
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
        be->bind(D, be->resolve_topology(Topology{}, D));
        MatrixD Q(2, 3);
        Q << 1000.25, -1000.5, 999.75,  // every weight underflows, in float64 too
            0.5, 0.5, 0.5;
        const MatrixD got = conf::step(*be, Q);
        CHECK(got(0, 0) == 1000.25);
        CHECK(got(0, 1) == -1000.5);
        CHECK(got(0, 2) == 999.75);
        CHECK(got.row(1).allFinite());

        StepRequest none;
        double dummy = 42.0;
        none.positions = &dummy;
        none.out = &dummy;
        none.count = 0;
        CHECK_NOTHROW(be->step(none));
        CHECK(dummy == 42.0);
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
        be->bind(*D, be->resolve_topology(Topology{}, *D));
        const MatrixD got = conf::step(*be, Q);
        oracle->bind(*D, oracle->resolve_topology(Topology{}, *D));
        const MatrixD want = conf::step(*oracle, Q);
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
        for (const Topology& t : ts) MESSAGE(conf::backend() << ", " << model_name(model) << ", n = 1000, k = 3: " << t.to_string());
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
        bool preload;
        int size;
    };
    for (const Variant v : {Variant{true, 0}, Variant{true, 1}, Variant{true, 7}, Variant{true, 64}, Variant{false, 0}}) {
        INFO("preload " << v.preload << ", preload_size " << v.size);
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
                        be->bind(D, be->resolve_topology(Topology{}, D));
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

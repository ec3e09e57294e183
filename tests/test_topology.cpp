// Topology rules of Alg. 2/3 (validate_topology) and the serial backend's topology, plus
// Topology helpers. Backend-specific limits are exercised by the conformance suite.
#include "step_support.hpp"
#include "test_support.hpp"

#include <meanshift/meanshift.hpp>

using namespace meanshift;

using mstest::topo;

TEST_CASE("topology: valid resolved topologies pass")
{
    for (const Topology& t : {topo(1, 1, 1, 1), topo(4, 64, 8, 8), topo(4, 64, 8, 1), topo(1, 64, 64, 64),
                              topo(132, 256, 1, 1), topo(2, 6, 3, 2), topo(7, 64, 64, 1)}) {
        INFO(t.to_string());
        CHECK_NOTHROW(validate_topology(t, "test"));
    }
}

TEST_CASE("topology: every rule violation names the rule and the backend")
{
    struct Case {
        Topology t;
        const char* word;
    };
    const Case cases[] = {
        {topo(0, 64, 8, 8), "PPU"},        {topo(-1, 64, 8, 8), "PPU"},          {topo(4, 0, 1, 1), "tau"},
        {topo(4, -64, 8, 8), "tau"},       {topo(4, 64, 0, 1), "f_vppu"},        {topo(4, 64, -8, 1), "f_vppu"},
        {topo(4, 64, 3, 1), "divide"},     {topo(4, 64, 128, 1), "f_vppu must"}, {topo(4, 6, 4, 1), "divide"},
        {topo(4, 64, 8, 0), "f_load"},     {topo(4, 64, 8, -2), "f_load"},       {topo(4, 64, 8, 9), "f_load must"},
        {topo(1, 1, 1, 2), "f_load must"},
    };
    for (const Case& c : cases) {
        INFO(c.t.to_string());
        CHECK_THROWS_KEYWORD(InvalidArgument, validate_topology(c.t, "mybackend"), c.word);
        CHECK_THROWS_KEYWORD(InvalidArgument, validate_topology(c.t, "mybackend"), "mybackend");
    }
}

TEST_CASE("topology: tau' = tau / f_vppu and to_string")
{
    CHECK(topo(4, 64, 8, 2).vppus_per_ppu() == 8);
    CHECK(topo(4, 64, 64, 2).vppus_per_ppu() == 1);
    CHECK(topo(4, 64, 1, 1).vppus_per_ppu() == 64);
    CHECK(Topology{}.vppus_per_ppu() == 0);
    const std::string s = topo(3, 64, 8, 2).to_string();
    CHECK(s.find("f_vppu=8") != std::string::npos);
    CHECK(s.find("f_load=2") != std::string::npos);
    CHECK(s.find("z=3") != std::string::npos);
}

TEST_CASE("topology: the serial backend is one PPU with one PU")
{
    auto be = make_backend("serial");
    PreparedData D;
    D.points = MatrixD::Zero(3, 2);
    D.points_f = MatrixF::Zero(3, 2);
    const Topology t = be->resolve_topology(Topology{}, D);
    CHECK(t.ppus == 1);
    CHECK(t.pus_per_ppu == 1);
    CHECK(t.f_vppu == 1);
    CHECK(t.f_load == 1);
    CHECK_NOTHROW(be->resolve_topology(topo(1, 1, 1, 1), D));
    CHECK_THROWS_KEYWORD(InvalidArgument, be->resolve_topology(topo(0, 0, 2, 0), D), "f_vppu");
    CHECK_THROWS_KEYWORD(InvalidArgument, be->resolve_topology(topo(0, 0, 0, 2), D), "f_load");
    CHECK_THROWS_KEYWORD(InvalidArgument, be->resolve_topology(topo(0, 4, 0, 0), D), "tau");
    CHECK_THROWS_KEYWORD(InvalidArgument, be->resolve_topology(topo(-1, 0, 0, 0), D), "ppu", "z");
}

// libFuzzer target: meanshift::cluster() with random data and options: coordinates up
// to ±1e30 (float32), bandwidths from 1e-300 to 1e300 (isotropic, diagonal, per point), cutoff,
// exact, seeding, bin sizes, grouping, iterations, tolerance, 1-2 threads, the serial and OpenMP
// backends; k up to 10^6 with n = 1..2.
//
// Contract checked:
//  - cluster() throws nothing but meanshift::Error subclasses (with a message);
//  - on success the shapes agree (n labels in [0, c), c centres of k finite values, cluster sizes
//    that count the labels, largest first), every mode is finite;
//  - oracle, for small n and k: when every pair of distinct points is far apart in bandwidth units
//    (FarBandwidths in every dimension, measured with the largest bandwidth of that dimension, and
//    resolvable in float32 after centring), each point is its own mode: the default (approximate)
//    run must label the points exactly like the options.exact = true run, both grouping exactly the
//    identical points. Approximations that legitimately change the answer (bins wider than a
//    bandwidth, min_bin_count > 1, zero weights, merge_eps comparable to the gaps or below rounding)
//    skip the oracle.
//
// Input layout: a fixed header of option bytes (zeros when the input is shorter), then a pool of
// bytes the data, bandwidths and weights are decoded from, cycled when more values are needed
// (k = 10^6 from a few bytes).
#include <meanshift/meanshift.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace {

using meanshift::Index;

[[noreturn]] void fail(const char* what, const std::string& detail = {})
{
    std::fprintf(stderr, "fuzz_cluster check failed: %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
    std::abort();
}

constexpr std::size_t kHeader = 24;
/// Pairs at least this many bandwidths apart (in one dimension) count as far for the oracle: the
/// exact kernel weight between them, e^{-16²/2} ≈ 1e-56, moves no mode measurably.
constexpr double kFarBandwidths = 16;

class Header {
public:
    Header(const std::uint8_t* data, std::size_t size) { std::memcpy(b_, data, std::min(size, kHeader)); }
    std::uint8_t u8() { return pos_ < kHeader ? b_[pos_++] : 0; }
    std::uint16_t u16()
    {
        const unsigned lo = u8();
        return static_cast<std::uint16_t>(lo | (unsigned(u8()) << 8));
    }

private:
    std::uint8_t b_[kHeader] = {};
    std::size_t pos_ = 0;
};

/// Circular byte pool for the values (never empty).
class Pool {
public:
    Pool(const std::uint8_t* data, std::size_t size)
        : p_(size > kHeader ? data + kHeader : zero_), n_(size > kHeader ? size - kHeader : 1)
    {
    }
    std::uint8_t u8()
    {
        const std::uint8_t v = p_[i_];
        i_ = i_ + 1 == n_ ? 0 : i_ + 1;
        return v;
    }
    std::uint16_t u16()
    {
        const unsigned lo = u8();
        return static_cast<std::uint16_t>(lo | (unsigned(u8()) << 8));
    }
    float raw_float()
    {
        std::uint32_t u = 0;
        for (int s = 0; s < 32; s += 8) u |= std::uint32_t(u8()) << s;
        float f;
        std::memcpy(&f, &u, sizeof f);
        return f;
    }

private:
    static constexpr std::uint8_t zero_[1] = {0};
    const std::uint8_t* p_;
    std::size_t n_;
    std::size_t i_ = 0;
};

/// A coordinate: mostly a lattice of spacing `scale`, sometimes an extreme or a raw float32,
/// always finite and within ±1e30.
float coordinate(Pool& pool, double scale)
{
    static const float special[16] = {0.0f,  -0.0f, 1e30f, -1e30f, 1e19f, -1e19f,      1e-38f,      1.4e-45f,
                                      1e10f, 3e29f, 1.0f,  -1.0f,  0.5f,  16777216.0f, 16777217.0f, 1e-30f};
    const std::uint8_t b = pool.u8();
    if (b < 0xC0) return static_cast<float>(double(int(b % 33) - 16) * scale);
    if (b < 0xF0) return special[(b - 0xC0) % 16];
    const float f = pool.raw_float();
    if (std::isnan(f)) return 0.0f;
    return std::max(-1e30f, std::min(1e30f, f));
}

/// A bandwidth (standard deviation) in [1e-300, 1e300]: a palette or log-uniform.
double bandwidth_value(Pool& pool)
{
    static const double palette[16] = {1,     0.5,   2,    0.1,    10,    1e-3,  1e3,  1e-300,
                                       1e300, 1e-20, 1e20, 1e-150, 1e150, 1e-38, 1e38, 0.25};
    const std::uint8_t b = pool.u8();
    if (b < 0x80) return palette[b % 16];
    const int e = -300 + int(pool.u16() % 600);  // 10^-300 .. 10^299, times a mantissa in [1, 2)
    return (1.0 + double(b & 0x7F) / 128.0) * std::pow(10.0, e);
}

double pick(std::uint8_t b, std::initializer_list<double> values)
{
    return values.begin()[b % values.size()];
}

struct Case {
    Index n = 1;
    int k = 1;
    meanshift::MatrixF data;
    meanshift::Options opt;
    std::vector<float> weights;  // empty = none
    bool wide = false;
};

Case decode(const std::uint8_t* data, std::size_t size)
{
    Header h(data, size);
    Case c;
    meanshift::Options& o = c.opt;
    const std::uint8_t shape = h.u8();
    const std::uint8_t n_byte = h.u8();
    const std::uint16_t k_word = h.u16();
    c.wide = (shape & 0x1F) == 0x1F;
    if (c.wide) {  // k log-uniform in [1, 10^6], n = 1..2
        c.n = 1 + (n_byte & 1);
        c.k = std::max(1, std::min(1000000, static_cast<int>(std::pow(10.0, 6.0 * k_word / 65535.0))));
    } else {
        c.n = 1 + n_byte % 40;
        c.k = 1 + k_word % 8;
    }
    const std::uint8_t flags = h.u8();
    o.backend = (flags & 1) ? "openmp" : "serial";
    o.backend_options.threads = 1 + ((flags >> 1) & 1);
    o.exact = ((flags >> 2) & 7) == 7;  // 1 in 8
    o.seeding = (flags & 0x20) ? meanshift::Seeding::AllPoints : meanshift::Seeding::Bins;
    o.refine_boundaries = !(flags & 0x40);
    const std::uint8_t bin_data = h.u8();
    o.bin_data = (flags & 0x80) && (bin_data & 3) == 0;
    const std::uint8_t g = h.u8();
    o.grouping = g % 4 == 1   ? meanshift::GroupingMethod::ConnectedComponents
                 : g % 4 == 2 ? meanshift::GroupingMethod::None
                              : meanshift::GroupingMethod::Sequential;
    o.merge_eps = pick(h.u8(), {0.5, 0.5, 0.5, 0, 0.1, 1, 3, 1e-300, 1e300, 100});
    o.cutoff = pick(h.u8(), {meanshift::kDefaultCutoff, meanshift::kDefaultCutoff,
                             std::numeric_limits<double>::infinity(), 1, 0.5, 4, 10, 1e-300, 1e300, 2});
    o.bin_size = pick(h.u8(), {meanshift::kDefaultBinSize, meanshift::kDefaultBinSize, meanshift::kDefaultBinSize, 1,
                               0.125, 0.01, 1e-300, 1e300, 2, 1e-20});
    o.data_bin_size =
        pick(h.u8(), {0, 0, 0, -1, std::numeric_limits<double>::infinity(), 0.125, 0.5, 1e-300, 1e300, 4});
    o.min_bin_count = h.u8() % 8 == 7 ? 2 : 1;
    const std::uint8_t it = h.u8();
    o.max_iterations = 100 - it % 100;  // 0 -> 100 (the default)
    if (it >= 0xF8) o.fixed_iterations = 1 + it % 4;
    o.tolerance = pick(h.u8(), {1e-3, 1e-3, 1e-3, 0, 0.5, 1e-300, 1e300, 1e-6});
    const std::uint8_t s = h.u8();
    o.search = s % 4 == 0   ? meanshift::NeighbourSearch::BruteForce
               : s % 4 == 1 ? meanshift::NeighbourSearch::Grid
               : s % 4 == 2 ? meanshift::NeighbourSearch::Tree
                            : meanshift::NeighbourSearch::Auto;
    const std::uint8_t pf = h.u8();
    o.backend_options.pair_form = pf % 3 == 0   ? meanshift::PairForm::Auto
                                  : pf % 3 == 1 ? meanshift::PairForm::Direct
                                                : meanshift::PairForm::Gemm;
    o.backend_options.openmp.isa = (pf >> 2) % 4 == 0 ? "generic" : (pf >> 2) % 4 == 1 ? "avx2" : "auto";
    const double scale = pick(h.u8(), {1, 1, 0.25, 1e-3, 1e3, 1e-30, 1e15, 1e30 / 16, 1e-6, 4});
    const std::uint8_t bw = h.u8();
    const std::uint8_t weights = h.u8();
    if (c.wide) o.max_iterations = std::min(o.max_iterations, 3);  // k = 10^6: milliseconds per step

    Pool pool(data, size);
    c.data.resize(c.n, c.k);
    for (Index i = 0; i < c.n; ++i)
        for (int d = 0; d < c.k; ++d) c.data(i, d) = coordinate(pool, scale);
    // Bandwidth: isotropic, diagonal or per point; 1 in 16 with a wrong shape (must be refused).
    const bool wrong_shape = (bw >> 4) == 0xF;
    const int kb = wrong_shape ? c.k + 1 : c.k;
    switch (bw % 3) {
    case 0: o.bandwidth = meanshift::Bandwidth::isotropic(bandwidth_value(pool)); break;
    case 1: {
        std::vector<double> hd(static_cast<std::size_t>(kb));
        for (double& v : hd) v = bandwidth_value(pool);
        o.bandwidth = meanshift::Bandwidth::diagonal(std::move(hd));
        break;
    }
    default: {
        meanshift::MatrixD hp(c.n, kb);
        for (Index i = 0; i < c.n; ++i)
            for (int d = 0; d < kb; ++d) hp(i, d) = bandwidth_value(pool);
        o.bandwidth = meanshift::Bandwidth::per_point(std::move(hp));
    }
    }
    if (weights % 4 == 3) {  // sample weights, some 0 or extreme
        c.weights.resize(static_cast<std::size_t>(c.n));
        for (float& w : c.weights) w = static_cast<float>(pick(pool.u8(), {1, 2, 0.5, 0, 1e-30, 1e30, 3, 1}));
    }
    return c;
}

/// Runs cluster(); true with `out` on success, false on a meanshift::Error. Any other exception
/// breaks the contract.
bool run(const Case& c, const meanshift::Options& opt, meanshift::Result& out)
{
    try {
        out = c.weights.empty() ? meanshift::cluster(c.data, opt) : meanshift::cluster(c.data, opt, c.weights.data());
        return true;
    } catch (const meanshift::Error& e) {
        if (std::strlen(e.what()) == 0) fail("meanshift::Error without a message");
        if (std::getenv("FUZZ_CLUSTER_VERBOSE")) std::fprintf(stderr, "refused: %s\n", e.what());
        return false;
    } catch (const std::exception& e) {
        fail("exception other than meanshift::Error", e.what());
    }
}

void check_result(const Case& c, const meanshift::Options& opt, const meanshift::Result& r)
{
    const std::size_t n = static_cast<std::size_t>(c.n);
    if (r.modes.cols() != c.k) fail("modes have the wrong number of columns");
    if (!r.modes.allFinite()) fail("a mode is not finite");
    if (opt.grouping == meanshift::GroupingMethod::None) {
        if (!r.labels.empty() || r.centres.rows() != 0) fail("GroupingMethod::None returned labels or centres");
        return;
    }
    if (r.labels.size() != n) fail("labels: not one per point", std::to_string(r.labels.size()));
    const Index nc = r.centres.rows();
    if (nc < 1 || r.centres.cols() != c.k) fail("centres: wrong shape");
    if (static_cast<Index>(r.cluster_sizes.size()) != nc) fail("cluster_sizes: not one per centre");
    if (!r.centres.allFinite()) fail("a centre is not finite");
    std::vector<Index> count(static_cast<std::size_t>(nc), 0);
    for (int l : r.labels) {
        if (l < 0 || l >= nc) fail("label out of range", std::to_string(l));
        ++count[static_cast<std::size_t>(l)];
    }
    for (Index j = 0; j < nc; ++j) {
        if (count[std::size_t(j)] != r.cluster_sizes[std::size_t(j)]) fail("cluster_sizes disagree with the labels");
        if (count[std::size_t(j)] < 1) fail("empty cluster");
        if (j > 0 && r.cluster_sizes[std::size_t(j)] > r.cluster_sizes[std::size_t(j - 1)])
            fail("clusters not largest first");
    }
}

/// The partition of the points into groups of identical rows (labels by first occurrence), or an
/// empty vector when some pair of distinct points is not far apart (then the oracle does not apply).
std::vector<int> far_apart_partition(const Case& c)
{
    const Index n = c.n;
    const int k = c.k;
    const meanshift::Bandwidth& bw = c.opt.bandwidth;
    std::vector<double> hmax(static_cast<std::size_t>(k)), hmin(static_cast<std::size_t>(k));
    for (int d = 0; d < k; ++d) {
        switch (bw.kind()) {
        case meanshift::BandwidthKind::Isotropic: hmax[d] = hmin[d] = bw.parameters()[0]; break;
        case meanshift::BandwidthKind::Diagonal: hmax[d] = hmin[d] = bw.parameters()[std::size_t(d)]; break;
        default: hmax[d] = bw.per_point_values().col(d).maxCoeff(); hmin[d] = bw.per_point_values().col(d).minCoeff();
        }
    }
    // Largest centred coordinate in bandwidth units, per dimension: float32 resolves differences
    // down to about 2^-23 of it; demand 2^-16 of it to stay clear of rounding.
    std::vector<double> resolution(static_cast<std::size_t>(k));
    for (int d = 0; d < k; ++d) {
        const double mean = c.data.col(d).cast<double>().mean();
        double m = 0;
        for (Index i = 0; i < n; ++i) m = std::max(m, std::abs(double(c.data(i, d)) - mean) / hmin[d]);
        resolution[std::size_t(d)] = std::ldexp(m, -16);
    }
    std::vector<int> part(static_cast<std::size_t>(n), -1);
    int groups = 0;
    for (Index i = 0; i < n; ++i) {
        for (Index j = 0; j < i && part[std::size_t(i)] < 0; ++j)
            if ((c.data.row(i).array() == c.data.row(j).array()).all()) part[std::size_t(i)] = part[std::size_t(j)];
        if (part[std::size_t(i)] >= 0) continue;
        part[std::size_t(i)] = groups++;
        for (Index j = 0; j < i; ++j) {
            if ((c.data.row(i).array() == c.data.row(j).array()).all()) continue;
            bool far = false;
            for (int d = 0; d < k && !far; ++d) {
                const double diff = std::abs(double(c.data(i, d)) - double(c.data(j, d)));
                far = diff / hmax[d] > kFarBandwidths && diff / hmax[d] > resolution[std::size_t(d)];
            }
            if (!far) return {};
        }
    }
    return part;
}

/// Same partition of the points (labels equal up to renaming).
bool same_partition(const std::vector<int>& a, const std::vector<int>& b)
{
    if (a.size() != b.size()) return false;
    std::map<int, int> ab, ba;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const auto x = ab.emplace(a[i], b[i]).first;
        const auto y = ba.emplace(b[i], a[i]).first;
        if (x->second != b[i] || y->second != a[i]) return false;
    }
    return true;
}

std::string labels_text(const std::vector<int>& l)
{
    std::string s;
    for (std::size_t i = 0; i < l.size() && i < 40; ++i) s += (i ? " " : "") + std::to_string(l[i]);
    return s;
}

/// FUZZ_CLUSTER_VERBOSE=1: one line per input and run (for triage); =2: the data points too.
bool verbose()
{
    static const bool v = std::getenv("FUZZ_CLUSTER_VERBOSE") != nullptr;
    return v;
}

void describe(const Case& c, const meanshift::Options& o, bool ok, const meanshift::Result& r)
{
    if (!verbose()) return;
    const meanshift::Bandwidth& b = o.bandwidth;
    std::fprintf(stderr,
                 "n=%lld k=%d %s threads=%d exact=%d bw=%s(%g) cutoff=%g seeding=%s bin=%g data_bin=%g "
                 "bin_data=%d min_bin=%lld merge_eps=%g grouping=%d it=%d tol=%g weights=%d -> ",
                 static_cast<long long>(c.n), c.k, o.backend.c_str(), o.backend_options.threads, int(o.exact),
                 b.kind() == meanshift::BandwidthKind::Isotropic  ? "iso"
                 : b.kind() == meanshift::BandwidthKind::Diagonal ? "diag"
                                                                  : "pp",
                 b.kind() == meanshift::BandwidthKind::PerPoint ? b.per_point_values()(0, 0) : b.parameters()[0],
                 o.cutoff, o.seeding == meanshift::Seeding::Bins ? "bins" : "all", o.bin_size, o.data_bin_size,
                 int(o.bin_data), static_cast<long long>(o.min_bin_count), o.merge_eps, int(o.grouping),
                 o.max_iterations, o.tolerance, int(!c.weights.empty()));
    if (std::getenv("FUZZ_CLUSTER_VERBOSE")[0] == '2' && c.k <= 16)  // =2: the data too
        for (Index i = 0; i < c.n; ++i) {
            std::fprintf(stderr, "  x%lld:", static_cast<long long>(i));
            for (int d = 0; d < c.k; ++d) std::fprintf(stderr, " %.9g", double(c.data(i, d)));
            std::fprintf(stderr, "\n");
        }
    if (ok)
        std::fprintf(stderr, "%lld clusters [%s] (%s; %s; %.3f s)\n", static_cast<long long>(r.centres.rows()),
                     labels_text(r.labels).c_str(), r.seeding.c_str(), r.search.c_str(), r.timing.seconds_total);
    else
        std::fprintf(stderr, "refused\n");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const Case c = decode(data, size);
    meanshift::Result r;
    const bool ok = run(c, c.opt, r);
    describe(c, c.opt, ok, r);
    if (!ok) return 0;
    check_result(c, c.opt, r);

    // Oracle: far-apart points, approximations that keep the exact answer there.
    const meanshift::Options& o = c.opt;
    // merge_eps below 1e-6 groups only modes equal to the last bits: copies of one point seeded in
    // different SIMD lanes or blocks may round differently (openmp, found at merge_eps = 0).
    const bool applies = !c.wide && !o.exact && o.grouping != meanshift::GroupingMethod::None && o.merge_eps >= 1e-6 &&
                         o.merge_eps <= 4 &&
                         (o.seeding == meanshift::Seeding::AllPoints || (o.bin_size <= 1 && o.min_bin_count == 1)) &&
                         (!o.bin_data || o.bin_size <= 1) && o.data_bin_size <= 1 &&
                         std::none_of(c.weights.begin(), c.weights.end(), [](float w) { return w == 0; });
    if (!applies) return 0;
    const std::vector<int> expected = far_apart_partition(c);
    if (expected.empty()) return 0;
    meanshift::Options exact = o;
    exact.exact = true;
    meanshift::Result re;
    const bool exact_ok = run(c, exact, re);
    describe(c, exact, exact_ok, re);
    if (!exact_ok) return 0;  // refused (e.g. a range the exact path cannot hold): fine
    check_result(c, exact, re);
    if (!same_partition(re.labels, r.labels))
        fail("default labels differ from options.exact's on far-apart points",
             "default [" + labels_text(r.labels) + "], exact [" + labels_text(re.labels) + "], " + r.seeding + ", " +
                 r.search);
    if (!same_partition(re.labels, expected))
        fail("far-apart points not each their own cluster with options.exact",
             "exact [" + labels_text(re.labels) + "], expected [" + labels_text(expected) + "]");
    return 0;
}

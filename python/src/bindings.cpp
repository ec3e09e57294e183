// meanshift._core: the library's cluster(), segment_image() and backend list for Python.
// The package's Python modules (python/meanshift/*.py) validate and convert inputs; this layer
// takes C-contiguous float32 arrays only (zero copy), releases the GIL while the library runs,
// and turns Ctrl-C and the library's exceptions into Python exceptions.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <meanshift/bandwidth_selection.hpp>
#include <meanshift/meanshift.hpp>
#include <meanshift/segmentation.hpp>

#include "colour.hpp"

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;
using meanshift::Index;

namespace {

using FloatIn2 = nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using FloatIn1 = nb::ndarray<const float, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using DoubleIn2 = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using DoubleIn1 = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using ByteIn2 = nb::ndarray<const std::uint8_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

// A NumPy array that owns `value` (moved to the heap; freed with the array).
template <class T, class Owner>
nb::ndarray<nb::numpy, T> owned(Owner&& value, T* (*data)(Owner&), std::initializer_list<size_t> shape)
{
    auto* heap = new Owner(std::move(value));
    nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<Owner*>(p); });
    return nb::ndarray<nb::numpy, T>(data(*heap), shape, owner);
}

nb::ndarray<nb::numpy, float> matrix(meanshift::MatrixF&& m)
{
    const size_t r = static_cast<size_t>(m.rows()), c = static_cast<size_t>(m.cols());
    return owned<float, meanshift::MatrixF>(std::move(m), [](meanshift::MatrixF& x) { return x.data(); }, {r, c});
}

template <class T>
nb::ndarray<nb::numpy, T> vector(std::vector<T>&& v)
{
    const size_t n = v.size();
    return owned<T, std::vector<T>>(std::move(v), [](std::vector<T>& x) { return x.data(); }, {n});
}

nb::ndarray<nb::numpy, bool> bools(const std::vector<bool>& v)
{
    std::unique_ptr<bool[]> b(new bool[v.size() ? v.size() : 1]);
    for (size_t i = 0; i < v.size(); ++i) b[i] = v[i];
    const size_t n = v.size();
    using Owner = std::unique_ptr<bool[]>;
    return owned<bool, Owner>(std::move(b), [](Owner& x) { return x.get(); }, {n});
}

template <class T>
T get(const nb::dict& d, const char* key, T fallback)
{
    return d.contains(key) && !d[key].is_none() ? nb::cast<T>(d[key]) : fallback;
}

meanshift::GroupingMethod grouping(const std::string& g)
{
    if (g == "sequential") return meanshift::GroupingMethod::Sequential;
    if (g == "components") return meanshift::GroupingMethod::ConnectedComponents;
    if (g == "sklearn") return meanshift::GroupingMethod::ScikitLearn;
    throw meanshift::InvalidArgument("grouping must be 'sequential', 'components' or 'sklearn', got '" + g + "'");
}

meanshift::NeighbourSearch search(const std::string& s)
{
    if (s == "auto") return meanshift::NeighbourSearch::Auto;
    if (s == "brute") return meanshift::NeighbourSearch::BruteForce;
    if (s == "grid") return meanshift::NeighbourSearch::Grid;
    if (s == "tree") return meanshift::NeighbourSearch::Tree;
    throw meanshift::InvalidArgument("search must be 'auto', 'grid', 'tree' or 'brute', got '" + s + "'");
}

// Options from the dict the Python layer builds (keys = the library's field names). The bandwidth
// is set by the caller (it needs the arrays).
void apply(const nb::dict& d, meanshift::Options& o)
{
    o.backend = get<std::string>(d, "backend", o.backend);
    o.backend_options.device_spec = get<std::string>(d, "device_spec", "");
    o.backend_options.devices = get<std::vector<int>>(d, "devices", {});
    o.backend_options.threads = get<int>(d, "threads", 0);
    for (const std::string& t : get<std::vector<std::string>>(d, "tune", {})) o.backend_options.set(t);
    o.max_iterations = get<int>(d, "max_iterations", o.max_iterations);
    o.tolerance = get<double>(d, "tolerance", o.tolerance);
    if (d.contains("fixed_iterations") && !d["fixed_iterations"].is_none())
        o.fixed_iterations = nb::cast<int>(d["fixed_iterations"]);
    o.merge_eps = get<double>(d, "merge_eps", o.merge_eps);
    o.grouping = grouping(get<std::string>(d, "grouping", "sequential"));
    // Kernel profile by the library's names (parse_profile: InvalidArgument lists the known ones).
    o.kernel = meanshift::parse_profile(get<std::string>(d, "kernel", "gaussian"));
    o.blurring = get<bool>(d, "blurring", o.blurring);
    o.cutoff = get<double>(d, "cutoff", o.cutoff);
    o.exact = get<bool>(d, "exact", o.exact);
    o.search = search(get<std::string>(d, "search", "auto"));
    const std::string seeding = get<std::string>(d, "seeding", "bins");
    if (seeding == "bins")
        o.seeding = meanshift::Seeding::Bins;
    else if (seeding == "all")
        o.seeding = meanshift::Seeding::AllPoints;
    else
        throw meanshift::InvalidArgument("seeding must be 'bins' or 'all', got '" + seeding + "'");
    o.bin_size = get<double>(d, "bin_size", o.bin_size);
    o.min_bin_count = get<Index>(d, "min_bin_count", o.min_bin_count);
    o.bin_data = get<bool>(d, "bin_data", o.bin_data);
    o.refine_boundaries = get<bool>(d, "refine_boundaries", o.refine_boundaries);
    o.max_memory = get<std::size_t>(d, "max_memory", o.max_memory);
}

// Runs with the GIL released; between iterations the library's progress callback takes the GIL
// back briefly to check for Ctrl-C (PyErr_CheckSignals) and to call the Python callback. A
// pending signal or an exception of the callback cancels the run (returns false); the library
// then throws, and run() re-raises the Python exception instead (KeyboardInterrupt for Ctrl-C).
class Bridge {
public:
    explicit Bridge(nb::object callback) : callback_(std::move(callback)) {}

    meanshift::ProgressCallback callback()
    {
        return [this](int iteration, Index active, Index total) {
            nb::gil_scoped_acquire gil;
            if (PyErr_CheckSignals() != 0) {
                error_.emplace();  // fetches (and clears) the pending exception
                return false;
            }
            if (callback_.is_none()) return true;
            try {
                nb::object r = callback_(iteration, active, total);
                return !(r.is(Py_False));  // only an explicit False cancels
            } catch (nb::python_error& e) {
                error_.emplace(std::move(e));
                return false;
            }
        };
    }

    template <class F>
    auto run(F&& f)
    {
        try {
            nb::gil_scoped_release release;
            return f();
        } catch (const meanshift::Error&) {
            if (error_) throw nb::python_error(std::move(*error_));
            throw;
        }
    }

private:
    nb::object callback_;
    std::optional<nb::python_error> error_;
};

nb::dict result_dict(meanshift::Result&& r)
{
    nb::dict d;
    d["labels"] = vector<int>(std::move(r.labels));
    d["centres"] = matrix(std::move(r.centres));
    d["modes"] = matrix(std::move(r.modes));
    d["cluster_sizes"] =
        vector<std::int64_t>(std::vector<std::int64_t>(r.cluster_sizes.begin(), r.cluster_sizes.end()));
    d["iterations"] = vector<int>(std::move(r.iterations));
    d["converged"] = bools(r.converged);
    d["no_support"] = bools(r.no_support);
    d["modes_without_support"] = r.modes_without_support;
    nb::dict t;
    t["seconds_total"] = r.timing.seconds_total;
    t["seconds_prepare"] = r.timing.seconds_prepare;
    t["seconds_iterate"] = r.timing.seconds_iterate;
    t["seconds_kernels"] = r.timing.seconds_kernels;
    t["seconds_group"] = r.timing.seconds_group;
    t["iterations"] = r.timing.iterations;
    t["pair_interactions"] = r.timing.pair_interactions;
    // Every stage in run order (Timing::stages(): validate, seeding, search, bind, order, iterate,
    // grouping, label) and the process's peak resident memory.
    nb::dict stages;
    for (const auto& [name, seconds] : r.timing.stages()) stages[name] = seconds;
    t["stages"] = stages;
    t["peak_memory_bytes"] = r.timing.peak_memory_bytes;
    d["timing"] = t;
    d["backend"] = r.backend;
    d["topology"] = r.topology.to_string();
    d["search"] = r.search;
    d["cutoff"] = r.cutoff;
    d["seed_count"] = r.seed_count;
    d["seeding"] = r.seeding;
    return d;
}

// data: n × k; bandwidth: a float (isotropic), a (k,) array (one diagonal) or an (n, k) array
// (per point), all standard deviations in data units; weights (n,) or None; seeds (m, k) or None.
nb::dict cluster(FloatIn2 data, nb::object bandwidth, std::optional<FloatIn1> weights, std::optional<FloatIn2> seeds,
                 nb::dict options, nb::object progress)
{
    const Index n = static_cast<Index>(data.shape(0));
    const int k = static_cast<int>(data.shape(1));
    meanshift::Options o;
    apply(options, o);
    DoubleIn2 per_point;
    DoubleIn1 diagonal;
    if (nb::isinstance<nb::float_>(bandwidth) || nb::isinstance<nb::int_>(bandwidth)) {
        o.bandwidth = meanshift::Bandwidth::isotropic(nb::cast<double>(bandwidth));
    } else if (nb::try_cast(bandwidth, per_point)) {
        o.bandwidth = meanshift::Bandwidth::per_point(Eigen::Map<const meanshift::MatrixD>(
            per_point.data(), static_cast<Index>(per_point.shape(0)), static_cast<Index>(per_point.shape(1))));
    } else if (nb::try_cast(bandwidth, diagonal)) {
        o.bandwidth =
            meanshift::Bandwidth::diagonal(std::vector<double>(diagonal.data(), diagonal.data() + diagonal.shape(0)));
    } else {
        throw meanshift::InvalidArgument("bandwidth: a float, a (k,) or an (n, k) C-contiguous float64 array");
    }
    if (weights && static_cast<Index>(weights->shape(0)) != n)
        throw meanshift::InvalidArgument("sample_weight has " + std::to_string(weights->shape(0)) +
                                         " values but the data have " + std::to_string(n) + " points");
    if (seeds && static_cast<int>(seeds->shape(1)) != k)
        throw meanshift::InvalidArgument("seeds have " + std::to_string(seeds->shape(1)) +
                                         " features but the data have " + std::to_string(k));
    Bridge bridge(progress);
    o.progress = bridge.callback();
    const float* w = weights ? weights->data() : nullptr;
    const float* s = seeds ? seeds->data() : nullptr;
    const Index m = seeds ? static_cast<Index>(seeds->shape(0)) : 0;
    meanshift::Result r = bridge.run([&] { return meanshift::cluster(data.data(), n, k, o, w, s, m); });
    return result_dict(std::move(r));
}

nb::dict segmentation_dict(meanshift::Segmentation&& s)
{
    nb::dict d;
    d["labels"] = vector<int>(std::move(s.labels));
    d["colours"] = matrix(std::move(s.colours));
    d["mode_colours"] = matrix(std::move(s.mode_colours));
    d["sizes"] = vector<std::int64_t>(std::vector<std::int64_t>(s.sizes.begin(), s.sizes.end()));
    d["filtered"] = matrix(std::move(s.filtered));
    d["regions_connected"] = s.regions_connected;
    d["regions_fused"] = s.regions_fused;
    d["fusion_passes"] = s.fusion_passes;
    d["seconds_filter"] = s.seconds_filter;
    d["seconds_regions"] = s.seconds_regions;
    meanshift::Result& r = s.ascent;
    d["iterations"] = r.timing.iterations;
    d["modes_not_converged"] = [&] {
        Index c = 0;
        for (bool v : r.converged) c += v ? 0 : 1;
        return c;
    }();
    d["modes_without_support"] = r.modes_without_support;
    d["backend"] = r.backend;
    d["topology"] = r.topology.to_string();
    d["search"] = r.search;
    d["cutoff"] = r.cutoff;
    d["seconds_total"] = r.timing.seconds_total;
    return d;
}

meanshift::SegmentOptions segment_options(const nb::dict& options, double hs, double hr, Index min_region,
                                          double fusion)
{
    meanshift::SegmentOptions so;
    so.spatial_bandwidth = hs;
    so.range_bandwidth = hr;
    so.min_region = min_region;
    so.fusion_distance = fusion;
    apply(options, so.meanshift);
    return so;
}

// pixels: H·W × C float32 in the caller's colour space, row-major.
nb::dict segment_float(FloatIn2 pixels, int height, int width, double hs, double hr, Index min_region, double fusion,
                       nb::dict options, nb::object progress)
{
    meanshift::SegmentOptions so = segment_options(options, hs, hr, min_region, fusion);
    Bridge bridge(progress);
    so.meanshift.progress = bridge.callback();
    const int c = static_cast<int>(pixels.shape(1));
    if (static_cast<Index>(pixels.shape(0)) != static_cast<Index>(height) * width)
        throw meanshift::InvalidArgument("pixels must have height * width rows");
    meanshift::Segmentation s =
        bridge.run([&] { return meanshift::segment_image(pixels.data(), height, width, c, so); });
    return segmentation_dict(std::move(s));
}

// rgb: H·W × 3 8-bit sRGB. As `meanshift segment` does: pixels go to CIELAB, the filtered image
// comes back as sRGB, and each segment is painted with its pixels' mean colour in linear light.
nb::dict segment_rgb8(ByteIn2 rgb, int height, int width, double hs, double hr, Index min_region, double fusion,
                      nb::dict options, nb::object progress)
{
    if (rgb.shape(1) != 3) throw meanshift::InvalidArgument("uint8 images must have 3 channels (sRGB)");
    const Index n = static_cast<Index>(height) * width;
    if (static_cast<Index>(rgb.shape(0)) != n) throw meanshift::InvalidArgument("rgb must have height * width rows");
    meanshift::SegmentOptions so = segment_options(options, hs, hr, min_region, fusion);
    Bridge bridge(progress);
    so.meanshift.progress = bridge.callback();
    const std::uint8_t* px = rgb.data();
    std::vector<std::uint8_t> segmented(static_cast<size_t>(n) * 3), filtered(static_cast<size_t>(n) * 3);
    meanshift::Segmentation s = bridge.run([&] {
        std::vector<float> lab(static_cast<size_t>(n) * 3);
        for (Index i = 0; i < n; ++i) mscli::srgb_to_lab(px[i * 3], px[i * 3 + 1], px[i * 3 + 2], &lab[size_t(i) * 3]);
        meanshift::Segmentation seg = meanshift::segment_image(lab.data(), height, width, 3, so);
        const size_t c = seg.sizes.size();
        std::vector<double> sum(c * 3, 0.0);
        for (Index i = 0; i < n; ++i) {
            const size_t l = static_cast<size_t>(seg.labels[size_t(i)]);
            for (int ch = 0; ch < 3; ++ch) sum[l * 3 + ch] += mscli::srgb_to_linear(px[i * 3 + ch]);
        }
        std::vector<std::uint8_t> mean(c * 3);
        for (size_t l = 0; l < c; ++l)
            for (int ch = 0; ch < 3; ++ch)
                mean[l * 3 + ch] = mscli::linear_to_srgb(sum[l * 3 + ch] / static_cast<double>(seg.sizes[l]));
        for (Index i = 0; i < n; ++i) {
            const size_t l = static_cast<size_t>(seg.labels[size_t(i)]);
            for (int ch = 0; ch < 3; ++ch) segmented[size_t(i) * 3 + ch] = mean[l * 3 + ch];
            mscli::lab_to_srgb(&seg.filtered(i, 0), &filtered[size_t(i) * 3]);
        }
        return seg;
    });
    nb::dict d = segmentation_dict(std::move(s));
    const size_t sn = static_cast<size_t>(n);
    d["segmented_rgb"] = owned<std::uint8_t, std::vector<std::uint8_t>>(
        std::move(segmented), [](std::vector<std::uint8_t>& x) { return x.data(); }, {sn, 3});
    d["filtered_rgb"] = owned<std::uint8_t, std::vector<std::uint8_t>>(
        std::move(filtered), [](std::vector<std::uint8_t>& x) { return x.data(); }, {sn, 3});
    return d;
}

nb::list backends()
{
    nb::list out;
    for (const meanshift::BackendStatus& b : meanshift::list_backends()) {
        nb::dict d;
        d["name"] = b.name;
        d["compiled_in"] = b.compiled_in;
        d["usable"] = b.usable;
        d["reason"] = b.reason;
        nb::list devs;
        for (const meanshift::DeviceInfo& dev : b.devices) {
            nb::dict x;
            x["index"] = dev.index;
            x["name"] = dev.name;
            x["kind"] = dev.kind;
            x["compute_units"] = dev.compute_units;
            x["pus_per_ppu"] = dev.pus_per_ppu;
            x["global_memory"] = dev.global_memory;
            devs.append(x);
        }
        d["devices"] = devs;
        out.append(d);
    }
    return out;
}

std::string resolve_auto()
{
    try {
        return meanshift::resolve_auto_backend();
    } catch (const meanshift::Error&) {
        return "";
    }
}

}  // namespace

// Bandwidth selection (bandwidth_selection.hpp): float32 data as the library clusters them;
// results in float64, per-point rows flattened (the package reshapes them).
meanshift::MatrixF as_matrix(const FloatIn2& data)
{
    return Eigen::Map<const meanshift::MatrixF>(data.data(), static_cast<Index>(data.shape(0)),
                                                static_cast<Index>(data.shape(1)));
}

meanshift::BandwidthRule rule_of(const std::string& rule)
{
    if (rule == "scott") return meanshift::BandwidthRule::Scott;
    if (rule == "silverman") return meanshift::BandwidthRule::Silverman;
    throw meanshift::InvalidArgument("bandwidth rule must be 'scott' or 'silverman', got '" + rule + "'");
}

nb::ndarray<nb::numpy, double> rule_bandwidths(FloatIn2 data, const std::string& rule)
{
    return vector<double>(meanshift::rule_bandwidths(as_matrix(data), rule_of(rule)));
}

double rule_bandwidth(FloatIn2 data, const std::string& rule)
{
    return meanshift::rule_bandwidth(as_matrix(data), rule_of(rule));
}

nb::ndarray<nb::numpy, double> adaptive_bandwidths(FloatIn2 data, int k, double c, bool per_dimension,
                                                   double floor_fraction, const nb::dict& options)
{
    meanshift::AdaptiveBandwidthOptions o;
    // The k-NN search runs on the estimator's backend (options: the dict of library_options()).
    meanshift::Options run;
    apply(options, run);
    o.backend = run.backend;
    o.backend_options = run.backend_options;
    o.k = k;
    o.c = c;
    o.per_dimension = per_dimension;
    o.floor_fraction = floor_fraction;
    const meanshift::MatrixD h = meanshift::adaptive_bandwidths(as_matrix(data), o);
    return vector<double>(std::vector<double>(h.data(), h.data() + h.size()));
}

nb::ndarray<nb::numpy, double> abramson_bandwidths(FloatIn2 data, double c, double pilot)
{
    meanshift::AbramsonOptions o;
    o.c = c;
    o.pilot = pilot;
    const meanshift::MatrixD h = meanshift::abramson_bandwidths(as_matrix(data), o);
    return vector<double>(std::vector<double>(h.data(), h.data() + h.size()));
}

NB_MODULE(_core, m)
{
    m.doc() = "meanshift-skeleton's C++ library (internal: use the meanshift package)";
    // The package's exception types; InvalidArgument becomes ValueError. Translators run in reverse
    // order of registration, so the base class is registered first.
    static nb::exception<meanshift::Error> error(m, "MeanShiftError", PyExc_RuntimeError);
    static nb::exception<meanshift::BackendUnavailable> unavailable(m, "BackendUnavailableError", error);
    static nb::exception<meanshift::DeviceError> device(m, "DeviceError", error);
    static nb::exception<meanshift::NotSupported> unsupported(m, "NotSupportedError", error);
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const meanshift::InvalidArgument& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const meanshift::OutOfMemory& e) {
            // Options::max_memory or the machine's memory: refused before allocating.
            PyErr_SetString(PyExc_MemoryError, e.what());
        }
    });

    m.def("cluster", &cluster, nb::arg("data"), nb::arg("bandwidth"), nb::arg("weights").none(),
          nb::arg("seeds").none(), nb::arg("options"), nb::arg("progress").none());
    m.def("segment_float", &segment_float, nb::arg("pixels"), nb::arg("height"), nb::arg("width"), nb::arg("hs"),
          nb::arg("hr"), nb::arg("min_region"), nb::arg("fusion"), nb::arg("options"), nb::arg("progress").none());
    m.def("segment_rgb8", &segment_rgb8, nb::arg("rgb"), nb::arg("height"), nb::arg("width"), nb::arg("hs"),
          nb::arg("hr"), nb::arg("min_region"), nb::arg("fusion"), nb::arg("options"), nb::arg("progress").none());
    m.def("rule_bandwidths", &rule_bandwidths, nb::arg("data"), nb::arg("rule"));
    m.def("rule_bandwidth", &rule_bandwidth, nb::arg("data"), nb::arg("rule"));
    m.def(
        "estimate_bandwidth",
        [](FloatIn2 data, double quantile, Index max_samples, std::uint64_t seed) {
            return meanshift::estimate_bandwidth(as_matrix(data), quantile, max_samples, seed);
        },
        nb::arg("data"), nb::arg("quantile"), nb::arg("max_samples"), nb::arg("seed"));
    m.def(
        "knn_distances",
        [](FloatIn2 data, int k, const std::string& backend) {
            return vector<double>(meanshift::knn_distances(as_matrix(data), k, {}, backend));
        },
        nb::arg("data"), nb::arg("k"), nb::arg("backend") = "serial");
    m.def("adaptive_bandwidths", &adaptive_bandwidths, nb::arg("data"), nb::arg("k"), nb::arg("c"),
          nb::arg("per_dimension"), nb::arg("floor_fraction"), nb::arg("options") = nb::dict());
    m.def("abramson_bandwidths", &abramson_bandwidths, nb::arg("data"), nb::arg("c"), nb::arg("pilot"));
    m.def("default_adaptive_k", &meanshift::default_adaptive_k, nb::arg("n"));
    m.attr("flat_radius_to_sigma") = meanshift::kFlatRadiusToSigma;
    m.attr("default_adaptive_c") = meanshift::kDefaultAdaptiveC;
    m.def("backends", &backends);
    m.def("resolve_auto_backend", &resolve_auto);
    m.def("compiled_backends", [] { return meanshift::compiled_backends(); });
    m.def("kernel_profiles", [] {
        std::vector<std::string> names;
        for (meanshift::KernelProfile p : meanshift::kernel_profiles()) names.emplace_back(meanshift::profile_name(p));
        return names;
    });
    m.def("tune_keys", [] { return meanshift::BackendOptions::keys(); });
    m.attr("version") = MEANSHIFT_VERSION_STRING;
    m.attr("default_cutoff") = meanshift::kDefaultCutoff;
    m.attr("default_bin_size") = meanshift::kDefaultBinSize;
}

// bench_opencl: pair interactions per second of the OpenCL binding's step() (one mean-shift
// iteration of all n modes against all n points, the modes on the device), for a list of kernel
// configurations, timed by OpenCL profiling events (StepReport::kernel_seconds: the kernels
// alone) and by the wall clock around step() (kernels, the report's read-back). One JSON line per configuration on stdout; each also reports the largest
// deviation from the float64 serial backend over a sample of modes (speed never buys accuracy).
//
//   bench_opencl [--n N] [--k K] [--model shared|perpoint] [--reps R] [--check M] [--device P:D]
//                [--build-options TEXT] [--config "preload=1,tile=256,tau=128,fvppu=1,fload=1,r=4,form=expanded"]...
// preload=auto takes the backend's default for the device (Preload::Auto); tau=0 its default τ.
// Without --config a built-in sweep runs (preloading on/off, tile sizes, r, f_vppu/f_load).
#include "backends/opencl/opencl_backend.hpp"

#include <meanshift/meanshift.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace meanshift;

struct Config {
    Preload preload = Preload::Off;
    int tile = 0;  // 0 = backend default
    int tau = 128;
    int f_vppu = 1;
    int f_load = 0;
    int r = 0;  // 0 = backend default
    std::string form = "expanded";
    int segments = 0;  // 0 = backend default
    int nv_ex2 = 1;  // NVIDIA: inline PTX ex2 (1) or native_exp2 (0)
    std::string extra;  // appended build options ("+" separates words in the config text)
};

Config parse_config(const std::string& text)
{
    Config c;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        const auto eq = item.find('=');
        if (eq == std::string::npos) throw InvalidArgument("bench_opencl: bad config item '" + item + "'");
        const std::string key = item.substr(0, eq), val = item.substr(eq + 1);
        if (key == "preload")
            c.preload = val == "auto" ? Preload::Auto : val == "1" ? Preload::On : Preload::Off;
        else if (key == "tile")
            c.tile = std::stoi(val);
        else if (key == "tau")
            c.tau = std::stoi(val);
        else if (key == "fvppu")
            c.f_vppu = std::stoi(val);
        else if (key == "fload")
            c.f_load = std::stoi(val);
        else if (key == "r")
            c.r = std::stoi(val);
        else if (key == "form")
            c.form = val;
        else if (key == "seg")
            c.segments = std::stoi(val);
        else if (key == "nvex2")
            c.nv_ex2 = std::stoi(val);
        else if (key == "opt") {
            c.extra = val;
            std::replace(c.extra.begin(), c.extra.end(), '+', ' ');
        } else
            throw InvalidArgument("bench_opencl: unknown config key '" + key + "'");
    }
    return c;
}

std::vector<std::string> default_sweep(bool per_point)
{
    const std::string r0 = per_point ? "2" : "4";
    std::vector<std::string> s;
    // f_vppu = 1, each PU carrying r modes, points from global memory (Alg. 3) ...
    for (int r : per_point ? std::vector<int>{1, 2, 4} : std::vector<int>{2, 4, 8})
        s.push_back("preload=0,tau=128,r=" + std::to_string(r));
    // ... and preloaded into local memory (Alg. 7): batch sizes, work-group sizes, r
    for (int tile : {128, 256, 512}) s.push_back("preload=1,tau=128,r=" + r0 + ",tile=" + std::to_string(tile));
    for (const char* extra : per_point
                                 ? std::vector<const char*>{"tau=128,r=1", "tau=128,r=4", "tau=256,r=2", "tau=64,r=4"}
                                 : std::vector<const char*>{"tau=128,r=2", "tau=128,r=8", "tau=256,r=4", "tau=64,r=8"})
        s.push_back(std::string("preload=1,tile=256,") + extra);
    // one segment per mode block (no split of the n-loop across work-groups): the wave tail
    s.push_back("preload=1,tile=256,tau=128,seg=1,r=" + r0);
    // register cap (NVIDIA only option)
    s.push_back("preload=1,tile=256,tau=128,opt=-cl-nv-maxrregcount=64,r=" + r0);
    // the paper's mapping: vPPUs of f_vppu PUs that reduce in local memory
    for (int fv : {2, 8, 32}) {
        s.push_back("preload=0,tau=128,fvppu=" + std::to_string(fv));
        s.push_back("preload=1,tile=256,tau=128,fvppu=" + std::to_string(fv));
    }
    s.push_back("preload=1,tile=256,tau=128,fvppu=8,fload=4");
    // direct exponent for comparison
    s.push_back("preload=1,tile=256,tau=128,form=direct,r=" + r0);
    s.push_back("preload=0,tau=128,form=direct,r=" + r0);
    return s;
}

PreparedData make_data(Index n, int k, bool per_point, const std::string& kind, std::uint64_t seed)
{
    // Centred data in bandwidth units (what the skeleton hands a backend).
    //  blobs:   3 Gaussian blobs, centres uniform in [-10, 10]^k, std 1.5, bandwidth 2 (as bench_cuda
    //           and papers 000/002): after whitening the centres lie in [-5, 5], std 0.75;
    //  uniform: a cube whose side gives about 8 points per unit volume (large extent: in 3-D and
    //           n = 2^20 the side is 51 bandwidths).
    std::mt19937_64 rng(seed);
    PreparedData D;
    D.model = per_point ? KernelModel::PerPoint : KernelModel::Shared;
    D.points.resize(n, k);
    if (kind == "uniform") {
        const double side = std::pow(static_cast<double>(n) / 8.0, 1.0 / k);
        std::uniform_real_distribution<double> U(-side / 2, side / 2);
        for (Index i = 0; i < n; ++i)
            for (int d = 0; d < k; ++d) D.points(i, d) = U(rng);
    } else if (kind == "blobs") {
        std::uniform_real_distribution<double> C(-10.0, 10.0);
        std::normal_distribution<double> G(0.0, 1.5);
        std::vector<double> centres(static_cast<std::size_t>(3 * k));
        for (auto& c : centres) c = C(rng);
        for (Index i = 0; i < n; ++i)
            for (int d = 0; d < k; ++d)
                D.points(i, d) = (centres[static_cast<std::size_t>((i % 3) * k + d)] + G(rng)) / 2.0;
        for (int d = 0; d < k; ++d) {  // centre on the bounding box, as the skeleton does
            const double mid = 0.5 * (D.points.col(d).minCoeff() + D.points.col(d).maxCoeff());
            D.points.col(d).array() -= mid;
        }
    } else {
        throw InvalidArgument("bench_opencl: --data must be blobs or uniform");
    }
    if (per_point) {
        std::uniform_real_distribution<double> L(-0.7, 0.7);
        D.precision.resize(n, k);
        for (Index i = 0; i < n; ++i)
            for (int d = 0; d < k; ++d) D.precision(i, d) = std::exp(L(rng));
    }
    D.finalize();
    return D;
}

double seconds_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Compiler lines worth keeping (register use, spills) from a build log, JSON-escaped.
std::string compiler_notes(const std::string& log)
{
    std::string out;
    std::stringstream in(log);
    std::string line;
    while (std::getline(in, line)) {
        if (line.find("registers") == std::string::npos && line.find("spill") == std::string::npos &&
            line.find("lmem") == std::string::npos)
            continue;
        for (char ch : line) {
            if (ch == '"' || ch == '\\') out += '\\';
            if (ch >= 32) out += ch;
        }
        out += " | ";
    }
    return out;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv)
{
    Index n = Index(1) << 20;
    int k = 3, reps = 3, check = 256;
    std::string model = "shared", device, data = "blobs", dump, base_options;
    std::vector<std::string> configs;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_opencl: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--n")
            n = std::stoll(next());
        else if (a == "--k")
            k = std::stoi(next());
        else if (a == "--model")
            model = next();
        else if (a == "--reps")
            reps = std::stoi(next());
        else if (a == "--check")
            check = std::stoi(next());
        else if (a == "--device")
            device = next();
        else if (a == "--data")
            data = next();
        else if (a == "--dump")
            dump = next();
        else if (a == "--config")
            configs.push_back(next());
        else if (a == "--build-options")
            base_options = next();
        else {
            std::fprintf(stderr,
                         "usage: bench_opencl [--n N] [--k K] [--model shared|perpoint] [--reps R] "
                         "[--check M] [--device P:D] [--data blobs|uniform] [--dump DIR] [--build-options TEXT] "
                         "[--config key=value,...]...\n");
            return 2;
        }
    }
    const bool per_point = model == "perpoint";
    if (configs.empty()) configs = default_sweep(per_point);

    try {
        const auto shared_data = std::make_shared<const PreparedData>(make_data(n, k, per_point, data, 42));
        const PreparedData& D = *shared_data;
        MatrixD Q = D.points;  // every point is a mode (one full iteration)
        // float64 oracle for a sample of modes spread over the data
        const Index m = std::min<Index>(check, n);
        MatrixD Qs(m, k), ref(m, k);
        for (Index j = 0; j < m; ++j) Qs.row(j) = Q.row(j * (n / m));
        {
            auto serial = make_backend("serial");
            serial->bind(shared_data, Topology{})->step_once(Qs.data(), ref.data(), m);
        }
        MatrixD out(n, k);
        for (const std::string& text : configs) {
            const Config c = parse_config(text);
            BackendOptions o;
            o.device_spec = device;
            o.preload = c.preload;
            o.preload_size = c.tile;
            o.opencl.modes_per_pu = c.r;
            if (c.form == "direct")
                o.opencl.exponent = ExponentForm::Direct;
            else if (c.form == "expanded")
                o.opencl.exponent = ExponentForm::Expanded;
            else
                throw InvalidArgument("bench_opencl: form must be expanded or direct, got '" + c.form + "'");
            o.opencl.segments = c.segments;
            o.opencl.nv_ex2 = c.nv_ex2 != 0;
            o.opencl.extra_build_options = base_options + (c.extra.empty() ? "" : " " + c.extra);
            detail::OpenCLBackend b(o);
            Topology want;
            want.pus_per_ppu = c.tau;
            want.f_vppu = c.f_vppu;
            want.f_load = c.f_load;
            const auto t0 = std::chrono::steady_clock::now();
            const Topology t = b.resolve_topology(want, D);
            const auto binding = b.bind_opencl(shared_data, t);
            const double bind_s = seconds_since(t0);
            std::vector<double> kernel, wall;
            StepReport report;
            for (int rep = 0; rep < reps; ++rep) {
                binding->set_modes(Q.data(), n);  // the same iteration every repetition
                const auto t1 = std::chrono::steady_clock::now();
                binding->step(0.0, false, report);
                wall.push_back(seconds_since(t1));
                kernel.push_back(report.kernel_seconds);
                if (wall.back() > 2.0) break;  // slow configuration: one repetition is enough
            }
            binding->read_modes(out.data());
            double dev = 0;
            for (Index j = 0; j < m; ++j)
                for (int d = 0; d < k; ++d) dev = std::max(dev, std::abs(out(j * (n / m), d) - ref(j, d)));
            const double pairs = static_cast<double>(n) * static_cast<double>(n);
            const auto& kc = binding->kernel_config();
            if (!dump.empty()) {  // the program as the driver returns it (PTX on NVIDIA)
                static int index = 0;
                const std::string path = dump + "/" + model + "_" + std::to_string(index++) + ".ptx";
                if (FILE* f = std::fopen(path.c_str(), "wb")) {
                    const std::string bin = binding->program_binary();
                    std::fwrite(bin.data(), 1, bin.size(), f);
                    std::fclose(f);
                }
            }
            std::printf("{\"device\":\"%s\",\"data\":\"%s\",\"model\":\"%s\",\"n\":%lld,\"k\":%d,\"config\":\"%s\","
                        "\"preload\":%d,"
                        "\"tile\":%d,\"tau\":%d,\"f_vppu\":%d,\"f_load\":%d,\"r\":%d,\"form\":\"%s\",\"z\":%d,"
                        "\"bind_s\":%.4f,\"kernel_s\":%.5f,\"step_s\":%.5f,\"pairs_per_s_kernel\":%.4e,"
                        "\"pairs_per_s_step\":%.4e,\"max_dev_vs_float64\":%.3e,\"reps\":%zu,\"segments\":%d,"
                        "\"compiler\":\"%s\"}\n",
                        b.devices()[0].name.c_str(), data.c_str(), model.c_str(), static_cast<long long>(n), k,
                        text.c_str(), kc.preload ? 1 : 0, kc.tile, kc.tau, kc.f_vppu, kc.f_load, kc.modes_per_pu,
                        c.form.c_str(), t.ppus, bind_s, median(kernel), median(wall), pairs / median(kernel),
                        pairs / median(wall), dev, wall.size(), binding->last_segments(),
                        compiler_notes(binding->build_log()).c_str());
            std::fflush(stdout);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_opencl: %s\n", e.what());
        return 1;
    }
    return 0;
}

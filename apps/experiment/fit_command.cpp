#include "fit_command.hpp"

#include <meanshift/cost_model.hpp>
#include <meanshift/errors.hpp>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>

namespace experiment {

namespace mm = meanshift::model;

namespace {

mm::Workload workload_of(const Row& r)
{
    mm::Workload w;
    w.n = r.n;
    w.k = r.k;
    w.m = r.m;
    w.iterations = std::max(1, r.iterations);
    w.kernel = r.kernel == "perpoint" ? meanshift::KernelModel::PerPoint : meanshift::KernelModel::Shared;
    w.topology.ppus = r.z;
    w.topology.pus_per_ppu = r.tau;
    w.topology.f_vppu = r.f_vppu;
    w.topology.f_load = r.f_load;
    w.candidates = r.candidates;
    return w;
}

std::string describe(const Row& r)
{
    std::ostringstream o;
    o << r.sweep << " n=" << r.n << " m=" << r.m << " k=" << r.k << " z=" << r.z << " tau=" << r.tau
      << " f_vppu=" << r.f_vppu << " f_load=" << r.f_load << (r.preload ? " preload" : "");
    return o.str();
}

}  // namespace

int fit_rows(const std::vector<Row>& rows, const FitConfig& cfg, std::ostream& os)
{
    if (cfg.statistic != "median" && cfg.statistic != "min")
        throw meanshift::InvalidArgument("fit: --statistic must be 'median' or 'min', got '" + cfg.statistic + "'");
    const bool use_min = cfg.statistic == "min";
    auto seconds = [&](const Row& r) { return use_min && r.seconds_min > 0 ? r.seconds_min : r.seconds; };
    std::map<std::string, std::vector<Row>> by_backend;
    for (const Row& r : rows) {
        if (!cfg.backend.empty() && r.backend != cfg.backend) continue;
        if (std::find(cfg.sweeps.begin(), cfg.sweeps.end(), r.sweep) == cfg.sweeps.end()) continue;
        if (r.seconds <= 0 || r.n < 1 || r.m < 1 || r.k < 1 || r.z < 1) continue;
        by_backend[r.backend].push_back(r);
    }
    if (by_backend.empty()) {
        os << "fit: no usable rows (sweeps fitted:";
        for (const auto& s : cfg.sweeps) os << ' ' << s;
        os << ")\n";
        return 2;
    }

    int status = 0;
    std::vector<Row> written;
    for (auto& [backend, list] : by_backend) {
        std::vector<mm::Sample> samples;
        for (const Row& r : list) samples.push_back({workload_of(r), seconds(r)});
        const mm::FitResult f = mm::fit(samples);

        os << "backend " << backend << (list.front().device.empty() ? "" : " (" + list.front().device + ")") << ": "
           << samples.size() << " samples, " << cfg.statistic << " of the repeats\n";
        os << std::setprecision(4) << "  R^2 = " << f.r2 << "   R^2 on log(seconds) = " << f.r2_log
           << "   worst relative residual = " << f.worst_relative_residual << " at " << describe(list[f.worst_index])
           << " (measured " << seconds(list[f.worst_index]) << " s, predicted " << f.predicted[f.worst_index]
           << " s)\n";
        os << "  constants (seconds per unit of each term of Theorem 3, restated in docs/complexity-model.md):\n";
        for (int j = 0; j < mm::kTerms; ++j) {
            const auto u = static_cast<std::size_t>(j);
            os << "    " << std::left << std::setw(15) << mm::term_names()[u] << std::right;
            if (f.constants.identified[u])
                os << std::setw(12) << f.constants.value[u] << '\n';
            else
                os << "   (not identified: zero in every sample)\n";
        }
        const double a = f.constants.value[0];
        if (a > 0) {
            // A pair (one mode against one point) costs a·(5k+λ) on one PU.
            const Row& r0 = list.front();
            const double per_pair = a * (5.0 * r0.k + mm::lambda(workload_of(r0).kernel, r0.k));
            os << "  one PU processes one (mode, point) pair in " << per_pair * 1e9 << " ns (k=" << r0.k
               << "); the model's peak is z*tau*f_load/f_vppu / that = "
               << static_cast<double>(r0.z) * r0.tau * r0.f_load / std::max(1, r0.f_vppu) / per_pair
               << " pairs/s at z=" << r0.z << " tau=" << r0.tau << '\n';
        }

        // The five largest misfits, so a reader sees where the model fails, not only that it fits.
        std::vector<std::size_t> idx(list.size());
        std::iota(idx.begin(), idx.end(), 0);
        auto rel = [&](std::size_t i) { return std::abs(f.predicted[i] - seconds(list[i])) / seconds(list[i]); };
        std::sort(idx.begin(), idx.end(), [&](std::size_t x, std::size_t y) { return rel(x) > rel(y); });
        os << "  largest relative residuals:\n";
        for (std::size_t i = 0; i < std::min<std::size_t>(5, idx.size()); ++i)
            os << "    " << std::showpos << std::setw(8) << (f.predicted[idx[i]] / seconds(list[idx[i]]) - 1)
               << std::noshowpos << "  " << describe(list[idx[i]]) << '\n';

        const bool ok = f.r2_log >= cfg.min_r2_log && f.worst_relative_residual <= cfg.max_worst;
        if (std::isfinite(cfg.min_r2_log) || std::isfinite(cfg.max_worst))
            os << "  check: R^2(log) >= " << cfg.min_r2_log << " and worst <= " << cfg.max_worst << ": "
               << (ok ? "PASS" : "FAIL") << '\n';
        if (!ok) status = 1;
        for (std::size_t i = 0; i < list.size(); ++i) {
            Row r = list[i];
            r.predicted = f.predicted[i];
            written.push_back(r);
        }
    }
    if (!cfg.predictions.empty()) {
        CsvWriter w(cfg.predictions, false);
        for (const Row& r : written) w.write(r);
    }
    return status;
}

std::vector<std::size_t> misfits(const std::vector<Row>& rows, double max_relative)
{
    std::map<std::string, std::vector<std::size_t>> by_backend;
    for (std::size_t i = 0; i < rows.size(); ++i)
        if (rows[i].seconds_min > 0) by_backend[rows[i].backend].push_back(i);
    std::vector<std::size_t> out;
    for (const auto& [backend, idx] : by_backend) {
        std::vector<mm::Sample> samples;
        for (std::size_t i : idx) samples.push_back({workload_of(rows[i]), rows[i].seconds_min});
        const mm::FitResult f = mm::fit(samples);
        for (std::size_t j = 0; j < idx.size(); ++j)
            if (std::abs(f.predicted[j] - samples[j].seconds) / samples[j].seconds > max_relative)
                out.push_back(idx[j]);
    }
    return out;
}

int run_fit(const FitConfig& cfg)
{
    std::vector<Row> rows;
    for (const std::string& p : cfg.inputs) {
        std::vector<Row> r = read_csv(p);
        rows.insert(rows.end(), r.begin(), r.end());
    }
    return fit_rows(rows, cfg, std::cout);
}

}  // namespace experiment

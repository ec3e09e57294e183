// Theorems 1-3 as a linear model, and its fit by non-negative least squares (see cost_model.hpp).
#include <meanshift/cost_model.hpp>
#include <meanshift/errors.hpp>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace meanshift::model {
namespace {

double ceil_div(double a, double b)
{
    return std::ceil(a / b);
}

int floor_log2(int v)
{
    int r = 0;
    while ((v >> 1) >= 1) {
        v >>= 1;
        ++r;
    }
    return r;
}

// Lawson-Hanson active-set NNLS: min |A x - b|, x ≥ 0. A is small (samples × kTerms), so a
// column-pivoting QR per inner step is cheap and robust to nearly collinear columns.
Eigen::VectorXd nnls(const Eigen::MatrixXd& A, const Eigen::VectorXd& b)
{
    const Eigen::Index p = A.cols();
    Eigen::VectorXd x = Eigen::VectorXd::Zero(p);
    std::vector<bool> passive(static_cast<std::size_t>(p), false);
    const double tol = 1e-12 * std::max(1.0, A.cwiseAbs().maxCoeff()) * static_cast<double>(A.rows());

    auto solve_passive = [&]() {
        std::vector<Eigen::Index> cols;
        for (Eigen::Index j = 0; j < p; ++j)
            if (passive[static_cast<std::size_t>(j)]) cols.push_back(j);
        Eigen::MatrixXd Ap(A.rows(), static_cast<Eigen::Index>(cols.size()));
        for (std::size_t c = 0; c < cols.size(); ++c) Ap.col(static_cast<Eigen::Index>(c)) = A.col(cols[c]);
        const Eigen::VectorXd sp = Ap.colPivHouseholderQr().solve(b);
        Eigen::VectorXd s = Eigen::VectorXd::Zero(p);
        for (std::size_t c = 0; c < cols.size(); ++c) s[cols[c]] = sp[static_cast<Eigen::Index>(c)];
        return s;
    };

    for (int outer = 0; outer < 3 * static_cast<int>(p) + 10; ++outer) {
        const Eigen::VectorXd w = A.transpose() * (b - A * x);
        Eigen::Index best = -1;
        double best_w = tol;
        for (Eigen::Index j = 0; j < p; ++j)
            if (!passive[static_cast<std::size_t>(j)] && w[j] > best_w) {
                best_w = w[j];
                best = j;
            }
        if (best < 0) break;
        passive[static_cast<std::size_t>(best)] = true;
        for (int inner = 0; inner < 3 * static_cast<int>(p) + 10; ++inner) {
            const Eigen::VectorXd s = solve_passive();
            bool feasible = true;
            for (Eigen::Index j = 0; j < p; ++j)
                if (passive[static_cast<std::size_t>(j)] && s[j] <= 0) feasible = false;
            if (feasible) {
                x = s;
                break;
            }
            double alpha = 1.0;
            for (Eigen::Index j = 0; j < p; ++j)
                if (passive[static_cast<std::size_t>(j)] && s[j] <= 0) alpha = std::min(alpha, x[j] / (x[j] - s[j]));
            x += alpha * (s - x);
            for (Eigen::Index j = 0; j < p; ++j)
                if (passive[static_cast<std::size_t>(j)] && x[j] <= 1e-15 * std::max(1.0, x.cwiseAbs().maxCoeff())) {
                    passive[static_cast<std::size_t>(j)] = false;
                    x[j] = 0;
                }
        }
    }
    return x.cwiseMax(0.0);
}

}  // namespace

const std::array<std::string, kTerms>& term_names()
{
    static const std::array<std::string, kTerms> names = {"loop",  "loop_distinct", "reduce_adds", "reduce_traffic",
                                                          "aleph", "finalize",      "per_mode",    "per_step"};
    return names;
}

int lambda(KernelModel kernel, int k)
{
    return kernel == KernelModel::PerPoint ? 2 * k + 1 : 0;
}

std::array<double, kTerms> CostTerms::row() const
{
    return {waves * loop,
            waves * loop_distinct,
            waves * reduce_adds,
            waves * reduce_traffic,
            waves * aleph,
            waves * finalize,
            per_mode,
            1.0};
}

CostTerms cost_terms(const Workload& w)
{
    if (w.n < 1 || w.k < 1 || w.m < 1 || w.iterations < 1)
        throw InvalidArgument("cost model: n, k, m and iterations must be >= 1 (got n=" + std::to_string(w.n) +
                              ", k=" + std::to_string(w.k) + ", m=" + std::to_string(w.m) +
                              ", iterations=" + std::to_string(w.iterations) + ")");
    const Topology& t = w.topology;
    validate_topology(t, "cost model");
    const double z = t.ppus;
    const double tau_prime = t.vppus_per_ppu();
    const double k = w.k;
    const int f_load = t.f_load;
    const int l = 1 << floor_log2(f_load);

    CostTerms c;
    c.waves = ceil_div(static_cast<double>(w.m), z * tau_prime);
    if (w.candidates < 0 || w.candidates > static_cast<double>(w.m) * static_cast<double>(w.n))
        throw InvalidArgument("cost model: candidates must be in [0, m*n] (0 = m*n), got " +
                              std::to_string(w.candidates));
    // Candidate pairs in place of m·n: each mode's loop runs over C/m points.
    const double n_loop = w.candidates > 0 ? w.candidates / static_cast<double>(w.m) : static_cast<double>(w.n);
    const double chunk = ceil_div(n_loop, f_load);
    c.loop = chunk * (5.0 * k + lambda(w.kernel, w.k));
    c.loop_distinct = t.f_vppu > 1 ? chunk * k : 0.0;
    c.reduce_adds = 2.0 * floor_log2(f_load) * k;
    c.reduce_traffic = 2.0 * (f_load - 1) * k;
    c.aleph = f_load != l ? 2.0 * k : 0.0;
    c.finalize = 2.0 * k;
    c.per_mode = static_cast<double>(w.m) * k;
    c.utilisation = static_cast<double>(w.m) * n_loop / (c.waves * z * tau_prime * t.f_vppu * chunk);
    return c;
}

double predict_seconds(const Workload& w, const Constants& c)
{
    const auto row = cost_terms(w).row();
    double s = 0;
    for (int j = 0; j < kTerms; ++j) s += row[static_cast<std::size_t>(j)] * c.value[static_cast<std::size_t>(j)];
    return s * w.iterations;
}

FitResult fit(const std::vector<Sample>& samples)
{
    if (samples.empty()) throw InvalidArgument("cost model fit: no samples");
    const auto rows = static_cast<Eigen::Index>(samples.size());
    Eigen::MatrixXd A(rows, kTerms);
    Eigen::VectorXd t(rows);
    for (Eigen::Index i = 0; i < rows; ++i) {
        const Sample& s = samples[static_cast<std::size_t>(i)];
        if (!(s.seconds > 0) || !std::isfinite(s.seconds))
            throw InvalidArgument("cost model fit: sample " + std::to_string(i) +
                                  " has a non-positive or non-finite time");
        const auto r = cost_terms(s.workload).row();
        for (int j = 0; j < kTerms; ++j) A(i, j) = r[static_cast<std::size_t>(j)] * s.workload.iterations;
        t[i] = s.seconds;
    }

    // Relative-error weighting: row i divided by t_i, target 1. Columns scaled to unit norm so the
    // NNLS tolerances mean the same for a term counted in 1e10 pair operations and one counted once.
    Eigen::MatrixXd Aw = A;
    for (Eigen::Index i = 0; i < rows; ++i) Aw.row(i) /= t[i];
    Eigen::VectorXd scale(kTerms);
    FitResult out;
    for (int j = 0; j < kTerms; ++j) {
        const double nrm = Aw.col(j).norm();
        out.constants.identified[static_cast<std::size_t>(j)] = nrm > 0;
        scale[j] = nrm > 0 ? nrm : 1.0;
        Aw.col(j) /= scale[j];
    }
    const Eigen::VectorXd theta = nnls(Aw, Eigen::VectorXd::Ones(rows));
    for (int j = 0; j < kTerms; ++j)
        out.constants.value[static_cast<std::size_t>(j)] =
            out.constants.identified[static_cast<std::size_t>(j)] ? theta[j] / scale[j] : 0.0;

    Eigen::VectorXd theta_s(kTerms);
    for (int j = 0; j < kTerms; ++j) theta_s[j] = out.constants.value[static_cast<std::size_t>(j)];
    const Eigen::VectorXd pred = A * theta_s;
    out.predicted.assign(pred.data(), pred.data() + rows);

    const double mean = t.mean();
    double ss_res = 0, ss_tot = 0, ls_res = 0, ls_tot = 0;
    const double lmean = t.array().log().mean();
    for (Eigen::Index i = 0; i < rows; ++i) {
        ss_res += (t[i] - pred[i]) * (t[i] - pred[i]);
        ss_tot += (t[i] - mean) * (t[i] - mean);
        const double lp = std::log(std::max(pred[i], std::numeric_limits<double>::min()));
        ls_res += (std::log(t[i]) - lp) * (std::log(t[i]) - lp);
        ls_tot += (std::log(t[i]) - lmean) * (std::log(t[i]) - lmean);
        const double rel = std::abs(pred[i] - t[i]) / t[i];
        if (rel > out.worst_relative_residual) {
            out.worst_relative_residual = rel;
            out.worst_index = static_cast<std::size_t>(i);
        }
    }
    out.r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : (ss_res == 0 ? 1.0 : 0.0);
    out.r2_log = ls_tot > 0 ? 1.0 - ls_res / ls_tot : (ls_res == 0 ? 1.0 : 0.0);
    return out;
}

}  // namespace meanshift::model

// openmp backend: a step's dispatch to the kernels: the direct SIMD kernels over blocks of modes
// shared among the threads, and the GEMM form over blocks of nearby modes, with its far modes
// (beyond the float32 products' rounding) on the direct kernels (docs/backend-openmp.md).
#include "backends/openmp/openmp_binding.hpp"

#include "backends/common/partial_sums.hpp"
#include "skeleton/src/core/host_nearest.hpp"

#include <meanshift/errors.hpp>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace meanshift::openmp_detail {

void OpenMPBinding::advance_simd(const double* in, double* out, unsigned char* supported, Index count)
{
    const int z = topology_.ppus;
    KernelData kd = kd_;
    // Two vectors of modes per block hide the exp2 latency best; drop to one when that
    // would leave threads without a block (few active modes near convergence), or when the
    // grid's cells are finer than the search radius (the pixel lattice): a block's box is then
    // the union of its modes' windows, and a 4 x 4 tile of 16 modes visits 784 pixels per mode
    // where an 8 x 4 tile of 32 visits 896 (radius 12 px): 10 % faster on china.jpg.
    kd.regs = 2;
    if (kd.f_vppu == 1 && (count + 2 * table_->width - 1) / (2 * table_->width) < z) kd.regs = 1;
    if (kd.f_vppu == 1 && fine_cells_) kd.regs = 1;
    const openmp_detail::RunBlockFn run = table_->select(kd);
    if (!run) throw Error("openmp backend: no kernel for " + topology_.to_string());
    const Index per_block = table_->modes_per_block(kd);
    const Index blocks = (count + per_block - 1) / per_block;
    const std::size_t scratch_bytes = table_->scratch_bytes(kd);
    scratch_.resize(scratch_bytes * static_cast<std::size_t>(z));  // before the parallel region: may throw

    const int k = kd.k;
    const bool sparse = sparse_search();
    double pairs = 0;
#pragma omp parallel num_threads(z) reduction(+ : pairs)
    {
        unsigned char* scratch = scratch_.data() + scratch_bytes * static_cast<std::size_t>(omp_get_thread_num());
        KernelData kb = kd;
        std::vector<std::int64_t> ranges;
#pragma omp for schedule(dynamic, 1)
        for (Index b = 0; b < blocks; ++b) {
            const Index first = b * per_block;
            const int m = static_cast<int>(std::min(per_block, count - first));
            if (sparse) {  // the block's modes visit their cell boxes or kd-tree leaves only
                ranges.clear();
                pairs += static_cast<double>(m) * static_cast<double>(block_ranges(in + first * k, m, ranges));
                kb.ranges = ranges.data();
                kb.nranges = static_cast<int>(ranges.size() / 2);
            }
            run(kb, in + first * k, m, out + first * k, supported + first, scratch);
        }
    }
    if (sparse) pairs_ = pairs;
}

void OpenMPBinding::advance_gemm(const double* in, double* out, unsigned char* supported, Index count)
{
    const int z = topology_.ppus;
    const int k = gd_.k;
    const Index per_block = std::max<Index>(1, std::min<Index>(gd_.modes_per_block, (count + z - 1) / z));
    const std::size_t scratch_bytes = gemm_->scratch_bytes(gd_);
    // Zero-filled once (the step relies on finite pad values), before the parallel region: may throw.
    // (Its own buffer: the direct kernels of the far modes below write into scratch_.)
    if (gemm_scratch_.size() < scratch_bytes * static_cast<std::size_t>(z))
        gemm_scratch_.assign(scratch_bytes * static_cast<std::size_t>(z), 0);
    const bool sparse = sparse_search();
    const bool grouped = count > per_block;
    const std::size_t block_doubles = static_cast<std::size_t>(per_block) * static_cast<std::size_t>(k);
    if (grouped) {
        group_modes(in, count, z);
        // Each thread gathers its block's modes into its own slice and scatters the results
        // back (no count × k copies, which the first step would also pay in page faults).
        if (g_in_.size() < block_doubles * static_cast<std::size_t>(z)) {
            g_in_.resize(block_doubles * static_cast<std::size_t>(z));
            g_out_.resize(block_doubles * static_cast<std::size_t>(z));
            g_sup_.resize(static_cast<std::size_t>(per_block) * static_cast<std::size_t>(z));
        }
    }
    // Blocks of at most per_block modes that never straddle two groups (a block spanning two
    // clusters would centre between them).
    block_first_.clear();
    const std::vector<Index> whole = {0, count};
    const std::vector<Index>& bounds = grouped ? group_start_ : whole;
    for (std::size_t g = 0; g + 1 < bounds.size(); ++g)
        for (Index f = bounds[g]; f < bounds[g + 1]; f += per_block) block_first_.push_back(f);
    block_first_.push_back(count);
    std::vector<Index> block_end(block_first_.size() - 1);
    for (std::size_t b = 0; b + 1 < block_first_.size(); ++b)
        block_end[b] = std::min(block_first_[b] + per_block, block_first_[b + 1]);
    const Index blocks = static_cast<Index>(block_end.size());
    const openmp_detail::GemmBlockFn run = gemm_->run;
    // Far modes (spread_modes) go to the direct SIMD kernels after the blocks, as the direct form
    // would weigh them (float32 differences, no expansion around a centre): the float64 per-pair
    // loop was ~20x slower, and at high k with a small bandwidth every mode is far (bench blobs,
    // σ = h, k = 384: ½|q'|² ≈ 192 against limits of 37 (AMX) and 112 (Eigen): 1.8e6 pairs/s
    // against 4.6e7 direct on 2 Zen 3 cores). Per-point weights beyond float32's range keep the loop.
    const bool far_direct = !wide_weights_ && !float64_ && k <= kMaxSimdK;
    far_modes_.resize(static_cast<std::size_t>(z));
    for (std::vector<Index>& f : far_modes_) f.clear();
    double pairs = 0;
#pragma omp parallel num_threads(z) reduction(+ : pairs)
    {
        const std::size_t thread = static_cast<std::size_t>(omp_get_thread_num());
        unsigned char* scratch = gemm_scratch_.data() + scratch_bytes * thread;
        std::vector<std::int64_t> ranges;
        std::vector<Index> direct_ranges;  // the float64 direct form of spread_modes()
        std::vector<Index>& far_here = far_modes_[thread];
        std::vector<double> s0(static_cast<std::size_t>(k)), s1(static_cast<std::size_t>(k));
        std::vector<float> centre(static_cast<std::size_t>(k));
        std::vector<unsigned char> far;
#pragma omp for schedule(dynamic, 1)
        for (Index b = 0; b < blocks; ++b) {
            const Index first = block_first_[std::size_t(b)];
            const int m = static_cast<int>(block_end[std::size_t(b)] - first);
            const double* yin = in + first * k;
            double* yout = out + first * k;
            unsigned char* sup = supported + first;
            if (grouped) {
                double* gin = g_in_.data() + block_doubles * thread;
                for (int j = 0; j < m; ++j) {
                    const Index q = order_[std::size_t(first + j)];
                    std::copy(in + q * k, in + (q + 1) * k, gin + static_cast<Index>(j) * k);
                }
                yin = gin;
                yout = g_out_.data() + block_doubles * thread;
                sup = g_sup_.data() + static_cast<std::size_t>(per_block) * thread;
            }
            int nranges = -1;  // all rows
            if (sparse) {
                ranges.clear();
                pairs += static_cast<double>(m) * static_cast<double>(block_ranges(yin, m, ranges));
                nranges = static_cast<int>(ranges.size() / 2);
            }
            const int spread = spread_modes(yin, m, centre, far);
            if (spread < m) run(gd_, yin, m, ranges.data(), nranges, yout, sup, scratch);
            for (int j = 0; j < m && spread > 0; ++j) {
                if (!far[std::size_t(j)]) continue;
                if (far_direct) {
                    far_here.push_back(grouped ? order_[std::size_t(first + j)] : first + j);
                    continue;
                }
                const double* y = yin + static_cast<Index>(j) * k;
                mode_sums(y, direct_ranges, s0.data(), s1.data());
                sup[j] = detail::finish_mode(s0.data(), 1, s1.data(), 1, 1.0, y, yout + static_cast<Index>(j) * k, k)
                             ? 1
                             : 0;
            }
            if (grouped) {
                for (int j = 0; j < m; ++j) {
                    const Index q = order_[std::size_t(first + j)];
                    std::copy(yout + static_cast<Index>(j) * k, yout + static_cast<Index>(j + 1) * k, out + q * k);
                    supported[q] = sup[j];
                }
            }
        }
    }
    if (far_direct) advance_far(in, out, supported);
    if (sparse) pairs_ = pairs;
}

void OpenMPBinding::advance_far(const double* in, double* out, unsigned char* supported)
{
    std::vector<Index> idx;
    for (const std::vector<Index>& f : far_modes_) idx.insert(idx.end(), f.begin(), f.end());
    if (idx.empty()) return;
    if (!direct_ready_) {
        build_layout(*data_);
        direct_ready_ = true;
    }
    const int k = gd_.k;
    const Index nf = static_cast<Index>(idx.size());
    std::vector<double> fin(static_cast<std::size_t>(nf) * static_cast<std::size_t>(k)), fout(fin.size());
    std::vector<unsigned char> fsup(static_cast<std::size_t>(nf));
    for (Index j = 0; j < nf; ++j)
        std::copy(in + idx[std::size_t(j)] * k, in + (idx[std::size_t(j)] + 1) * k, fin.data() + j * k);
    advance_simd(fin.data(), fout.data(), fsup.data(), nf);  // pairs_ is the caller's (set after)
    for (Index j = 0; j < nf; ++j) {
        std::copy(fout.data() + j * k, fout.data() + (j + 1) * k, out + idx[std::size_t(j)] * k);
        supported[idx[std::size_t(j)]] = fsup[std::size_t(j)];
    }
}

int OpenMPBinding::spread_modes(const double* y, int m, std::vector<float>& centre,
                                std::vector<unsigned char>& far) const
{
    const int k = gd_.k;
    for (int d = 0; d < k; ++d) {
        double s = 0;
        for (int j = 0; j < m; ++j) s += y[static_cast<Index>(j) * k + d];
        centre[std::size_t(d)] = static_cast<float>(s / m);
    }
    const double limit = (kGemmMaxRounding / gemm_err_ - 1) / (3 * gemm_wmax_);  // on ½|q'|²
    far.assign(static_cast<std::size_t>(m), 0);
    int count = 0;
    for (int j = 0; j < m; ++j) {
        const double* q = y + static_cast<Index>(j) * k;
        double h = 0;
        for (int d = 0; d < k; ++d) h += (q[d] - centre[std::size_t(d)]) * (q[d] - centre[std::size_t(d)]);
        if (!(0.5 * h <= limit)) far[std::size_t(j)] = 1, ++count;
    }
    return count;
}

void OpenMPBinding::group_modes(const double* in, Index count, int z)
{
    const int k = gd_.k;
    const int pivots = static_cast<int>(std::min<Index>(kGemmPivots, count));
    near_d2_.assign(static_cast<std::size_t>(count), std::numeric_limits<double>::infinity());
    near_p_.assign(static_cast<std::size_t>(count), 0);
    Index pivot = 0;
    for (int p = 0; p < pivots; ++p) {
        const double* c = in + pivot * k;
        double far_d2 = -1;
        Index far_q = 0;
#pragma omp parallel num_threads(z)
        {
            double my_d2 = -1;
            Index my_q = 0;
#pragma omp for
            for (Index q = 0; q < count; ++q) {
                const double* y = in + q * k;
                double d2 = 0;
                for (int d = 0; d < k; ++d) d2 += (y[d] - c[d]) * (y[d] - c[d]);
                if (d2 < near_d2_[std::size_t(q)]) {
                    near_d2_[std::size_t(q)] = d2;
                    near_p_[std::size_t(q)] = p;
                }
                if (near_d2_[std::size_t(q)] > my_d2) {
                    my_d2 = near_d2_[std::size_t(q)];
                    my_q = q;
                }
            }
#pragma omp critical
            if (my_d2 > far_d2 || (my_d2 == far_d2 && my_q < far_q)) {
                far_d2 = my_d2;
                far_q = my_q;
            }
        }
        pivot = far_q;
    }
    // Counting sort by pivot, stable; group_start_ = where each pivot's group begins (+ count).
    std::vector<Index> start(static_cast<std::size_t>(pivots) + 1, 0);
    for (Index q = 0; q < count; ++q) ++start[std::size_t(near_p_[std::size_t(q)]) + 1];
    for (int p = 0; p < pivots; ++p) start[std::size_t(p) + 1] += start[std::size_t(p)];
    group_start_ = start;
    order_.resize(static_cast<std::size_t>(count));
    for (Index q = 0; q < count; ++q) order_[std::size_t(start[std::size_t(near_p_[std::size_t(q)])]++)] = q;
}

}  // namespace meanshift::openmp_detail

// Clusters three Gaussian blobs with meanshift-skeleton, first with one shared isotropic bandwidth,
// then with a per-point diagonal covariance (each point its own standard deviations).
#include <meanshift/meanshift.hpp>

#include <cstdio>
#include <random>

int main()
{
    // 300 points in 2-D, 100 around each of (0, 0), (10, 0) and (0, 10).
    const float blob[3][2] = {{0, 0}, {10, 0}, {0, 10}};
    meanshift::MatrixF data(300, 2);  // n x k, row-major, one point per row
    std::mt19937 rng(42);
    std::normal_distribution<float> noise(0.0f, 1.0f);
    for (int i = 0; i < 300; ++i) {
        data(i, 0) = blob[i % 3][0] + noise(rng);
        data(i, 1) = blob[i % 3][1] + noise(rng);
    }

    meanshift::Options options;
    options.backend = "auto";  // or "serial", "openmp", "opencl", "cuda"
    options.bandwidth = meanshift::Bandwidth::isotropic(1.5);  // standard deviation, data units

    try {
        meanshift::Result r = meanshift::cluster(data, options);
        std::printf("%s backend: %zu clusters in %.3f s\n", r.backend.c_str(), r.cluster_sizes.size(),
                    r.timing.seconds_total);
        for (Eigen::Index c = 0; c < r.centres.rows(); ++c)
            std::printf("  centre (%6.2f, %6.2f), %lld points\n", r.centres(c, 0), r.centres(c, 1),
                        static_cast<long long>(r.cluster_sizes[c]));
        std::printf("point 0 is in cluster %d\n", r.labels[0]);

        // Per-point uncertainty: row i holds the standard deviations of point i (n x k).
        meanshift::MatrixD h = meanshift::MatrixD::Constant(300, 2, 1.5);
        h.topRows(100).array() = 2.0;
        options.bandwidth = meanshift::Bandwidth::per_point(h);
        meanshift::Result rp = meanshift::cluster(data, options);
        std::printf("per-point bandwidths: %zu clusters\n", rp.cluster_sizes.size());

        return r.cluster_sizes.size() == 3 && rp.cluster_sizes.size() == 3 ? 0 : 1;
    } catch (const meanshift::Error& e) {  // bad input, backend unavailable, device failure
        std::fprintf(stderr, "meanshift: %s\n", e.what());
        return 1;
    }
}

// The installed MPI layer: each rank passes its share of three blobs; `mpirun -np R example_mpi`.
#include <meanshift/mpi.hpp>

#include <cstdio>
#include <random>

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const float blob[3][2] = {{0, 0}, {10, 0}, {0, 10}};
    meanshift::MatrixF mine(300 / size, 2);  // this rank's rows, n_r x k
    std::mt19937 rng(42 + static_cast<unsigned>(rank));
    std::normal_distribution<float> noise(0.0f, 1.0f);
    for (Eigen::Index i = 0; i < mine.rows(); ++i)
        for (int d = 0; d < 2; ++d) mine(i, d) = blob[i % 3][d] + noise(rng);
    meanshift::Options options;
    options.bandwidth = meanshift::Bandwidth::isotropic(1.5);
    int rc = 0;
    try {
        const meanshift::mpi::DistributedResult r = meanshift::mpi::cluster(MPI_COMM_WORLD, mine, options);
        if (rank == 0)
            std::printf("%zu clusters over %d ranks (%s)\n", r.cluster_sizes.size(), r.ranks,
                        meanshift::mpi::to_string(r.strategy));
    } catch (const meanshift::mpi::DistributedError& e) {  // thrown on every rank alike
        if (rank == 0) std::fprintf(stderr, "error: %s\n", e.what());
        rc = 1;
    }
    MPI_Finalize();
    return rc;
}

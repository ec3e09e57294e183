// libFuzzer target: the NPY reader (mscli::parse_npy) on arbitrary bytes.
#include "fuzz_support.hpp"
#include "io_matrix.hpp"

#include <meanshift/errors.hpp>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        const meanshift::MatrixD m = mscli::parse_npy(bytes, "fuzz.npy");
        if (m.rows() < 1 || m.cols() < 1) msfuzz::fail("empty matrix accepted", bytes);
        if (!m.allFinite()) msfuzz::fail("non-finite value accepted", bytes);
        // Every element comes from at least one byte of the file.
        if (static_cast<std::size_t>(m.size()) > size) msfuzz::fail("more elements than the file holds", bytes);
    } catch (const meanshift::IoError& e) {
        msfuzz::check_message(e.what(), "fuzz.npy: ");
    }
    return 0;
}

// libFuzzer target: the CSV reader (mscli::parse_csv) on arbitrary bytes.
#include "fuzz_support.hpp"
#include "io_matrix.hpp"

#include <meanshift/errors.hpp>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const meanshift::MatrixD m = mscli::parse_csv(text, "fuzz.csv");
        if (m.rows() < 1 || m.cols() < 1) msfuzz::fail("empty matrix accepted", text);
        if (!m.allFinite()) msfuzz::fail("non-finite value accepted", text);
        // A field is at least one byte plus a delimiter or line end (except the last one).
        if (static_cast<std::size_t>(m.size()) > size / 2 + 1) msfuzz::fail("more values than the text can hold", text);
    } catch (const meanshift::IoError& e) {
        msfuzz::check_message(e.what(), "fuzz.csv: ");
    }
    return 0;
}

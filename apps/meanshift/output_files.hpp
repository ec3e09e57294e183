#pragma once
/// @file output_files.hpp
/// The set of files one run of the tool reads and writes, so that no run loses a user's data:
///  - before any work, every output is checked against every input (and the other outputs): the
///    same file after following links (st_dev/st_ino when both exist, canonical paths otherwise)
///    is refused with a message naming both paths; so is an output whose folder is missing or not
///    writable, or that exists and is not a regular file (a folder, a device, a FIFO);
///  - at the end every output is written to a temporary file in its target folder (each write,
///    fsync and close checked), and only when all of them are complete are they renamed onto
///    their final names. On any failure the temporaries are removed, no output file is created
///    or changed, and an IoError says which file failed and why.

#include <string>
#include <sys/types.h>
#include <vector>

namespace mscli {

class OutputFiles {
public:
    OutputFiles() = default;
    OutputFiles(const OutputFiles&) = delete;
    OutputFiles& operator=(const OutputFiles&) = delete;
    ~OutputFiles();  ///< removes temporaries left by a failed commit()

    /// A file the run reads. `role` names it in messages, e.g. "the input", "--per-point-bandwidths".
    void add_input(const std::string& path, const std::string& role);

    /// A file the run will write; checks it at once (see above) and throws IoError if it may not
    /// be written. Returns the slot to fill with set().
    std::size_t add_output(const std::string& path, const std::string& role);

    /// The complete contents of output `slot`.
    void set(std::size_t slot, std::string bytes);

    /// Writes every output (all or nothing, see above). Throws IoError on failure.
    void commit();

private:
    struct Input {
        std::string path, role;
    };
    struct Output {
        std::string path;    // as given (for messages)
        std::string role;
        std::string target;  // where the file goes: the path, or a symbolic link's target
        bool existed = false;
        mode_t mode = 0;
        std::string bytes;
        bool has_bytes = false;
        std::string temp;    // temporary file while commit() runs
    };
    std::vector<Input> inputs_;
    std::vector<Output> outputs_;

    void remove_temporaries();
};

/// Writes one file atomically (temporary file + rename), checking it is not `input_path`
/// (if given). For callers that write a single file.
void write_file_atomically(const std::string& path, std::string bytes);

}  // namespace mscli

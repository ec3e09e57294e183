#pragma once
/// @file output_files.hpp
/// The set of files one run of the tool reads and writes, so that no run loses a user's data:
///  - before any work, every output is checked against every input (and the other outputs): the
///    same file after following links (st_dev/st_ino when both exist, canonical paths otherwise)
///    is refused with a message naming both paths; so is an output whose folder is missing or not
///    writable, or that exists and is not a regular file (a folder, a device, a FIFO);
///  - at the end every output is written to a temporary file in its target folder (each write,
///    fsync and close checked: prepare()), and only when all of them are complete are they renamed
///    onto their final names together (publish()): under an exclusive lock on the target folders,
///    so that concurrent runs writing the same names publish one whole set after the other, with
///    SIGINT/SIGTERM/SIGHUP/SIGQUIT held back, and with the earlier renames undone (old files put
///    back from hard-linked backups) if one fails. On any failure the temporaries are removed, no
///    output file is created or changed, and an IoError says which file failed and why.
///  - an output that is a symbolic link is written where the link points, also when that file
///    does not exist yet (as the shell's `>` does).

#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace mscli {

class OutputFiles {
public:
    OutputFiles();
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

    /// Writes every output to its temporary file (all or nothing); nothing is visible under the
    /// final names yet. Throws IoError on failure (the temporaries removed).
    void prepare();
    /// Renames the prepared temporaries onto their names, as one set (see above); prepares them
    /// first if prepare() was not called. Throws IoError on failure. A caller that must report
    /// before the outputs exist (the summary on stdout, whose failure must leave no outputs)
    /// calls prepare(), reports, then publish().
    void publish();
    /// prepare() then publish().
    void commit();

private:
    struct Input {
        std::string path, role;
    };
    struct Output {
        std::string path;  // as given (for messages)
        std::string role;
        std::string target;  // where the file goes: the path, or a symbolic link's target
        bool existed = false;
        mode_t mode = 0;
        std::string bytes;
        bool has_bytes = false;
        std::string temp;  // temporary file from prepare() to publish()
        bool linked_missing = false;  // a symbolic link to a file that does not exist yet
    };
    struct TempGuard;
    std::vector<Input> inputs_;
    std::vector<Output> outputs_;
    std::unique_ptr<TempGuard> guard_;
    bool prepared_ = false;

    void remove_temporaries();
};

/// Flushes stdout; throws IoError("cannot write to standard output (reason)") if anything printed
/// did not arrive (`> /dev/full`, a closed pipe).
void flush_stdout();

/// Writes one file atomically (temporary file + rename), checking it is not `input_path`
/// (if given). For callers that write a single file.
void write_file_atomically(const std::string& path, std::string bytes);

}  // namespace mscli

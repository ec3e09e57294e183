#include "output_files.hpp"

#include <meanshift/errors.hpp>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mscli {
namespace {

using meanshift::IoError;

std::string why(int err) { return std::strerror(err); }

// "dir/name" -> ("dir", "name"); "name" -> (".", "name"); "/name" -> ("/", "name").
void split_path(const std::string& path, std::string& dir, std::string& base)
{
    const std::size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) {
        dir = ".";
        base = path;
    } else {
        dir = slash == 0 ? "/" : path.substr(0, slash);
        base = path.substr(slash + 1);
    }
}

std::string real_path(const std::string& path)
{
    char* r = ::realpath(path.c_str(), nullptr);
    if (!r) return {};
    std::string out(r);
    std::free(r);
    return out;
}

// What a path names: the file (device and inode) if it exists, and a canonical path either way
// (links followed, for a missing file through its folder).
struct FileId {
    bool exists = false;
    dev_t dev = 0;
    ino_t ino = 0;
    std::string canonical;
};

FileId identify(const std::string& path)
{
    FileId id;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        id.exists = true;
        id.dev = st.st_dev;
        id.ino = st.st_ino;
        id.canonical = real_path(path);
        if (id.canonical.empty()) id.canonical = path;
        return id;
    }
    std::string dir, base;
    split_path(path, dir, base);
    const std::string real_dir = real_path(dir);
    if (!real_dir.empty()) {
        id.canonical = (real_dir == "/" ? "" : real_dir) + "/" + base;
    } else if (!path.empty() && path[0] == '/') {
        id.canonical = path;
    } else {
        char cwd[PATH_MAX];
        id.canonical = (::getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" : std::string()) + path;
    }
    return id;
}

bool same_file(const FileId& a, const FileId& b)
{
    if (a.exists && b.exists) return a.dev == b.dev && a.ino == b.ino;
    return a.canonical == b.canonical;
}

// Temporaries that a signal handler removes if the user interrupts the run while they exist.
constexpr int kMaxTemps = 16;
char g_temps[kMaxTemps][PATH_MAX];
volatile std::sig_atomic_t g_temp_count = 0;
const int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
struct sigaction g_old_actions[sizeof kSignals / sizeof kSignals[0]];

extern "C" void remove_temps_and_reraise(int sig)
{
    for (int i = 0; i < g_temp_count; ++i) ::unlink(g_temps[i]);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

void register_temp(const std::string& path)
{
    if (g_temp_count >= kMaxTemps || path.size() >= PATH_MAX) return;
    std::memcpy(g_temps[g_temp_count], path.c_str(), path.size() + 1);
    g_temp_count = g_temp_count + 1;
}

struct SignalGuard {
    SignalGuard()
    {
        struct sigaction sa {};
        sa.sa_handler = remove_temps_and_reraise;
        sigemptyset(&sa.sa_mask);
        for (std::size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i)
            ::sigaction(kSignals[i], &sa, &g_old_actions[i]);
    }
    ~SignalGuard()
    {
        for (std::size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i)
            ::sigaction(kSignals[i], &g_old_actions[i], nullptr);
        g_temp_count = 0;
    }
};

void write_all(int fd, const std::string& bytes, const std::string& path)
{
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (w < 0) {
            if (errno == EINTR) continue;
            throw IoError(path + ": cannot write (" + why(errno) + ")");
        }
        if (w == 0) throw IoError(path + ": cannot write (no progress)");
        done += static_cast<std::size_t>(w);
    }
}

}  // namespace

OutputFiles::~OutputFiles() { remove_temporaries(); }

void OutputFiles::remove_temporaries()
{
    for (Output& o : outputs_) {
        if (!o.temp.empty()) ::unlink(o.temp.c_str());
        o.temp.clear();
    }
}

void OutputFiles::add_input(const std::string& path, const std::string& role)
{
    inputs_.push_back({path, role});
}

std::size_t OutputFiles::add_output(const std::string& path, const std::string& role)
{
    const std::string named = path + " (" + role + ")";
    if (path.empty()) throw IoError("the " + role + " file name is empty");
    if (path.back() == '/') throw IoError(named + ": names a folder, not a file");

    Output o;
    o.path = path;
    o.role = role;
    o.target = path;
    struct stat lst {}, st {};
    const bool linked = ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
    if (::stat(path.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) throw IoError(named + ": is a folder, not a file");
        if (!S_ISREG(st.st_mode))
            throw IoError(named + ": exists and is not a regular file (a device, FIFO or socket); outputs "
                                  "are written to a temporary file and renamed, which would replace it");
        o.existed = true;
        o.mode = st.st_mode & 07777;
        if (linked) {  // write where the link points, as opening the path would
            o.target = real_path(path);
            if (o.target.empty()) o.target = path;
        }
    } else if (errno != ENOENT) {
        throw IoError(named + ": cannot use this path (" + why(errno) + ")");
    } else if (linked) {
        throw IoError(named + ": is a symbolic link to a missing file");
    }

    const FileId id = identify(o.target);
    for (const Input& in : inputs_) {
        const FileId in_id = identify(in.path);
        if (!in_id.exists) continue;  // reading it will fail with its own message
        if (same_file(id, in_id)) {
            const std::string same = in.path == path ? "" : " (the same file)";
            throw IoError("refusing to write " + named + ": it is " + in.role + " " + in.path + same +
                          ", which would be lost");
        }
    }
    for (const Output& other : outputs_) {
        if (same_file(id, identify(other.target)))
            throw IoError(named + " and " + other.path + " (" + other.role +
                          ") are the same file; give them different names");
    }

    std::string dir, base;
    split_path(o.target, dir, base);
    struct stat dst {};
    if (::stat(dir.c_str(), &dst) != 0)
        throw IoError(named + ": folder " + dir + " does not exist (" + why(errno) + ")");
    if (!S_ISDIR(dst.st_mode)) throw IoError(named + ": " + dir + " is not a folder");
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        throw IoError(named + ": cannot write in folder " + dir + " (" + why(errno) + ")");

    outputs_.push_back(std::move(o));
    return outputs_.size() - 1;
}

void OutputFiles::set(std::size_t slot, std::string bytes)
{
    outputs_.at(slot).bytes = std::move(bytes);
    outputs_.at(slot).has_bytes = true;
}

void OutputFiles::commit()
{
    const mode_t mask = ::umask(0);
    ::umask(mask);
    SignalGuard guard;
    std::size_t renamed = 0;
    bool message_complete = false;
    try {
        for (Output& o : outputs_) {
            if (!o.has_bytes) throw IoError(o.path + ": internal error: no contents to write");
            std::string dir, base;
            split_path(o.target, dir, base);
            if (base.size() > 200) base.resize(200);  // room for ".tmp-XXXXXX" within NAME_MAX
            std::string tmpl = dir + "/." + base + ".tmp-XXXXXX";
            const int fd = ::mkstemp(tmpl.data());
            if (fd < 0)
                throw IoError(o.path + ": cannot create a temporary file in " + dir + " (" + why(errno) + ")");
            o.temp = tmpl;
            register_temp(tmpl);
            try {
                write_all(fd, o.bytes, o.path);
                if (::fchmod(fd, o.existed ? o.mode : (0666 & ~mask)) != 0)
                    throw IoError(o.path + ": cannot set permissions (" + why(errno) + ")");
                if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
                    throw IoError(o.path + ": cannot write (" + why(errno) + ")");
            } catch (...) {
                ::close(fd);
                throw;
            }
            if (::close(fd) != 0) throw IoError(o.path + ": cannot write (" + why(errno) + ")");
            std::string().swap(o.bytes);
        }
        for (Output& o : outputs_) {
            if (::rename(o.temp.c_str(), o.target.c_str()) != 0) {
                const int err = errno;
                std::string lost;
                for (std::size_t j = 0; j < renamed; ++j) {  // undo what can be undone
                    if (!outputs_[j].existed) ::unlink(outputs_[j].target.c_str());
                    else lost += (lost.empty() ? "" : ", ") + outputs_[j].path;
                }
                remove_temporaries();
                message_complete = true;
                throw IoError(o.path + ": cannot rename the complete temporary file onto it (" + why(err) + ")" +
                              (lost.empty() ? "; no output file was created or changed"
                                            : "; already replaced: " + lost));
            }
            o.temp.clear();
            ++renamed;
        }
    } catch (const IoError& e) {
        remove_temporaries();
        if (message_complete) throw;
        throw IoError(std::string(e.what()) + "; no output file was created or changed");
    }
    for (const Output& o : outputs_) {  // make the renames durable (best effort)
        std::string dir, base;
        split_path(o.target, dir, base);
        const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
        if (dfd >= 0) {
            ::fsync(dfd);
            ::close(dfd);
        }
    }
}

void write_file_atomically(const std::string& path, std::string bytes)
{
    OutputFiles out;
    out.set(out.add_output(path, "output"), std::move(bytes));
    out.commit();
}

}  // namespace mscli

#include "output_files.hpp"

#include <meanshift/errors.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

namespace mscli {
namespace {

using meanshift::IoError;

std::string why(int err)
{
    return std::strerror(err);
}

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

// Where a chain of symbolic links ends (relative links resolved against their own folder); empty
// with errno set if a link cannot be read or the chain is longer than the kernel's own limit (40).
std::string link_destination(const std::string& path)
{
    std::string at = path;
    for (int hop = 0; hop < 40; ++hop) {
        struct stat st {};
        if (::lstat(at.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return at;
        std::vector<char> buf(PATH_MAX + 1);
        const ssize_t len = ::readlink(at.c_str(), buf.data(), buf.size() - 1);
        if (len < 0) return {};
        const std::string to(buf.data(), static_cast<std::size_t>(len));
        if (!to.empty() && to[0] == '/') {
            at = to;
        } else {
            std::string dir, base;
            split_path(at, dir, base);
            at = (dir == "/" ? "" : dir) + "/" + to;
        }
    }
    errno = ELOOP;
    return {};
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

}  // namespace

// Removes the temporaries if a signal ends the tool while they exist (prepare() to publish()).
struct OutputFiles::TempGuard {
    TempGuard()
    {
        struct sigaction sa {};
        sa.sa_handler = remove_temps_and_reraise;
        sigemptyset(&sa.sa_mask);
        for (std::size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i)
            ::sigaction(kSignals[i], &sa, &g_old_actions[i]);
    }
    ~TempGuard()
    {
        for (std::size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i)
            ::sigaction(kSignals[i], &g_old_actions[i], nullptr);
        g_temp_count = 0;
    }
};

namespace {

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

OutputFiles::OutputFiles() = default;

OutputFiles::~OutputFiles()
{
    remove_temporaries();
    guard_.reset();
}

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
    struct stat lst {
    }, st{};
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
        // A link to a file that does not exist yet: create the file where the link points, as the
        // shell's `>` does (docs/cli.md), so the link stays a link. Its folder is checked below.
        o.target = link_destination(path);
        if (o.target.empty()) throw IoError(named + ": cannot follow the symbolic link (" + why(errno) + ")");
        o.linked_missing = true;
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

void OutputFiles::prepare()
{
    if (prepared_) return;
    const mode_t mask = ::umask(0);
    ::umask(mask);
    guard_ = std::make_unique<TempGuard>();
    try {
        for (Output& o : outputs_) {
            if (!o.has_bytes) throw IoError(o.path + ": internal error: no contents to write");
            std::string dir, base;
            split_path(o.target, dir, base);
            if (base.size() > 200) base.resize(200);  // room for ".tmp-XXXXXX.old" within NAME_MAX
            std::string tmpl = dir + "/." + base + ".tmp-XXXXXX";
            const int fd = ::mkstemp(tmpl.data());
            if (fd < 0) throw IoError(o.path + ": cannot create a temporary file in " + dir + " (" + why(errno) + ")");
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
    } catch (const IoError& e) {
        remove_temporaries();
        guard_.reset();
        throw IoError(std::string(e.what()) + "; no output file was created or changed");
    }
    prepared_ = true;
}

void OutputFiles::publish()
{
    prepare();
    // 1. Exclusive locks on the target folders (flock on the folder itself, so no lock file is
    //    left behind), taken in one order (device, inode) by every run: two runs that publish into
    //    the same folders do it one after the other, never interleaved. Where a file system has no
    //    flock (some network file systems), the renames go ahead unlocked.
    struct Folder {
        dev_t dev;
        ino_t ino;
        std::string path;
    };
    std::vector<Folder> folders;
    for (const Output& o : outputs_) {
        std::string dir, base;
        split_path(o.target, dir, base);
        struct stat st {};
        if (::stat(dir.c_str(), &st) != 0) continue;  // the rename below reports it
        bool known = false;
        for (const Folder& f : folders) known = known || (f.dev == st.st_dev && f.ino == st.st_ino);
        if (!known) folders.push_back({st.st_dev, st.st_ino, dir});
    }
    std::sort(folders.begin(), folders.end(),
              [](const Folder& x, const Folder& y) { return x.dev != y.dev ? x.dev < y.dev : x.ino < y.ino; });
    std::vector<int> locks;
    for (const Folder& f : folders) {
        const int fd = ::open(f.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) continue;
        while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {}
        locks.push_back(fd);  // closing it releases the lock
    }
    struct Unlock {
        std::vector<int>& fds;
        ~Unlock()
        {
            for (int fd : fds) ::close(fd);
        }
    } unlock{locks};

    // 2. The renames, with the signals that would end the tool held back until all are done (a
    //    Ctrl-C now would otherwise leave half a set). An existing target is first hard-linked to
    //    a backup name, so that a failed rename can put every earlier target back as it was.
    sigset_t block, old;
    sigemptyset(&block);
    for (int sig : kSignals) sigaddset(&block, sig);
    ::sigprocmask(SIG_BLOCK, &block, &old);
    std::vector<std::string> backups(outputs_.size());
    std::vector<char> replaced(outputs_.size(), 0);  // the target existed when it was renamed onto
    std::size_t renamed = 0;
    int err = 0;
    for (; renamed < outputs_.size(); ++renamed) {
        Output& o = outputs_[renamed];
        const std::string backup = o.temp + ".old";
        struct stat st {};
        replaced[renamed] = ::lstat(o.target.c_str(), &st) == 0;
        if (replaced[renamed] && ::link(o.target.c_str(), backup.c_str()) == 0) backups[renamed] = backup;
        if (::rename(o.temp.c_str(), o.target.c_str()) != 0) {
            err = errno;
            if (!backups[renamed].empty()) ::unlink(backup.c_str());
            backups[renamed].clear();
            break;
        }
    }
    std::string lost;
    if (err != 0) {
        for (std::size_t j = 0; j < renamed; ++j) {  // undo, newest first
            const std::size_t i = renamed - 1 - j;
            const Output& r = outputs_[i];
            const bool ok = !backups[i].empty() ? ::rename(backups[i].c_str(), r.target.c_str()) == 0
                            : !replaced[i]      ? ::unlink(r.target.c_str()) == 0
                                                : false;  // no backup (no hard links here): the new file stays
            if (!ok) lost += (lost.empty() ? "" : ", ") + r.path;
        }
    } else {
        for (Output& o : outputs_) o.temp.clear();
    }
    for (const std::string& b : backups)
        if (!b.empty()) ::unlink(b.c_str());
    if (err == 0) guard_.reset();  // before a held-back signal is delivered: nothing left to remove
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    if (err != 0) {
        const Output& o = outputs_[renamed];
        remove_temporaries();
        guard_.reset();
        throw IoError(o.path + ": cannot rename the complete temporary file onto it (" + why(err) + ")" +
                      (lost.empty() ? "; no output file was created or changed" : "; could not be put back: " + lost));
    }
    for (const Folder& f : folders) {  // make the renames durable (best effort)
        const int dfd = ::open(f.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            ::fsync(dfd);
            ::close(dfd);
        }
    }
}

void OutputFiles::commit()
{
    prepare();
    publish();
}

void flush_stdout()
{
    if (std::fflush(stdout) != 0 || std::ferror(stdout))
        throw IoError(std::string("cannot write to standard output (") + why(errno) + ")");
}

void write_file_atomically(const std::string& path, std::string bytes)
{
    OutputFiles out;
    out.set(out.add_output(path, "output"), std::move(bytes));
    out.commit();
}

}  // namespace mscli

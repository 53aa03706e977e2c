#include "util/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace mq {
namespace {

// The symbolic name of the errno values a user of a data directory meets, for the message.
const char *errno_name(int err) noexcept {
    switch (err) {
        case ENOSPC: return "ENOSPC";
        case EIO: return "EIO";
        case EACCES: return "EACCES";
        case EPERM: return "EPERM";
        case ENOENT: return "ENOENT";
        case EEXIST: return "EEXIST";
        case EROFS: return "EROFS";
        case EDQUOT: return "EDQUOT";
        case ENOTDIR: return "ENOTDIR";
        case EWOULDBLOCK: return "EWOULDBLOCK";
        case EMFILE: return "EMFILE";
        default: return nullptr;
    }
}

// 0, or the errno of a call that returned -1.
int status_of(int r) noexcept { return r < 0 ? errno : 0; }

class PosixFile final : public File {
public:
    explicit PosixFile(int fd) noexcept : fd_(fd) {}
    ~PosixFile() override {
        for (auto [at, len] : maps_) munmap(at, len);
        ::close(fd_);
    }

    int write_at(const void *data, size_t n, uint64_t at) override {
        const auto *p = static_cast<const char *>(data);
        while (n) {
            const ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(at));
            if (w < 0) {
                if (errno == EINTR) continue;
                return errno;
            }
            if (w == 0) return EIO;
            p += w;
            n -= static_cast<size_t>(w);
            at += static_cast<uint64_t>(w);
        }
        return 0;
    }
    int read_at(void *out, size_t n, uint64_t at, size_t *got) override {
        auto *p = static_cast<char *>(out);
        size_t done = 0;
        while (done < n) {
            const ssize_t r = ::pread(fd_, p + done, n - done, static_cast<off_t>(at + done));
            if (r < 0) {
                if (errno == EINTR) continue;
                *got = done;
                return errno;
            }
            if (r == 0) break;
            done += static_cast<size_t>(r);
        }
        *got = done;
        return 0;
    }
    int sync() override {
        int r;
        do r = ::fdatasync(fd_);
        while (r < 0 && errno == EINTR);
        return status_of(r);
    }
    int size(uint64_t *out) override {
        struct stat st;
        if (::fstat(fd_, &st) < 0) return errno;
        *out = static_cast<uint64_t>(st.st_size);
        return 0;
    }
    int truncate(uint64_t size) override {
        int r;
        do r = ::ftruncate(fd_, static_cast<off_t>(size));
        while (r < 0 && errno == EINTR);
        return status_of(r);
    }
    int reserve(uint64_t size) override {
        // posix_fallocate returns the error rather than setting errno.
        int r;
        do r = ::posix_fallocate(fd_, 0, static_cast<off_t>(size));
        while (r == EINTR);
        return r;
    }
    int map(size_t len, const unsigned char **out) override {
        if (len == 0) {
            *out = nullptr;
            return 0;
        }
        maps_.reserve(maps_.size() + 1);  // may throw before anything is mapped
        void *m = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd_, 0);
        if (m == MAP_FAILED) return errno;
        maps_.emplace_back(m, len);  // every mapping lives as long as the file: views point in
        *out = static_cast<const unsigned char *>(m);
        return 0;
    }

private:
    int fd_;
    std::vector<std::pair<void *, size_t>> maps_;
};

class PosixLock final : public FileLock {
public:
    explicit PosixLock(int fd) noexcept : fd_(fd) {}
    ~PosixLock() override { ::close(fd_); }  // closing the descriptor drops the lock

private:
    int fd_;
};

class PosixFileSystem final : public FileSystem {
public:
    int open(const std::string &path, OpenMode mode, std::unique_ptr<File> *out) override {
        int flags = O_RDWR | O_CLOEXEC;
        if (mode == OpenMode::create_new) flags |= O_CREAT | O_EXCL;
        if (mode == OpenMode::create_or_open) flags |= O_CREAT;
        int fd;
        do fd = ::open(path.c_str(), flags, 0644);
        while (fd < 0 && errno == EINTR);
        if (fd < 0) return errno;
        out->reset(new (std::nothrow) PosixFile(fd));
        if (!*out) {
            ::close(fd);
            return ENOMEM;
        }
        return 0;
    }
    int remove(const std::string &path) override { return status_of(::unlink(path.c_str())); }
    int rename(const std::string &from, const std::string &to) override {
        return status_of(::rename(from.c_str(), to.c_str()));
    }
    int make_dir(const std::string &path) override {
        if (::mkdir(path.c_str(), 0755) == 0) return 0;
        const int err = errno;
        struct stat st;
        if (err == EEXIST && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return 0;
        return err == EEXIST ? ENOTDIR : err;
    }
    int list(const std::string &dir, std::vector<std::string> *names) override {
        DIR *d = ::opendir(dir.c_str());
        if (!d) return errno;
        names->clear();
        errno = 0;
        while (const dirent *e = ::readdir(d)) {
            if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
                names->emplace_back(e->d_name);
        }
        const int err = errno;
        ::closedir(d);
        std::sort(names->begin(), names->end());
        return err;
    }
    int sync_dir(const std::string &dir) override {
        const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) return errno;
        int r;
        do r = ::fsync(fd);
        while (r < 0 && errno == EINTR);
        const int err = r < 0 ? errno : 0;
        ::close(fd);
        return err;
    }
    int lock(const std::string &path, std::unique_ptr<FileLock> *out) override {
        const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return errno;
        // flock locks belong to the open file description: a second open in this process
        // conflicts too, so two brokers of one process cannot share a directory either.
        if (::flock(fd, LOCK_EX | LOCK_NB) < 0) {
            const int err = errno;
            ::close(fd);
            return err;
        }
        out->reset(new (std::nothrow) PosixLock(fd));
        if (!*out) {
            ::close(fd);
            return ENOMEM;
        }
        return 0;
    }
};

}  // namespace

FileSystem &posix_file_system() {
    static PosixFileSystem fs;
    return fs;
}

std::string describe_io(const char *operation, const std::string &path, int err) {
    std::string s = operation;
    s += " of ";
    s += path;
    s += " failed: ";
    char buf[128];
    // The GNU strerror_r returns the text (maybe not in buf).
    s += strerror_r(err, buf, sizeof buf);
    if (const char *name = errno_name(err)) {
        s += " (";
        s += name;
        s += ')';
    }
    return s;
}

}  // namespace mq

// The file operations a durable log needs, behind one interface: the real one on POSIX
// (posix_file_system()) and, in the tests, one that simulates crashes and injects faults
// (tests/faulty_file_system.h), as SQLite's test VFS and TigerBeetle's simulated storage do.
// Nothing above this interface calls the operating system's file calls itself, so every fault
// a test can name (a lost unsynced write, a torn one, ENOSPC or EIO on the Nth call, a flipped
// bit) reaches the same code a real fault would.
//
// Every operation returns 0 or an errno value; describe_io() turns one into the words a user
// reads, naming the operation and the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mq {

class File {
public:
    virtual ~File() = default;
    // Writes all n bytes at `at` (a short write is continued), or returns an errno value; after
    // a failure, any part of the range may have been written.
    virtual int write_at(const void *data, size_t n, uint64_t at) = 0;
    // Reads up to n bytes at `at`; *got receives how many (fewer only at the end of the file).
    virtual int read_at(void *out, size_t n, uint64_t at, size_t *got) = 0;
    // The file's data on stable storage (fdatasync). A failed sync is never retried as if it had
    // worked: what it was to make durable may be lost (the "fsyncgate" rule).
    virtual int sync() = 0;
    virtual int size(uint64_t *out) = 0;
    virtual int truncate(uint64_t size) = 0;
    // Allocates room up to `size` bytes (posix_fallocate), so that later writes below it do not
    // fail for want of space: ENOSPC comes here, when a segment is made.
    virtual int reserve(uint64_t size) = 0;
    // A read-only view of the file's first len bytes that shows later writes (a shared
    // mapping); valid until the File goes (a later map() adds a view, it does not move this
    // one). len is at most the room reserve() made.
    virtual int map(size_t len, const unsigned char **out) = 0;
};

enum class OpenMode {
    existing,        // the file must exist (ENOENT otherwise)
    create_new,      // the file must not exist (EEXIST otherwise)
    create_or_open,  // either
};

// Held while it lives: what makes one process the owner of a data directory.
class FileLock {
public:
    virtual ~FileLock() = default;
};

class FileSystem {
public:
    virtual ~FileSystem() = default;
    virtual int open(const std::string &path, OpenMode mode, std::unique_ptr<File> *out) = 0;
    virtual int remove(const std::string &path) = 0;
    // Replaces `to` with `from` atomically (rename(2)).
    virtual int rename(const std::string &from, const std::string &to) = 0;
    // Makes the directory; an existing directory is no error.
    virtual int make_dir(const std::string &path) = 0;
    // The names in a directory, sorted, without "." and "..".
    virtual int list(const std::string &dir, std::vector<std::string> *names) = 0;
    // The directory's entries (files made, removed, renamed in it) on stable storage.
    virtual int sync_dir(const std::string &dir) = 0;
    // An exclusive lock on the file at path (made if missing), held as long as *out lives:
    // EWOULDBLOCK when another holder has it, in this process or another.
    virtual int lock(const std::string &path, std::unique_ptr<FileLock> *out) = 0;
};

// The operating system's files. One instance, shared; thread-safe.
FileSystem &posix_file_system();

// "write of /data/t/0/00000000000000000000.log failed: No space left on device (ENOSPC)".
std::string describe_io(const char *operation, const std::string &path, int err);

}  // namespace mq

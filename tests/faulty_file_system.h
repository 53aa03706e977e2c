// A file system in memory that simulates crashes and injects faults, for the tests of what
// sits on mq::FileSystem (src/util/file_system.h), after SQLite's test VFS and TigerBeetle's
// simulated storage:
//
// - crash(): what the machine would show after losing power. A file keeps what its last
//   successful sync() made durable; each write or truncation made since is, by the seed's
//   draw, lost, kept, or (a write) torn at a random byte. A directory keeps the entries its
//   last sync_dir() made durable: a file made or renamed since may vanish or come back.
// - fail_nth(op, n, err): the nth call of op from now fails with err (ENOSPC, EIO, ...);
//   a failed sync loses what was pending, as Linux may after an fsync error.
// - flip_bit(path, byte, bit): a bit rots, in what is durable and what is current.
//
// Thread-safe. Paths are plain strings: a file's directory is what precedes its last '/'.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/file_system.h"

namespace mqtest {

class FaultyFileSystem final : public mq::FileSystem {
public:
    enum class Op { open, write, sync, reserve, truncate, rename, remove, sync_dir };

    explicit FaultyFileSystem(uint64_t seed = 1) : rng_(seed) {}

    void fail_nth(Op op, int n, int err) {
        std::lock_guard l(mu_);
        faults_.push_back({op, n, err});
    }
    void flip_bit(const std::string &path, uint64_t byte, int bit) {
        std::lock_guard l(mu_);
        for (auto *ns : {&current_, &durable_}) {
            auto it = ns->find(path);
            if (it == ns->end()) continue;
            Data &d = *it->second;
            if (byte < d.size) d.buf[byte] ^= static_cast<unsigned char>(1u << bit);
            if (byte < d.durable.size()) d.durable[byte] ^= static_cast<unsigned char>(1u << bit);
        }
    }
    // Every File must be closed first (the process that had them is gone).
    void crash() {
        std::lock_guard l(mu_);
        if (open_files_) throw std::logic_error("crash() with files still open");
        std::set<Data *> done;
        for (auto &[path, d] : durable_) {
            if (done.insert(d.get()).second) settle(*d);
        }
        current_ = durable_;
        locks_.clear();
        lock_epoch_++;
    }
    // How often each operation ran (successfully or not).
    int count(Op op) const {
        std::lock_guard l(mu_);
        return counts_[static_cast<int>(op)];
    }
    bool exists(const std::string &path) const {
        std::lock_guard l(mu_);
        return current_.count(path) != 0;
    }

    int open(const std::string &path, mq::OpenMode mode, std::unique_ptr<mq::File> *out) override;
    int remove(const std::string &path) override {
        std::lock_guard l(mu_);
        if (int err = fault(Op::remove)) return err;
        return current_.erase(path) ? 0 : ENOENT;
    }
    int rename(const std::string &from, const std::string &to) override {
        std::lock_guard l(mu_);
        if (int err = fault(Op::rename)) return err;
        auto it = current_.find(from);
        if (it == current_.end()) return ENOENT;
        auto d = it->second;
        current_.erase(it);
        current_[to] = d;
        return 0;
    }
    int make_dir(const std::string &path) override {
        std::lock_guard l(mu_);
        dirs_.insert(path);  // directories themselves are durable at once
        return 0;
    }
    int list(const std::string &dir, std::vector<std::string> *names) override {
        std::lock_guard l(mu_);
        if (!dirs_.count(dir)) return ENOENT;
        names->clear();
        for (auto &[path, d] : current_) {
            if (parent(path) == dir) names->push_back(path.substr(dir.size() + 1));
        }
        for (const std::string &sub : dirs_) {
            if (parent(sub) == dir) names->push_back(sub.substr(dir.size() + 1));
        }
        std::sort(names->begin(), names->end());
        return 0;
    }
    int sync_dir(const std::string &dir) override {
        std::lock_guard l(mu_);
        if (int err = fault(Op::sync_dir)) return err;
        for (auto it = durable_.begin(); it != durable_.end();) {
            it = parent(it->first) == dir ? durable_.erase(it) : std::next(it);
        }
        for (auto &[path, d] : current_) {
            if (parent(path) == dir) durable_[path] = d;
        }
        return 0;
    }
    int lock(const std::string &path, std::unique_ptr<mq::FileLock> *out) override {
        std::lock_guard l(mu_);
        if (!locks_.insert(path).second) return EWOULDBLOCK;
        out->reset(new Lock(*this, path, lock_epoch_));
        return 0;
    }

private:
    struct Pending {
        bool truncate;
        uint64_t at;  // the write's offset, or the truncation's size
        std::vector<unsigned char> data;
    };
    struct Data {
        std::unique_ptr<unsigned char[]> buf;  // current content; stable while mapped
        uint64_t cap = 0;
        uint64_t size = 0;
        bool mapped = false;
        std::vector<unsigned char> durable;  // as the last sync left it
        std::vector<Pending> pending;        // since then, in order
    };
    class FaultyFile;
    class Lock final : public mq::FileLock {
    public:
        Lock(FaultyFileSystem &fs, std::string path, uint64_t epoch)
            : fs_(fs), path_(std::move(path)), epoch_(epoch) {}
        ~Lock() override {
            std::lock_guard l(fs_.mu_);
            if (fs_.lock_epoch_ == epoch_) fs_.locks_.erase(path_);
        }

    private:
        FaultyFileSystem &fs_;
        std::string path_;
        uint64_t epoch_;
    };
    struct Fault {
        Op op;
        int n;
        int err;
    };

    static std::string parent(const std::string &path) {
        const size_t slash = path.rfind('/');
        return slash == std::string::npos ? std::string() : path.substr(0, slash);
    }
    // Counts the call and returns the error it is to fail with, or 0.
    int fault(Op op) {
        counts_[static_cast<int>(op)]++;
        for (auto it = faults_.begin(); it != faults_.end(); ++it) {
            if (it->op == op && --it->n == 0) {
                const int err = it->err;
                faults_.erase(it);
                return err;
            }
        }
        return 0;
    }
    static void resize(Data &d, uint64_t size) {
        if (size > d.cap) {
            if (d.mapped) throw std::logic_error("a mapped file grew past its reserved room");
            uint64_t cap = d.cap ? d.cap : 4096;
            while (cap < size) cap *= 2;
            std::unique_ptr<unsigned char[]> bigger(new unsigned char[cap]());
            if (d.size) std::memcpy(bigger.get(), d.buf.get(), d.size);
            d.buf = std::move(bigger);
            d.cap = cap;
        }
        if (size > d.size) std::memset(d.buf.get() + d.size, 0, size - d.size);
        d.size = size;
    }
    // Applies a pending change to content c (a write's first n bytes).
    static void apply(std::vector<unsigned char> &c, const Pending &p, size_t n) {
        if (p.truncate) {
            c.resize(p.at);
            return;
        }
        if (c.size() < p.at + n) c.resize(p.at + n);
        if (n) std::memcpy(c.data() + p.at, p.data.data(), n);
    }
    // The content a crash leaves: durable, then each pending change by the draw.
    void settle(Data &d) {
        std::vector<unsigned char> c = d.durable;
        for (const Pending &p : d.pending) {
            const unsigned fate = rng_() % 3;  // 0 lost, 1 kept, 2 torn
            if (fate == 0) continue;
            size_t n = p.data.size();
            if (fate == 2 && n) n = rng_() % n;
            apply(c, p, n);
        }
        d.pending.clear();
        d.durable = c;
        d.mapped = false;
        d.size = 0;
        resize(d, c.size());
        if (!c.empty()) std::memcpy(d.buf.get(), c.data(), c.size());
    }

    mutable std::mutex mu_;
    std::mt19937_64 rng_;
    std::map<std::string, std::shared_ptr<Data>> current_, durable_;
    std::set<std::string> dirs_;
    std::set<std::string> locks_;
    uint64_t lock_epoch_ = 0;
    std::vector<Fault> faults_;
    int counts_[8] = {};
    int open_files_ = 0;
};

class FaultyFileSystem::FaultyFile final : public mq::File {
public:
    FaultyFile(FaultyFileSystem &fs, std::shared_ptr<Data> d) : fs_(fs), d_(std::move(d)) {}
    ~FaultyFile() override {
        std::lock_guard l(fs_.mu_);
        d_->mapped = false;
        fs_.open_files_--;
    }
    int write_at(const void *data, size_t n, uint64_t at) override {
        std::lock_guard l(fs_.mu_);
        if (int err = fs_.fault(Op::write)) return err;
        if (at + n > d_->size) resize(*d_, at + n);
        std::memcpy(d_->buf.get() + at, data, n);
        const auto *p = static_cast<const unsigned char *>(data);
        d_->pending.push_back({false, at, std::vector<unsigned char>(p, p + n)});
        return 0;
    }
    int read_at(void *out, size_t n, uint64_t at, size_t *got) override {
        std::lock_guard l(fs_.mu_);
        *got = at >= d_->size ? 0 : std::min<uint64_t>(n, d_->size - at);
        if (*got) std::memcpy(out, d_->buf.get() + at, *got);
        return 0;
    }
    int sync() override {
        std::lock_guard l(fs_.mu_);
        if (int err = fs_.fault(Op::sync)) {
            d_->pending.clear();  // what it was to make durable may be gone: see crash()
            return err;
        }
        // The pending changes, not the current content: writes a failed sync dropped stay
        // readable until a crash, but no later sync makes them durable (as on Linux, which
        // marks such pages clean).
        for (const Pending &p : d_->pending) apply(d_->durable, p, p.data.size());
        d_->pending.clear();
        return 0;
    }
    int size(uint64_t *out) override {
        std::lock_guard l(fs_.mu_);
        *out = d_->size;
        return 0;
    }
    int truncate(uint64_t size) override {
        std::lock_guard l(fs_.mu_);
        if (int err = fs_.fault(Op::truncate)) return err;
        resize(*d_, size);
        d_->pending.push_back({true, size, {}});
        return 0;
    }
    int reserve(uint64_t size) override {
        std::lock_guard l(fs_.mu_);
        if (int err = fs_.fault(Op::reserve)) return err;
        // Like posix_fallocate: the room is zeroed and the size grows to it (a change that, like
        // any other, is durable only after the next sync).
        if (size > d_->size) resize(*d_, size);
        return 0;
    }
    int map(size_t len, const unsigned char **out) override {
        std::lock_guard l(fs_.mu_);
        if (len > d_->cap) return EINVAL;
        d_->mapped = true;
        *out = d_->buf.get();
        return 0;
    }

private:
    FaultyFileSystem &fs_;
    std::shared_ptr<Data> d_;
};

inline int FaultyFileSystem::open(const std::string &path, mq::OpenMode mode,
                                  std::unique_ptr<mq::File> *out) {
    std::lock_guard l(mu_);
    if (int err = fault(Op::open)) return err;
    if (!dirs_.count(parent(path))) return ENOENT;
    auto it = current_.find(path);
    if (it == current_.end()) {
        if (mode == mq::OpenMode::existing) return ENOENT;
        it = current_.emplace(path, std::make_shared<Data>()).first;
    } else if (mode == mq::OpenMode::create_new) {
        return EEXIST;
    }
    out->reset(new FaultyFile(*this, it->second));
    open_files_++;
    return 0;
}

}  // namespace mqtest

// The storage primitives under durable topics: CRC-32C, the POSIX file system's operations and
// its words for failures, and the fault-injecting file system the durable log's tests run on
// (faulty_file_system.h): what a crash keeps and loses, injected errors, rotted bits.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <stdlib.h>
#include <unistd.h>

#include "faulty_file_system.h"
#include "util/crc32c.h"
#include "util/file_system.h"

namespace mq::detail {
uint32_t crc32c_portable(const void *data, size_t len, uint32_t crc) noexcept;
}

namespace {

using mq::OpenMode;
using mqtest::FaultyFileSystem;

// The check values of RFC 3720 (iSCSI), appendix B.4, and the common "123456789".
TEST(Crc32c, KnownValues) {
    EXPECT_EQ(mq::crc32c("123456789", 9), 0xE3069283u);
    std::vector<unsigned char> v(32, 0);
    EXPECT_EQ(mq::crc32c(v.data(), v.size()), 0x8A9136AAu);
    std::fill(v.begin(), v.end(), 0xFF);
    EXPECT_EQ(mq::crc32c(v.data(), v.size()), 0x62A8AB43u);
    for (size_t i = 0; i < 32; i++) v[i] = static_cast<unsigned char>(i);
    EXPECT_EQ(mq::crc32c(v.data(), v.size()), 0x46DD794Eu);
    EXPECT_EQ(mq::crc32c(nullptr, 0), 0u);
}

TEST(Crc32c, PiecesChainAndBothImplementationsAgree) {
    std::mt19937 rng(7);
    std::vector<unsigned char> v(1000);
    for (auto &c : v) c = static_cast<unsigned char>(rng());
    const uint32_t whole = mq::crc32c(v.data(), v.size());
    for (size_t cut : {0u, 1u, 7u, 8u, 9u, 500u, 999u, 1000u}) {
        EXPECT_EQ(mq::crc32c(v.data() + cut, v.size() - cut, mq::crc32c(v.data(), cut)), whole)
            << cut;
    }
    for (size_t n : {0u, 1u, 3u, 8u, 15u, 64u, 1000u}) {
        EXPECT_EQ(mq::crc32c(v.data(), n), mq::detail::crc32c_portable(v.data(), n, 0)) << n;
    }
    v[500] ^= 1;
    EXPECT_NE(mq::crc32c(v.data(), v.size()), whole);
}

struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/mq_fs_test_XXXXXX";
        path = mkdtemp(tmpl);
    }
    ~TempDir() {
        std::vector<std::string> names;
        mq::posix_file_system().list(path, &names);
        for (auto &n : names) unlink((path + "/" + n).c_str());
        rmdir(path.c_str());
    }
};

TEST(PosixFileSystem, WritesReadsMapsAndLists) {
    TempDir dir;
    mq::FileSystem &fs = mq::posix_file_system();
    const std::string path = dir.path + "/a.log";
    std::unique_ptr<mq::File> f;
    ASSERT_EQ(fs.open(path, OpenMode::existing, &f), ENOENT);
    ASSERT_EQ(fs.open(path, OpenMode::create_new, &f), 0);
    ASSERT_EQ(f->reserve(8192), 0);
    uint64_t size = 0;
    ASSERT_EQ(f->size(&size), 0);
    EXPECT_EQ(size, 8192u);
    const unsigned char *map = nullptr, *second = nullptr;
    ASSERT_EQ(f->map(8192, &map), 0);
    ASSERT_EQ(f->write_at("hello", 5, 100), 0);
    EXPECT_EQ(std::memcmp(map + 100, "hello", 5), 0);  // the mapping shows the write
    ASSERT_EQ(f->map(4096, &second), 0);
    EXPECT_EQ(std::memcmp(map + 100, second + 100, 5), 0);  // the first mapping stays
    ASSERT_EQ(f->sync(), 0);
    char buf[8] = {};
    size_t got = 0;
    ASSERT_EQ(f->read_at(buf, 8, 8190, &got), 0);
    EXPECT_EQ(got, 2u);  // the end of the file
    ASSERT_EQ(f->truncate(105), 0);
    f.reset();
    std::unique_ptr<mq::File> again;
    EXPECT_EQ(fs.open(path, OpenMode::create_new, &again), EEXIST);
    ASSERT_EQ(fs.open(path, OpenMode::existing, &again), 0);
    ASSERT_EQ(again->read_at(buf, 5, 100, &got), 0);
    EXPECT_EQ(std::string(buf, got), "hello");
    again.reset();
    ASSERT_EQ(fs.rename(path, dir.path + "/b.log"), 0);
    ASSERT_EQ(fs.sync_dir(dir.path), 0);
    std::unique_ptr<mq::File> c;
    ASSERT_EQ(fs.open(dir.path + "/c.log", OpenMode::create_or_open, &c), 0);
    std::vector<std::string> names;
    ASSERT_EQ(fs.list(dir.path, &names), 0);
    EXPECT_EQ(names, (std::vector<std::string>{"b.log", "c.log"}));
    ASSERT_EQ(fs.make_dir(dir.path), 0);  // an existing directory is fine
    EXPECT_EQ(fs.make_dir(dir.path + "/b.log"), ENOTDIR);
    EXPECT_EQ(fs.remove(dir.path + "/missing"), ENOENT);
    EXPECT_EQ(fs.list(dir.path + "/missing", &names), ENOENT);
}

TEST(PosixFileSystem, OneLockHolderEvenWithinAProcess) {
    TempDir dir;
    mq::FileSystem &fs = mq::posix_file_system();
    std::unique_ptr<mq::FileLock> first, second;
    ASSERT_EQ(fs.lock(dir.path + "/LOCK", &first), 0);
    EXPECT_EQ(fs.lock(dir.path + "/LOCK", &second), EWOULDBLOCK);
    first.reset();
    EXPECT_EQ(fs.lock(dir.path + "/LOCK", &second), 0);
}

TEST(PosixFileSystem, FailuresNameTheOperationThePathAndTheError) {
    EXPECT_EQ(mq::describe_io("write", "/d/0.log", ENOSPC),
              "write of /d/0.log failed: No space left on device (ENOSPC)");
    EXPECT_EQ(mq::describe_io("fsync", "/d/0.log", EIO),
              "fsync of /d/0.log failed: Input/output error (EIO)");
    const std::string odd = mq::describe_io("open", "/x", 12345);
    EXPECT_EQ(odd.rfind("open of /x failed: ", 0), 0u) << odd;
}

std::string content(FaultyFileSystem &fs, const std::string &path) {
    std::unique_ptr<mq::File> f;
    if (fs.open(path, OpenMode::existing, &f) != 0) return "<missing>";
    uint64_t size = 0;
    f->size(&size);
    std::string s(size, '\0');
    size_t got = 0;
    f->read_at(s.data(), s.size(), 0, &got);
    s.resize(got);
    return s;
}

TEST(FaultyFileSystem, ACrashKeepsWhatWasSyncedAndDrawsTheRest) {
    // Over many seeds: the synced prefix always survives; an unsynced write is sometimes lost,
    // sometimes kept, sometimes torn, and never anything else.
    int lost = 0, kept = 0, torn = 0;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        FaultyFileSystem fs(seed);
        fs.make_dir("/d");
        std::unique_ptr<mq::File> f;
        ASSERT_EQ(fs.open("/d/x", OpenMode::create_new, &f), 0);
        ASSERT_EQ(f->write_at("synced.", 7, 0), 0);
        ASSERT_EQ(f->sync(), 0);
        ASSERT_EQ(fs.sync_dir("/d"), 0);
        ASSERT_EQ(f->write_at("unsynced", 8, 7), 0);
        f.reset();
        fs.crash();
        const std::string c = content(fs, "/d/x");
        ASSERT_EQ(c.rfind("synced.", 0), 0u) << c;
        const std::string tail = c.substr(7);
        ASSERT_EQ(std::string("unsynced").rfind(tail, 0), 0u) << tail;  // a prefix of it
        if (tail.empty()) {
            lost++;
        } else if (tail == "unsynced") {
            kept++;
        } else {
            torn++;
        }
    }
    EXPECT_GT(lost, 0);
    EXPECT_GT(kept, 0);
    EXPECT_GT(torn, 0);
}

TEST(FaultyFileSystem, EntriesNeedTheirDirectorySynced) {
    FaultyFileSystem fs;
    fs.make_dir("/d");
    std::unique_ptr<mq::File> f;
    ASSERT_EQ(fs.open("/d/kept", OpenMode::create_new, &f), 0);
    ASSERT_EQ(f->sync(), 0);
    f.reset();
    ASSERT_EQ(fs.sync_dir("/d"), 0);
    ASSERT_EQ(fs.open("/d/new", OpenMode::create_new, &f), 0);
    ASSERT_EQ(f->sync(), 0);  // its data, not its name
    f.reset();
    ASSERT_EQ(fs.rename("/d/kept", "/d/renamed"), 0);
    fs.crash();
    EXPECT_TRUE(fs.exists("/d/kept"));
    EXPECT_FALSE(fs.exists("/d/renamed"));
    EXPECT_FALSE(fs.exists("/d/new"));
}

TEST(FaultyFileSystem, InjectedErrorsAndAFailedSyncLosesItsWrites) {
    FaultyFileSystem fs(3);
    fs.make_dir("/d");
    std::unique_ptr<mq::File> f;
    ASSERT_EQ(fs.open("/d/x", OpenMode::create_new, &f), 0);
    fs.sync_dir("/d");
    fs.fail_nth(FaultyFileSystem::Op::write, 2, ENOSPC);
    fs.fail_nth(FaultyFileSystem::Op::sync, 1, EIO);
    EXPECT_EQ(f->write_at("a", 1, 0), 0);
    EXPECT_EQ(f->write_at("b", 1, 1), ENOSPC);
    EXPECT_EQ(f->write_at("c", 1, 1), 0);
    EXPECT_EQ(f->sync(), EIO);
    EXPECT_EQ(f->sync(), 0);  // a retry "succeeds", with nothing left to make durable
    EXPECT_EQ(fs.count(FaultyFileSystem::Op::write), 3);
    f.reset();
    fs.crash();
    EXPECT_EQ(content(fs, "/d/x"), "");  // the writes of the failed sync are gone
}

TEST(FaultyFileSystem, BitsRotAndLocksAreExclusive) {
    FaultyFileSystem fs;
    fs.make_dir("/d");
    std::unique_ptr<mq::File> f;
    ASSERT_EQ(fs.open("/d/x", OpenMode::create_new, &f), 0);
    ASSERT_EQ(f->write_at("abc", 3, 0), 0);
    ASSERT_EQ(f->sync(), 0);
    f.reset();
    fs.flip_bit("/d/x", 1, 0);
    EXPECT_EQ(content(fs, "/d/x"), "acc");
    fs.make_dir("/d/sub");
    std::vector<std::string> names;
    ASSERT_EQ(fs.list("/d", &names), 0);
    EXPECT_EQ(names, (std::vector<std::string>{"sub", "x"}));
    std::unique_ptr<mq::FileLock> a, b;
    ASSERT_EQ(fs.lock("/d/LOCK", &a), 0);
    EXPECT_EQ(fs.lock("/d/LOCK", &b), EWOULDBLOCK);
    a.reset();
    EXPECT_EQ(fs.lock("/d/LOCK", &b), 0);
}

TEST(FaultyFileSystem, AMappingFollowsWritesWithinTheReservedRoom) {
    FaultyFileSystem fs;
    fs.make_dir("/d");
    std::unique_ptr<mq::File> f;
    ASSERT_EQ(fs.open("/d/x", OpenMode::create_new, &f), 0);
    ASSERT_EQ(f->reserve(1 << 16), 0);
    const unsigned char *map = nullptr;
    ASSERT_EQ(f->map(1 << 16, &map), 0);
    ASSERT_EQ(f->write_at("xyz", 3, 4000), 0);
    EXPECT_EQ(std::memcmp(map + 4000, "xyz", 3), 0);
    EXPECT_EQ(f->map((1 << 16) + 1, &map), EINVAL);
    EXPECT_THROW(f->write_at("!", 1, 1 << 20), std::logic_error);
    f.reset();
    EXPECT_THROW(
        {
            std::unique_ptr<mq::File> open;
            fs.open("/d/x", OpenMode::existing, &open);
            fs.crash();
        },
        std::logic_error);
}

}  // namespace

// Runs the fuzz target once on each file named on the command line (or each file of each
// directory named), without libFuzzer: lets every build, gcc included, replay the checked-in
// corpus and the regression inputs against the model.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {
int run_file(const std::filesystem::path &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        std::fprintf(stderr, "cannot read %s\n", path.c_str());
        return 1;
    }
    std::vector<uint8_t> data((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(data.data(), data.size());
    return 0;
}
}  // namespace

int main(int argc, char **argv) {
    size_t files = 0;
    for (int i = 1; i < argc; i++) {
        const std::filesystem::path arg(argv[i]);
        if (std::filesystem::is_directory(arg)) {
            for (const auto &e : std::filesystem::directory_iterator(arg)) {
                if (!e.is_regular_file()) continue;
                if (run_file(e.path()) != 0) return 1;
                files++;
            }
        } else {
            if (run_file(arg) != 0) return 1;
            files++;
        }
    }
    // An empty corpus would make this test pass while checking nothing.
    if (files == 0) {
        std::fprintf(stderr, "no inputs found\n");
        return 1;
    }
    std::printf("replayed %zu inputs against the model\n", files);
    return 0;
}

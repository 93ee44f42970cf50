// The corpus as a regression test: runs LLVMFuzzerTestOneInput once on every
// file of the folders (or files) named on the command line, as libFuzzer
// does when given files, so that each seed and each crash ever found runs in
// the unit suite of the normal build.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_target.h"

namespace {

std::vector<std::string> inputs_of(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return {};
  if (!S_ISDIR(st.st_mode)) return {path};
  std::vector<std::string> files;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') files.push_back(path + "/" + e->d_name);
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  size_t ran = 0;
  for (int i = 1; i < argc; ++i) {
    const std::vector<std::string> files = inputs_of(argv[i]);
    if (files.empty()) {
      std::fprintf(stderr,
                   "%s: expected a corpus folder or file, found nothing at %s (the corpus is "
                   "committed under tests/fuzz/corpus/)\n",
                   argv[0], argv[i]);
      return 1;
    }
    for (const std::string& f : files) {
      std::ifstream in(f, std::ios::binary);
      const std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                    std::istreambuf_iterator<char>()};
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++ran;
    }
  }
  if (ran == 0) {
    std::fprintf(stderr, "%s: expected corpus folders as arguments, got none\n", argv[0]);
    return 1;
  }
  std::printf("%zu inputs ran without a finding\n", ran);
  return 0;
}

#include "test_support.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "generator.h"

namespace fs = std::filesystem;

namespace stalldx::testing {

std::string temp_dir(const std::string& tag) {
  static int counter = 0;
  const fs::path p = fs::temp_directory_path() / fmt::format("stalldx-test-{}-{}-{}", tag, getpid(), counter++);
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

const std::string& small_dataset() {
  static const std::string root = [] {
    const std::string dir = temp_dir("dataset");
    datasets::GeneratorOptions o;
    o.root = dir;
    o.classes = 4;
    o.images_per_class = 24;
    o.seed = 7;
    datasets::GeneratorReport rep;
    const Status st = datasets::generate_dataset(o, rep);
    if (!st.is_ok()) ADD_FAILURE() << st.message();
    return dir;
  }();
  return root;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

}  // namespace stalldx::testing

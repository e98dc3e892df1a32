#include "test_support.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>


namespace fs = std::filesystem;

namespace stalldx::testing {

std::string temp_dir(const std::string& tag) {
  static int counter = 0;
  const fs::path p = fs::temp_directory_path() / fmt::format("stalldx-test-{}-{}-{}", tag, getpid(), counter++);
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
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

// Test helpers: a small generated dataset shared by the tests of one process, temp folders.
#pragma once

#include <string>

namespace stalldx::testing {

// A generated Food-101-like dataset (4 classes x 24 images, seed 7), made once per test process.
const std::string& small_dataset();
// A fresh empty directory under the system temp dir.
std::string temp_dir(const std::string& tag);
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

}  // namespace stalldx::testing

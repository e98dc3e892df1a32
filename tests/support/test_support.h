// Test helpers: temp folders, whole-file read/write. No stalldx dependency beyond the trace library, so
// the diagnose-only build has them too (the generated dataset lives in test_dataset.h).
#pragma once

#include <string>

namespace stalldx::testing {

// A fresh empty directory under the system temp dir.
std::string temp_dir(const std::string& tag);
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

}  // namespace stalldx::testing

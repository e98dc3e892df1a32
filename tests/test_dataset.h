// The small generated dataset the pipeline and CLI tests share.
#pragma once

#include <string>

#include "test_support.h"

namespace stalldx::testing {

// A generated Food-101-like dataset (4 classes x 24 images, seed 7), made once per test process.
const std::string& small_dataset();

}  // namespace stalldx::testing

#include "test_dataset.h"

#include <gtest/gtest.h>

#include "stalldx/datasets/generator.h"

namespace stalldx::testing {

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

}  // namespace stalldx::testing

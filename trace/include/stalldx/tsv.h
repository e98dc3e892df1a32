// Rows of a tab-separated text file (the scenario list, a dataset's manifest): blank lines and lines
// starting with '#' are skipped, a row's fields are split at tabs, a trailing '\r' (a file saved on
// Windows) is dropped. Fields beyond those a reader wants are its to ignore.
#pragma once

#include <cstddef>
#include <istream>
#include <string>
#include <vector>

namespace stalldx {

class TsvRows {
 public:
  explicit TsvRows(std::istream& in) : in_(in) {}
  // The next row into `fields`; false at the end of the text. `lineno()` is then the row's line (1-based).
  bool next(std::vector<std::string>& fields);
  std::size_t lineno() const { return lineno_; }

 private:
  std::istream& in_;
  std::string line_;
  std::size_t lineno_ = 0;
};

}  // namespace stalldx

#include "stalldx/tsv.h"

namespace stalldx {

bool TsvRows::next(std::vector<std::string>& fields) {
  while (std::getline(in_, line_)) {
    ++lineno_;
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    if (line_.empty() || line_[0] == '#') continue;
    fields.clear();
    for (std::size_t b = 0;;) {
      const std::size_t tab = line_.find('\t', b);
      fields.push_back(line_.substr(b, tab == std::string::npos ? std::string::npos : tab - b));
      if (tab == std::string::npos) break;
      b = tab + 1;
    }
    return true;
  }
  return false;
}

}  // namespace stalldx

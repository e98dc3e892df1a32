// Internal: a JSON array read in runs of whole elements (both trace readers use it). A writer that puts a
// fixed separator between the elements of a large array (stalldx's `,\n`, Kineto's `\n  },\n`) lets the
// array be parsed ~1 MB at a time by one reused simdjson parser: memory stays the text plus a few MB and
// the parser's buffers stay in cache, where one whole-document DOM would touch about twice the text
// again in fresh pages.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace stalldx {

class JsonRuns {
 public:
  static constexpr std::size_t kRunBytes = 1u << 20;

  JsonRuns() { buf_.reserve(2 * kRunBytes + simdjson::SIMDJSON_PADDING); }

  // Parses open + body + close (the pieces of one JSON document) in the reused, padded buffer; `out` stays
  // valid until the next call.
  bool parse(std::string_view open, std::string_view body, std::string_view close, simdjson::dom::element& out) {
    buf_.assign(open);
    buf_.append(body);
    buf_.append(close);
    return parser_.parse(buf_).get(out) == simdjson::SUCCESS;  // the capacity holds the padding: parsed in place
  }

  // Calls fn(element) for each element of `elements` — the text between an array's brackets — cutting it
  // into runs at occurrences of `separator`, of which the first `keep` characters end the element before
  // it. The writer must guarantee the separator occurs only between elements (its strings escape their
  // newlines). False when a run does not parse (what fn saw before is then not to be trusted).
  template <class Fn>
  bool for_each(std::string_view elements, std::string_view separator, std::size_t keep, Fn&& fn) {
    for (std::size_t pos = 0; pos < elements.size();) {
      std::size_t end = elements.size(), next = elements.size();
      if (pos + kRunBytes < elements.size()) {
        const std::size_t b = elements.find(separator, pos + kRunBytes);
        if (b != std::string_view::npos) {
          end = b + keep;
          next = b + separator.size();
        }
      }
      simdjson::dom::element run;
      simdjson::dom::array arr;
      if (!parse("[", elements.substr(pos, end - pos), "]", run) || run.get_array().get(arr) != simdjson::SUCCESS) return false;
      for (simdjson::dom::element e : arr) fn(e);
      ++runs_;
      pos = next;
    }
    return true;
  }

  std::uint64_t runs() const { return runs_; }

 private:
  simdjson::dom::parser parser_;
  std::string buf_;
  std::uint64_t runs_ = 0;
};

}  // namespace stalldx

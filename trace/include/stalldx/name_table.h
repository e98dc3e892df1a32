// NameTable: the one string interner of stalldx. Strings get dense ids 0..size()-1 in first-seen order;
// an id is stable for the table's lifetime. Lookup by string is O(1) on average (hash index).
// Not thread-safe: a caller that shares a table across threads guards it (the profiler's registry does).
//
//   NameTable t;
//   std::uint32_t id = t.intern("decode");   // same id for the same string, forever
//   const std::string& s = t[id];            // "?" for an id never handed out
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace stalldx {

// Hashes std::string keys and looks them up by std::string_view (no string built to look one up).
struct TextHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using TextMap = std::unordered_map<std::string, V, TextHash, std::equal_to<>>;

class NameTable {
 public:
  NameTable() = default;
  NameTable(std::initializer_list<std::string> names);
  // The id of `name`, adding it when new.
  std::uint32_t intern(std::string_view name);
  // The id of `name` when present (nothing added).
  std::optional<std::uint32_t> find(std::string_view name) const;
  // Appends `name` as the next id even when it is already present (readers that must keep a file's own
  // numbering); lookups by string then return the first id.
  std::uint32_t append(std::string name);
  const std::string& operator[](std::uint32_t id) const;
  std::size_t size() const { return names_.size(); }
  bool empty() const { return names_.empty(); }
  const std::vector<std::string>& strings() const { return names_; }
  auto begin() const { return names_.begin(); }
  auto end() const { return names_.end(); }
  bool operator==(const NameTable& other) const { return names_ == other.names_; }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::uint32_t, TextHash, std::equal_to<>> index_;
};

}  // namespace stalldx

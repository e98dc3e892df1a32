#include "stalldx/name_table.h"

namespace stalldx {

NameTable::NameTable(std::initializer_list<std::string> names) {
  for (const std::string& n : names) intern(n);
}

std::uint32_t NameTable::intern(std::string_view name) {
  if (auto it = index_.find(name); it != index_.end()) return it->second;
  return append(std::string(name));
}

std::optional<std::uint32_t> NameTable::find(std::string_view name) const {
  if (auto it = index_.find(name); it != index_.end()) return it->second;
  return std::nullopt;
}

std::uint32_t NameTable::append(std::string name) {
  const auto id = static_cast<std::uint32_t>(names_.size());
  index_.emplace(name, id);  // keeps the first id of a duplicate
  names_.push_back(std::move(name));
  return id;
}

const std::string& NameTable::operator[](std::uint32_t id) const {
  static const std::string kUnknown = "?";
  return id < names_.size() ? names_[id] : kUnknown;
}

}  // namespace stalldx

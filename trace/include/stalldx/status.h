// Status: the error type of everything that touches files, devices or user input (leveldb style).
// The OK path carries no allocation.
#pragma once

#include <string>
#include <utility>

namespace stalldx {

class Status {
 public:
  enum class Code { ok, invalid_argument, io_error, parse_error, unavailable, internal };
  Status() = default;
  static Status ok() { return {}; }
  static Status invalid(std::string msg) { return {Code::invalid_argument, std::move(msg)}; }
  static Status io(std::string msg) { return {Code::io_error, std::move(msg)}; }
  static Status parse(std::string msg) { return {Code::parse_error, std::move(msg)}; }
  static Status unavailable(std::string msg) { return {Code::unavailable, std::move(msg)}; }
  static Status internal(std::string msg) { return {Code::internal, std::move(msg)}; }

  bool is_ok() const { return code_ == Code::ok; }
  explicit operator bool() const { return is_ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return msg_; }
  // The same error, its message prefixed ("file.json: ..."); OK stays OK.
  Status prefixed(const std::string& prefix) const { return is_ok() ? Status{} : Status{code_, prefix + ": " + msg_}; }

 private:
  Status(Code c, std::string m) : code_(c), msg_(std::move(m)) {}
  Code code_ = Code::ok;
  std::string msg_;
};

}  // namespace stalldx

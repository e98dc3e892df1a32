// Untrusted input files: decompression is bounded (a small .json.gz must not expand without limit),
// non-regular files are refused, text written out is valid UTF-8 and terminal-safe.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <string>

#include "stalldx/text.h"
#include "stalldx/trace_io.h"
#include "test_support.h"

namespace stalldx {
namespace {

// `mb` MB of spaces, gzip-compressed (a few hundred KB on disk).
std::string gzip_bomb(const std::string& dir, int mb) {
  const std::string path = dir + "/bomb.json.gz";
  gzFile f = gzopen(path.c_str(), "wb1");
  const std::string block(1 << 20, ' ');
  for (int i = 0; i < mb; ++i) gzwrite(f, block.data(), static_cast<unsigned>(block.size()));
  gzclose(f);
  return path;
}

TEST(InputLimits, ADecompressionBombIsRefusedNamingTheBoundAndHowToRaiseIt) {
  const std::string dir = testing::temp_dir("bomb");
  const std::string path = gzip_bomb(dir, 80);
  std::string text;
  const Status st = read_text_file(path, text);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("STALLDX_MAX_INPUT_MB"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("bomb.json.gz"), std::string::npos) << st.message();
  Trace t;
  EXPECT_FALSE(read_trace_file(path, t).is_ok());
  // The user's bound replaces the ratio: the same file reads whole under 200 MB.
  ::setenv(kMaxInputEnv, "200", 1);
  EXPECT_TRUE(read_text_file(path, text).is_ok());
  EXPECT_EQ(text.size(), std::size_t{80} << 20);
  ::setenv(kMaxInputEnv, "50", 1);
  EXPECT_FALSE(read_text_file(path, text).is_ok());
  ::unsetenv(kMaxInputEnv);
}

TEST(InputLimits, AFolderIsRefusedAsAFile) {
  std::string text;
  const Status st = read_text_file(testing::temp_dir("folder"), text);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("folder"), std::string::npos) << st.message();
}

TEST(Text, InvalidUtf8IsReplacedAndCountedControlCharactersEscaped) {
  std::size_t replaced = 0;
  EXPECT_EQ(to_valid_utf8("caf\xC3\xA9", &replaced), "caf\xC3\xA9");
  EXPECT_EQ(replaced, 0u);
  EXPECT_EQ(to_valid_utf8("a\xFF\xFE" "b", &replaced), "a\xEF\xBF\xBD\xEF\xBF\xBD" "b");
  EXPECT_EQ(replaced, 2u);
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // a surrogate
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));          // cut short
  EXPECT_TRUE(is_valid_utf8("\xF0\x9F\x98\x80"));   // U+1F600
  EXPECT_EQ(terminal_safe("red \x1b[31m!\a\nnext\tcol"), "red \\x1b[31m!\\x07\nnext\tcol");
}

}  // namespace
}  // namespace stalldx

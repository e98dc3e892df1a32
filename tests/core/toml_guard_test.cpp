// toml++ 3.3 reaches __builtin_unreachable() on some code points where whitespace may stand
// (roles_fuzz found U+FEFD after a key): the guard escapes them in basic strings, blanks them in
// comments, refuses them elsewhere with FILE:LINE. Under the sanitizer build the unguarded text was
// "execution reached an unreachable program point".
#include <gtest/gtest.h>

#include "stalldx/record/role_map.h"
#include "stalldx/toml_guard.h"

namespace stalldx {
namespace {

TEST(TomlGuard, EscapesInBasicStringsBlanksCommentsRefusesElsewhere) {
  std::string out;
  ASSERT_TRUE(guard_toml_text("a = \"caf\xC3\xA9\" # \xC2\xA7 note\nb = 'plain \xE4\xB8\xAD'\n", "x.toml", out).is_ok());
  EXPECT_EQ(out, "a = \"caf\\u00E9\" # ? note\nb = 'plain \xE4\xB8\xAD'\n");  // U+4E2D is outside the blocks: kept
  ASSERT_TRUE(guard_toml_text("s = \"\"\"\\\n\xC2\xA7\"\"\"\n", "x.toml", out).is_ok());  // toml++ #190's own case
  EXPECT_EQ(out, "s = \"\"\"\\\n\\u00A7\"\"\"\n");
  const Status bare = guard_toml_text("[[role]]\nmatch =\xEF\xBB\xBD\"a\"\n", "roles.toml", out);
  ASSERT_FALSE(bare.is_ok());
  EXPECT_NE(bare.message().find("roles.toml:2"), std::string::npos) << bare.message();
  EXPECT_NE(bare.message().find("U+FEFD"), std::string::npos) << bare.message();
  EXPECT_FALSE(guard_toml_text("k = 'x\xC2\xA7'\n", "x.toml", out).is_ok()) << "a literal string cannot hold an escape";
  EXPECT_TRUE(guard_toml_text("k = \"\\\"\xC2\xA7\"\n", "x.toml", out).is_ok()) << "an escaped quote does not end the string";
  EXPECT_EQ(out, "k = \"\\\"\\u00A7\"\n");
}

TEST(TomlGuard, TheFuzzersRolesFileIsAnErrorNotUndefinedBehaviour) {
  record::RoleMap m;
  const Status st = record::RoleMap::parse(std::string("\xEF\xBB\xBDole]]\nmatch =a"), "fuzz.toml", m);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("fuzz.toml:1"), std::string::npos) << st.message();
  // The same letters in a regex, where they belong, still work.
  ASSERT_TRUE(record::RoleMap::parse("[[role]]\nmatch = \"d\xC3\xA9\x63odage\"\nrole = \"decode\"\n", "fr.toml", m).is_ok());
  EXPECT_EQ(m.match("d\xC3\xA9\x63odage", ""), Role::decode);
}

}  // namespace
}  // namespace stalldx

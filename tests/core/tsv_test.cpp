// TsvRows: the one reader of tab-separated lists (scenarios, dataset manifests).
#include <gtest/gtest.h>

#include <sstream>

#include "stalldx/tsv.h"

namespace stalldx {
namespace {

TEST(TsvRows, SkipsCommentsAndBlankLinesSplitsAtTabsAndDropsAWindowsLineEnd) {
  std::istringstream in("# path\tlabel\n\na/b.jpg\t3\r\nc.jpg\n\t\tx\n# end");
  TsvRows rows(in);
  std::vector<std::string> f;
  ASSERT_TRUE(rows.next(f));
  EXPECT_EQ(rows.lineno(), 3u);
  EXPECT_EQ(f, (std::vector<std::string>{"a/b.jpg", "3"}));
  ASSERT_TRUE(rows.next(f));
  EXPECT_EQ(rows.lineno(), 4u);
  EXPECT_EQ(f, (std::vector<std::string>{"c.jpg"}));
  ASSERT_TRUE(rows.next(f));
  EXPECT_EQ(f, (std::vector<std::string>{"", "", "x"}));  // empty fields kept: the reader says which it needs
  EXPECT_FALSE(rows.next(f));
}

}  // namespace
}  // namespace stalldx

#include "path_list.h"

#include <gtest/gtest.h>

namespace tandem::plugin {
namespace {

TEST(PathList, PrependsToEmptyAndKeepsUserEntries) {
  EXPECT_EQ(prepend_unique("/e.so", ""), "/e.so");
  EXPECT_EQ(prepend_unique("/e.so", "/a.so:/b.so"), "/e.so:/a.so:/b.so");
}

TEST(PathList, NeverDuplicates) {
  EXPECT_EQ(prepend_unique("/e.so", "/a.so:/e.so:/b.so"), "/e.so:/a.so:/b.so");
  EXPECT_EQ(prepend_unique("/e.so", "/e.so"), "/e.so");
  EXPECT_EQ(prepend_unique("/e.so", "/a.so:/a.so"), "/e.so:/a.so");
  // applying twice is the same as once
  const std::string once = prepend_unique("/e.so", "/a.so");
  EXPECT_EQ(prepend_unique("/e.so", once), once);
}

TEST(PathList, SplitsOnEverySeparatorGiven) {
  EXPECT_EQ(prepend_unique("/e.so", "/a.so /e.so:/b.so", ": "), "/e.so:/a.so:/b.so");
  EXPECT_EQ(prepend_unique("/p", "/a b:/c"), "/p:/a b:/c");  // PYTHONPATH: ':' only
}

TEST(PathList, DropsEmptyEntries) { EXPECT_EQ(prepend_unique("/p", "::/a::"), "/p:/a"); }

}  // namespace
}  // namespace tandem::plugin

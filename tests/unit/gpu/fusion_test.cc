#include <gtest/gtest.h>

#include "gpu/fusion_buffer.h"

namespace tandem {
namespace gpu {
namespace {

TEST(Fusion, OffsetsPackBackToBack) {
  size_t total = 1;
  EXPECT_TRUE(fusion_offsets({}, &total).empty());
  EXPECT_EQ(total, 0u);
  EXPECT_EQ(fusion_offsets({12, 0, 4, 8}, &total), (std::vector<size_t>{0, 12, 12, 16}));
  EXPECT_EQ(total, 24u);
}

}  // namespace
}  // namespace gpu
}  // namespace tandem

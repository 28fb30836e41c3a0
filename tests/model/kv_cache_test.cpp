#include "model/kv_cache.h"

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace glass {
namespace {

TEST(KVCache, AllocatesBlocksAndFreesThem) {
  const ModelConfig c = test::tiny_config();
  KVCache cache(c, KVType::BF16, 64, 16);
  EXPECT_EQ(cache.total_blocks(), 4);
  EXPECT_EQ(cache.bytes_per_token(), static_cast<size_t>(c.kv_bytes_per_token(2)));
  const int32_t a = cache.add_sequence();
  const int32_t b = cache.add_sequence();
  EXPECT_NE(a, b);
  ASSERT_TRUE(cache.reserve(a, 17));
  EXPECT_EQ(cache.block_table(a).size(), 2u);
  EXPECT_EQ(cache.free_blocks(), 2);
  ASSERT_TRUE(cache.reserve(b, 32));
  EXPECT_EQ(cache.free_blocks(), 0);
  EXPECT_FALSE(cache.reserve(a, 33));  // pool exhausted: nothing allocated
  EXPECT_EQ(cache.block_table(a).size(), 2u);
  cache.remove_sequence(b);
  EXPECT_EQ(cache.free_blocks(), 2);
  EXPECT_TRUE(cache.reserve(a, 64));
  const int32_t c2 = cache.add_sequence();
  EXPECT_EQ(c2, b);  // the freed slot is reused
}

// The arena is reserved; its memory is the blocks ever taken (a freed block taken again
// costs nothing more).
TEST(KVCache, CommittedBytesAreTheBlocksEverTaken) {
  KVCache cache(test::tiny_config(), KVType::BF16, 64, 16);
  EXPECT_EQ(cache.committed_bytes(), 0u);
  const int32_t a = cache.add_sequence();
  ASSERT_TRUE(cache.reserve(a, 17));
  EXPECT_EQ(cache.committed_bytes(), 2 * cache.block_stride());
  cache.remove_sequence(a);
  const int32_t b = cache.add_sequence();
  ASSERT_TRUE(cache.reserve(b, 20));
  EXPECT_EQ(cache.committed_bytes(), 2 * cache.block_stride());
  ASSERT_TRUE(cache.reserve(b, 40));
  EXPECT_EQ(cache.committed_bytes(), 3 * cache.block_stride());
}

TEST(KVCache, SlotsOfDifferentLayersAndPositionsAreDistinct) {
  const ModelConfig c = test::tiny_config();
  KVCache cache(c, KVType::F32, 32, 4);
  const int32_t s = cache.add_sequence();
  ASSERT_TRUE(cache.reserve(s, 8));
  std::byte* k00 = cache.slot(0, 0, s, 0);
  EXPECT_EQ(cache.slot(0, 0, s, 1) - k00, static_cast<ptrdiff_t>(c.kv_dim() * 4));
  EXPECT_NE(cache.slot(0, 1, s, 0), k00);
  EXPECT_NE(cache.slot(1, 0, s, 0), k00);
  // Position 4 lives in the second block of the table.
  const auto& table = cache.block_table(s);
  EXPECT_EQ(cache.slot(0, 0, s, 4), cache.layer_base(0, 0) + table[1] * cache.block_stride());
}

TEST(KVCache, TruncateReturnsTrailingBlocks) {
  KVCache cache(test::tiny_config(), KVType::F32, 64, 16);
  const int32_t s = cache.add_sequence();
  ASSERT_TRUE(cache.reserve(s, 40));
  cache.mark_written(s, 39);
  EXPECT_EQ(cache.length(s), 40);
  cache.truncate(s, 10);
  EXPECT_EQ(cache.length(s), 10);
  EXPECT_EQ(cache.block_table(s).size(), 1u);
  EXPECT_EQ(cache.free_blocks(), 3);
}

TEST(KVCache, UnknownSequenceIsAnError) {
  KVCache cache(test::tiny_config(), KVType::F32, 16);
  const std::string e = test::thrown_error([&] { cache.length(3); });
  EXPECT_NE(e.find("no live sequence 3"), std::string::npos) << e;
}

}  // namespace
}  // namespace glass

// The prefix cache of the paged KV cache: which blocks match, sharing and reference
// counts, eviction order, hash collisions, copy-on-write, budgets; and that a prompt
// computed on top of cached blocks gives exactly the logits of a cold run.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "kernels/backend.h"
#include "model/decoder_model.h"
#include "model/kv_cache.h"
#include "support/test_support.h"

namespace glass {
namespace {

constexpr int64_t kBlock = 4;

std::vector<int32_t> iota_tokens(int n, int32_t first) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

// A sequence that holds `tokens` as if a forward pass had written them all.
int32_t written_sequence(KVCache& cache, const std::vector<int32_t>& tokens) {
  const int32_t s = cache.add_sequence();
  EXPECT_TRUE(cache.reserve(s, static_cast<int64_t>(tokens.size())));
  for (size_t p = 0; p < tokens.size(); ++p) cache.mark_written(s, static_cast<int64_t>(p));
  cache.publish(s, tokens);
  return s;
}

uint64_t same_key_for_all(uint64_t, std::span<const int32_t>) { return 7; }

TEST(PrefixCache, FullWrittenBlocksArePublishedAndMatched) {
  KVCache cache(test::tiny_config(), KVType::F32, 64, KVCacheOptions{.block_size = kBlock});
  const std::vector<int32_t> first = iota_tokens(10, 100);  // two full blocks and a partial one
  const int32_t a = written_sequence(cache, first);
  EXPECT_EQ(cache.published_blocks(), 2);

  std::vector<int32_t> second = iota_tokens(9, 100);
  second.push_back(5);  // shares the first 9 tokens
  const KVCache::PrefixMatch m = cache.match_prefix(second);
  EXPECT_EQ(m.blocks, 2);
  EXPECT_EQ(m.unheld, 0);  // `a` still holds them
  const int32_t b = cache.add_sequence();
  EXPECT_EQ(cache.attach_prefix(b, second), 8);
  EXPECT_EQ(cache.length(b), 8);
  EXPECT_EQ(cache.block_table(b)[0], cache.block_table(a)[0]);
  EXPECT_EQ(cache.block_table(b)[1], cache.block_table(a)[1]);

  // A different second block matches only the first.
  std::vector<int32_t> third = iota_tokens(12, 100);
  third[5] = 1;
  EXPECT_EQ(cache.match_prefix(third).blocks, 1);
  // The same block of tokens at another depth is another block.
  std::vector<int32_t> shifted = {9};
  for (int32_t t : iota_tokens(11, 100)) shifted.push_back(t);
  EXPECT_EQ(cache.match_prefix(shifted).blocks, 0);
}

TEST(PrefixCache, TheLastTokenIsAlwaysComputed) {
  KVCache cache(test::tiny_config(), KVType::F32, 64, KVCacheOptions{.block_size = kBlock});
  written_sequence(cache, iota_tokens(8, 100));
  // The same 8 tokens: only the first block may be attached, so that the last token's
  // logits are computed.
  EXPECT_EQ(cache.match_prefix(iota_tokens(8, 100)).blocks, 1);
  EXPECT_EQ(cache.match_prefix(iota_tokens(9, 100)).blocks, 2);
  EXPECT_EQ(cache.match_prefix(iota_tokens(1, 100)).blocks, 0);
}

TEST(PrefixCache, UnheldBlocksStayCachedAndAreEvictedLeastRecentlyUsedFirst) {
  // Six blocks in all.
  KVCache cache(test::tiny_config(), KVType::F32, 6 * kBlock, KVCacheOptions{.block_size = kBlock});
  const int32_t a = written_sequence(cache, iota_tokens(8, 100));
  const int32_t b = written_sequence(cache, iota_tokens(8, 500));
  cache.remove_sequence(a);
  cache.remove_sequence(b);  // b's blocks were released last: used more recently
  EXPECT_EQ(cache.free_blocks(), 6);
  EXPECT_EQ(cache.cached_blocks(), 4);
  EXPECT_EQ(cache.match_prefix(iota_tokens(9, 100)).unheld, 2);

  // Two fresh blocks come from the free list; the third evicts a's deeper block, then a's first.
  const int32_t c = cache.add_sequence();
  ASSERT_TRUE(cache.reserve(c, 2 * kBlock));
  EXPECT_EQ(cache.cached_blocks(), 4);
  ASSERT_TRUE(cache.reserve(c, 3 * kBlock));
  EXPECT_EQ(cache.cached_blocks(), 3);
  EXPECT_EQ(cache.match_prefix(iota_tokens(9, 100)).blocks, 1);
  ASSERT_TRUE(cache.reserve(c, 4 * kBlock));
  EXPECT_EQ(cache.match_prefix(iota_tokens(9, 100)).blocks, 0);
  EXPECT_EQ(cache.evicted_blocks(), 2);
  EXPECT_EQ(cache.match_prefix(iota_tokens(9, 500)).blocks, 2);  // b's are still there
  // A held block is never evicted: attach b's, then ask for more than is left.
  const int32_t d = cache.add_sequence();
  EXPECT_EQ(cache.attach_prefix(d, iota_tokens(9, 500)), 8);
  EXPECT_EQ(cache.free_blocks(), 0);
  EXPECT_FALSE(cache.reserve(c, 5 * kBlock));
  EXPECT_EQ(cache.match_prefix(iota_tokens(9, 500)).blocks, 2);
}

TEST(PrefixCache, HashCollisionsAreDecidedByTheTokensAndTheParent) {
  // Every block gets the same key: only the stored tokens and parent serial tell them apart.
  KVCache cache(test::tiny_config(), KVType::F32, 64,
                KVCacheOptions{.block_size = kBlock, .hasher = same_key_for_all});
  const int32_t a = written_sequence(cache, iota_tokens(12, 100));
  std::vector<int32_t> other = iota_tokens(12, 100);
  other[6] = 0;  // the second block differs
  const int32_t b = written_sequence(cache, other);
  EXPECT_EQ(cache.published_blocks(), 5);  // b's first block equals a's and is not published twice

  const int32_t c = cache.add_sequence();
  std::vector<int32_t> query = other;
  query.push_back(1);
  EXPECT_EQ(cache.attach_prefix(c, query), 12);
  EXPECT_EQ(cache.block_table(c)[0], cache.block_table(a)[0]);
  EXPECT_EQ(cache.block_table(c)[1], cache.block_table(b)[1]);
  EXPECT_EQ(cache.block_table(c)[2], cache.block_table(b)[2]);
  // a's own chain is still a's.
  std::vector<int32_t> again = iota_tokens(13, 100);
  const int32_t d = cache.add_sequence();
  EXPECT_EQ(cache.attach_prefix(d, again), 12);
  EXPECT_EQ(cache.block_table(d), cache.block_table(a));
}

TEST(PrefixCache, AChildOfAnEvictedParentNeverMatches) {
  // Four blocks; all keys equal, so only the parent serial keeps the stale child out.
  KVCache cache(test::tiny_config(), KVType::F32, 4 * kBlock,
                KVCacheOptions{.block_size = kBlock, .hasher = same_key_for_all});
  const std::vector<int32_t> parent = iota_tokens(4, 100);
  const int32_t a1 = written_sequence(cache, parent);               // publishes P
  const int32_t a2 = written_sequence(cache, iota_tokens(8, 100));  // its own copy of P, then C under P
  EXPECT_EQ(cache.published_blocks(), 2);
  cache.remove_sequence(a1);
  // Evict P and reuse its memory; C stays published (a2 holds it).
  const int32_t z = cache.add_sequence();
  ASSERT_TRUE(cache.reserve(z, 2 * kBlock));
  EXPECT_EQ(cache.published_blocks(), 1);
  cache.remove_sequence(z);
  // P's tokens published again: C is not its child.
  written_sequence(cache, parent);
  EXPECT_EQ(cache.published_blocks(), 2);
  EXPECT_EQ(cache.match_prefix(iota_tokens(9, 100)).blocks, 1);
  cache.remove_sequence(a2);
}

TEST(PrefixCache, SharedOrPublishedBlocksAreNeverWritten) {
  KVCache cache(test::tiny_config(), KVType::F32, 64, KVCacheOptions{.block_size = kBlock});
  const int32_t a = written_sequence(cache, iota_tokens(6, 100));
  const std::string e = test::thrown_error([&] { cache.write_slot(0, 0, a, 2); });
  EXPECT_NE(e.find("published"), std::string::npos) << e;
  EXPECT_NO_THROW(cache.write_slot(0, 0, a, 6));  // the partial block is a's alone

  // Truncating into a published block copies it before it is written again.
  const int32_t published = cache.block_table(a)[0];
  std::memset(cache.slot(0, 0, a, 1), 0x5a, 4);
  cache.truncate(a, 2);
  EXPECT_NE(cache.block_table(a)[0], published);
  EXPECT_EQ(std::memcmp(cache.slot(0, 0, a, 1), cache.layer_base(0, 0) + published * cache.block_stride() +
                                                      test::tiny_config().kv_dim() * 4, 4),
            0);
  EXPECT_NO_THROW(cache.write_slot(0, 0, a, 2));
  EXPECT_EQ(cache.match_prefix(iota_tokens(5, 100)).blocks, 1);  // the published block stays cached
}

TEST(PrefixCache, ForkSharesFullBlocksAndCopiesThePartialOne) {
  KVCache cache(test::tiny_config(), KVType::F32, 64, KVCacheOptions{.block_size = kBlock});
  const int32_t a = written_sequence(cache, iota_tokens(6, 100));
  std::memset(cache.slot(1, 1, a, 5), 0x33, 8);
  const int32_t b = cache.add_sequence();
  ASSERT_TRUE(cache.fork(a, b));
  EXPECT_EQ(cache.length(b), 6);
  EXPECT_EQ(cache.block_table(b)[0], cache.block_table(a)[0]);
  EXPECT_NE(cache.block_table(b)[1], cache.block_table(a)[1]);
  EXPECT_EQ(std::memcmp(cache.slot(1, 1, a, 5), cache.slot(1, 1, b, 5), 8), 0);
  EXPECT_NO_THROW(cache.write_slot(0, 0, b, 6));
  cache.remove_sequence(a);
  EXPECT_EQ(cache.cached_blocks(), 0);  // b still holds the shared block
  cache.remove_sequence(b);
  EXPECT_EQ(cache.cached_blocks(), 1);
  EXPECT_EQ(cache.free_blocks(), cache.total_blocks());
}

TEST(PrefixCache, PromisesKeepBlocksForTheirSequences) {
  KVCache cache(test::tiny_config(), KVType::F32, 8 * kBlock, KVCacheOptions{.block_size = kBlock});
  const int32_t a = cache.add_sequence();
  ASSERT_TRUE(cache.promise(a, 5));
  EXPECT_EQ(cache.available_blocks(), 3);
  const int32_t b = cache.add_sequence();
  EXPECT_FALSE(cache.promise(b, 4));
  EXPECT_TRUE(cache.promise(b, 3));
  EXPECT_EQ(cache.available_blocks(), 0);
  ASSERT_TRUE(cache.reserve(a, 2 * kBlock));  // taken from a's promise
  EXPECT_EQ(cache.promised_blocks(), 6);
  EXPECT_EQ(cache.available_blocks(), 0);
  cache.remove_sequence(a);  // the rest of its promise is released with it
  EXPECT_EQ(cache.promised_blocks(), 3);
  EXPECT_EQ(cache.available_blocks(), 5);
}

TEST(PrefixCache, OffMeansNothingIsPublishedOrMatched) {
  KVCache cache(test::tiny_config(), KVType::F32, 64, KVCacheOptions{.block_size = kBlock, .prefix_cache = false});
  const int32_t a = written_sequence(cache, iota_tokens(12, 100));
  EXPECT_EQ(cache.published_blocks(), 0);
  EXPECT_EQ(cache.match_prefix(iota_tokens(13, 100)).blocks, 0);
  cache.remove_sequence(a);
  EXPECT_EQ(cache.cached_blocks(), 0);
}

// Logits of `prompt`'s last position: cold, on a fresh cache, in chunks of `chunk` rows.
std::vector<float> cold_logits(const DecoderModel& model, Kernels& k, KVType kv, const std::vector<int32_t>& prompt,
                               size_t chunk) {
  KVCache cache(model.config(), kv, 256, KVCacheOptions{.block_size = kBlock, .prefix_cache = false});
  const int32_t s = cache.add_sequence();
  std::vector<float> logits;
  for (size_t at = 0; at < prompt.size(); at += chunk) {
    const std::vector<int32_t> part(prompt.begin() + static_cast<ptrdiff_t>(at),
                                    prompt.begin() + static_cast<ptrdiff_t>(std::min(prompt.size(), at + chunk)));
    model.forward(Batch::prompt(part, s, static_cast<int32_t>(at), false), cache, k, logits);
  }
  return logits;
}

TEST(PrefixCache, APromptOnCachedBlocksHasTheLogitsOfAColdRun) {
  test::TempDir dir;
  test::write_tiny_checkpoint(dir.path(), test::tiny_config());
  const DecoderModel model = DecoderModel::load(dir.path());
  const std::vector<int32_t> shared = iota_tokens(23, 3);
  for (const char* backend_name : {"cpu", "reference"}) {
    Backend backend(backend_name, 2);
    for (KVType kv : {KVType::F32, KVType::F16, KVType::BF16}) {
      KVCache cache(model.config(), kv, 256, KVCacheOptions{.block_size = kBlock});
      // The first prompt, in chunks of 5, publishes its five full blocks.
      const int32_t first = cache.add_sequence();
      std::vector<float> logits;
      for (int32_t at = 0; at < 23; at += 5) {
        const std::vector<int32_t> part(shared.begin() + at, shared.begin() + std::min(23, at + 5));
        model.forward(Batch::prompt(part, first, at, false), cache, backend.kernels(), logits);
        cache.publish(first, shared);
      }
      cache.remove_sequence(first);
      for (int extra : {1, 6}) {
        std::vector<int32_t> prompt = shared;
        for (int i = 0; i < extra; ++i) prompt.push_back(40 + i);
        const int32_t s = cache.add_sequence();
        const int64_t cached = cache.attach_prefix(s, prompt);
        EXPECT_EQ(cached, 20);
        const std::vector<int32_t> rest(prompt.begin() + cached, prompt.end());
        model.forward(Batch::prompt(rest, s, static_cast<int32_t>(cached), false), cache, backend.kernels(), logits);
        cache.remove_sequence(s);
        for (size_t chunk : {size_t{1}, size_t{7}, prompt.size()}) {
          const std::vector<float> cold = cold_logits(model, backend.kernels(), kv, prompt, chunk);
          ASSERT_EQ(cold.size(), logits.size());
          EXPECT_EQ(std::memcmp(cold.data(), logits.data(), cold.size() * sizeof(float)), 0)
              << backend_name << " " << kv_type_name(kv) << " extra " << extra << " cold chunk " << chunk;
        }
      }
    }
  }
}

}  // namespace
}  // namespace glass

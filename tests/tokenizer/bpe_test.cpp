#include <gtest/gtest.h>

#include <map>
#include <random>

#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"

namespace glass {
namespace {

// A BPE model over raw byte strings: the 256 bytes are ids 0-255, merges add ids.
struct TestBpe {
  std::map<std::string, int32_t> ids;
  std::vector<std::string> tokens;
  std::vector<std::pair<std::string, std::string>> merges;

  TestBpe() {
    for (int b = 0; b < 256; ++b) add(std::string(1, static_cast<char>(b)));
  }
  int32_t add(const std::string& t) {
    auto it = ids.find(t);
    if (it != ids.end()) return it->second;
    tokens.push_back(t);
    return ids[t] = static_cast<int32_t>(tokens.size() - 1);
  }
  void merge(const std::string& a, const std::string& b) {
    merges.emplace_back(a, b);
    add(a + b);
  }
  BpeModel build(BpeOptions options = {}) const {
    TokenIdMap vocab;
    for (const auto& [t, id] : ids) vocab.insert(byte_level::encode(t), id);
    std::vector<std::pair<int32_t, int32_t>> pairs;
    std::vector<int32_t> merged;
    for (const auto& [a, b] : merges) {
      pairs.emplace_back(ids.at(a), ids.at(b));
      merged.push_back(ids.at(a + b));
    }
    return BpeModel(std::move(vocab), pairs, merged, options);
  }
  // The definition: merge the lowest-ranked adjacent pair, leftmost first, until none merges.
  std::vector<int32_t> reference(const std::string& piece) const {
    std::map<std::pair<std::string, std::string>, size_t> rank;
    for (size_t r = 0; r < merges.size(); ++r) rank[merges[r]] = r;  // a later duplicate wins
    std::vector<std::string> syms;
    for (char c : piece) syms.emplace_back(1, c);
    while (syms.size() > 1) {
      size_t best = SIZE_MAX, at = 0;
      for (size_t i = 0; i + 1 < syms.size(); ++i) {
        auto it = rank.find({syms[i], syms[i + 1]});
        if (it != rank.end() && it->second < best) best = it->second, at = i;
      }
      if (best == SIZE_MAX) break;
      syms[at] += syms[at + 1];
      syms.erase(syms.begin() + static_cast<long>(at) + 1);
    }
    std::vector<int32_t> out;
    for (const auto& s : syms) out.push_back(ids.at(s));
    return out;
  }
  std::vector<int32_t> encode(const BpeModel& m, const std::string& piece) const {
    std::vector<int32_t> out;
    m.encode(piece, out);
    return out;
  }
};

TEST(Bpe, MergesByRankNotByPosition) {
  TestBpe t;
  t.merge("b", "c");  // rank 0
  t.merge("a", "b");  // rank 1
  const BpeModel m = t.build();
  // "abc": (b,c) outranks (a,b), so a + bc, although "ab" comes first.
  EXPECT_EQ(t.encode(m, "abc"), (std::vector<int32_t>{'a', t.ids.at("bc")}));
  EXPECT_EQ(t.encode(m, "abab"), (std::vector<int32_t>{t.ids.at("ab"), t.ids.at("ab")}));
}

TEST(Bpe, EqualRanksMergeLeftmostFirst) {
  TestBpe t;
  t.merge("a", "a");
  const BpeModel m = t.build();
  const int32_t aa = t.ids.at("aa");
  EXPECT_EQ(t.encode(m, "aaa"), (std::vector<int32_t>{aa, 'a'}));
  EXPECT_EQ(t.encode(m, "aaaaa"), (std::vector<int32_t>{aa, aa, 'a'}));
}

TEST(Bpe, LaterDuplicateMergeSetsTheRank) {
  TestBpe t;
  t.merge("a", "b");  // rank 0, later redefined as rank 2
  t.merge("b", "c");  // rank 1
  t.merge("a", "b");  // rank 2
  const BpeModel m = t.build();
  EXPECT_EQ(t.encode(m, "abc"), (std::vector<int32_t>{'a', t.ids.at("bc")}));
  EXPECT_EQ(t.encode(m, "abc"), t.reference("abc"));
}

TEST(Bpe, MatchesTheDefinitionOnRandomMergesShortAndLong) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 10; ++trial) {
    TestBpe t;
    std::vector<std::string> pool = {"a", "b", "c", " "};
    for (int k = 0; k < 60; ++k) {
      const std::string x = pool[rng() % pool.size()], y = pool[rng() % pool.size()];
      if (x.size() + y.size() > 6) continue;
      t.merge(x, y);
      pool.push_back(x + y);
    }
    const BpeModel m = t.build();
    for (int s = 0; s < 30; ++s) {
      // Lengths on both sides of the small/large switch (96 symbols).
      const size_t len = 1 + rng() % (s % 2 ? 300 : 40);
      std::string piece;
      for (size_t i = 0; i < len; ++i) piece += "abc "[rng() % 4];
      ASSERT_EQ(t.encode(m, piece), t.reference(piece)) << "trial " << trial << " piece \"" << piece << "\"";
    }
  }
}

TEST(Bpe, SameResultThroughDifferentPairsToOneToken) {
  // "abc" is reachable as ab+c and a+bc; a queue entry that went stale must not merge.
  TestBpe t;
  t.merge("b", "c");
  t.merge("a", "b");
  t.merge("ab", "c");
  t.merge("a", "bc");
  const BpeModel m = t.build();
  std::string long_piece;
  for (int i = 0; i < 60; ++i) long_piece += "abcab";
  EXPECT_EQ(t.encode(m, long_piece), t.reference(long_piece));
  EXPECT_EQ(t.encode(m, "abcab"), t.reference("abcab"));
}

TEST(Bpe, UnknownBytesAreDroppedOrUnk) {
  // A vocabulary without the byte 'z': Hugging Face drops it without an unk token (and
  // its neighbours then merge); with one, the unk takes its place.
  TokenIdMap vocab;
  vocab.insert("a", 0);
  vocab.insert("b", 1);
  vocab.insert("ab", 2);
  vocab.insert("<unk>", 3);
  const std::vector<std::pair<int32_t, int32_t>> pairs = {{0, 1}};
  const std::vector<int32_t> merged = {2};
  std::vector<int32_t> out;
  BpeModel(vocab, pairs, merged, {}).encode("azb", out);
  EXPECT_EQ(out, (std::vector<int32_t>{2}));
  out.clear();
  BpeModel(vocab, pairs, merged, {.unk_id = 3}).encode("azzb", out);
  EXPECT_EQ(out, (std::vector<int32_t>{0, 3, 3, 1}));
  out.clear();
  BpeModel(vocab, pairs, merged, {.unk_id = 3, .fuse_unk = true}).encode("azzb", out);
  EXPECT_EQ(out, (std::vector<int32_t>{0, 3, 1}));
}

TEST(Bpe, IgnoreMergesTakesAWholeVocabularyWord) {
  TestBpe t;
  t.merge("a", "b");
  t.merge("c", "d");
  t.add("abcd");  // in the vocabulary but not reachable by merges
  EXPECT_EQ(t.encode(t.build(), "abcd"), (std::vector<int32_t>{t.ids.at("ab"), t.ids.at("cd")}));
  EXPECT_EQ(t.encode(t.build({.ignore_merges = true}), "abcd"), (std::vector<int32_t>{t.ids.at("abcd")}));
}

TEST(MergeTable, FindsAndReplaces) {
  MergeTable table;
  for (int i = 0; i < 1000; ++i) table.insert(i, i + 1, {i, 5000 + i});
  table.insert(7, 8, {2000, 9999});
  EXPECT_EQ(table.size(), 1000u);
  EXPECT_EQ(table.find(3, 4).merged, 5003);
  EXPECT_EQ(table.find(7, 8).rank, 2000);
  EXPECT_EQ(table.find(4, 3).merged, -1);
  EXPECT_EQ(table.find(-1, 0).merged, -1);
}

TEST(TokenIdMap, InsertsFindsAndRefusesDuplicates) {
  TokenIdMap map;
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE(map.insert("tok" + std::to_string(i), i));
  EXPECT_FALSE(map.insert("tok17", 99));
  EXPECT_EQ(map.find("tok17"), 17);
  EXPECT_EQ(map.find("tok4999"), 4999);
  EXPECT_EQ(map.find("tok5000"), -1);
  EXPECT_EQ(map.find(""), -1);
  EXPECT_TRUE(map.insert("", 7));
  EXPECT_EQ(map.find(""), 7);
  EXPECT_EQ(map.size(), 5001u);
}

}  // namespace
}  // namespace glass

#include "tokenizer/tokenizer.h"

#include <deque>

#include "base/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/piece_cache.h"
#include "tokenizer/tokenizer_model.h"
#include "tokenizer/utf8.h"

namespace glass {

void TokenizerModel::build_id_tables() {
  int64_t max_id = -1;
  bpe->vocab().for_each([&](std::string_view, int32_t id) { max_id = std::max<int64_t>(max_id, id); });
  for (const AddedToken& t : added_tokens) max_id = std::max<int64_t>(max_id, t.id);
  const size_t n = static_cast<size_t>(max_id + 1);
  std::vector<std::string_view> piece_of(n);
  std::vector<bool> present(n, false);
  bpe->vocab().for_each([&](std::string_view piece, int32_t id) {
    piece_of[static_cast<size_t>(id)] = piece;
    present[static_cast<size_t>(id)] = true;
  });
  id_flags.assign(n, 0);
  for (const AddedToken& t : added_tokens) {
    // An added token's content is what its id stands for, even when the model's
    // vocabulary has another string under the same id (Hugging Face looks added tokens up first).
    piece_of[static_cast<size_t>(t.id)] = t.content;
    present[static_cast<size_t>(t.id)] = true;
    if (t.special) id_flags[static_cast<size_t>(t.id)] |= kSpecial;
  }
  piece_offset.assign(n + 1, 0);
  bytes_offset.assign(n + 1, 0);
  piece_arena.clear();
  bytes_arena.clear();
  for (size_t id = 0; id < n; ++id) {
    piece_offset[id] = static_cast<uint32_t>(piece_arena.size());
    bytes_offset[id] = static_cast<uint32_t>(bytes_arena.size());
    if (!present[id]) continue;
    id_flags[id] |= kExists;
    const std::string_view piece = piece_of[id];
    piece_arena += piece;
    // Hugging Face's ByteLevel decoder: a token whose characters are all in the byte
    // alphabet stands for those bytes; any other token for its own UTF-8.
    if (auto bytes = byte_level::decode(piece))
      bytes_arena += *bytes;
    else
      bytes_arena += piece;
  }
  if (piece_arena.size() > UINT32_MAX || bytes_arena.size() > UINT32_MAX)
    fail(source, ": the vocabulary's strings exceed 4 GiB");
  piece_offset[n] = static_cast<uint32_t>(piece_arena.size());
  bytes_offset[n] = static_cast<uint32_t>(bytes_arena.size());
}

Tokenizer::Tokenizer(std::shared_ptr<const TokenizerModel> model) : m_(std::move(model)) {}

namespace {

constexpr size_t kCacheFromBytes = 4096;

// Per-call scratch space, so that encode() is const and thread-safe.
struct EncodeScratch {
  std::vector<Segment> segments, inner_segments;
  std::vector<std::string_view> pieces;
  std::deque<std::string> piece_storage;
  std::string normalized;
  PieceCache cache;
  bool use_cache = false;
};

void encode_pieces(const TokenizerModel& m, std::string_view text, const EncodeOptions& options, EncodeScratch& s,
                   std::vector<int32_t>& out) {
  s.pieces.clear();
  s.piece_storage.clear();
  m.pre_tokenizer.split(text, s.pieces, s.piece_storage, options.fast_split);
  if (!s.use_cache) {
    for (std::string_view piece : s.pieces) m.bpe->encode(piece, out);
    return;
  }
  for (std::string_view piece : s.pieces) {
    if (piece.size() < 2 || piece.size() > PieceCache::kMaxPieceBytes) {
      m.bpe->encode(piece, out);
      continue;
    }
    const uint64_t hash = TokenIdMap::hash(piece);
    if (s.cache.lookup(piece, hash, out)) continue;
    const size_t before = out.size();
    m.bpe->encode(piece, out);
    s.cache.insert(piece, hash, out.data() + before, out.size() - before);
  }
}

void encode_text(const TokenizerModel& m, std::string_view text, const EncodeOptions& options, EncodeScratch& s,
                 std::vector<int32_t>& out) {
  const std::string_view normalized = m.normalizer.apply(text, s.normalized);
  if (m.normalized_matcher.empty()) return encode_pieces(m, normalized, options, s, out);
  // `normalized` may view s.normalized, which encode_pieces leaves alone.
  s.inner_segments.clear();
  m.normalized_matcher.split(normalized, options.parse_special, s.inner_segments);
  for (const Segment& seg : s.inner_segments) {
    if (seg.id >= 0)
      out.push_back(seg.id);
    else
      encode_pieces(m, normalized.substr(seg.begin, seg.end - seg.begin), options, s, out);
  }
}

}  // namespace

void Tokenizer::encode(std::string_view text, std::vector<int32_t>& out, const EncodeOptions& options) const {
  const TokenizerModel& m = *m_;
  std::string repaired;
  if (!utf8::is_valid(text)) {
    repaired = utf8::to_valid(text);
    text = repaired;
  }
  if (options.add_special_tokens) out.insert(out.end(), m.template_prefix.begin(), m.template_prefix.end());
  EncodeScratch s;
  // Short texts (a chat turn) rarely repeat a piece; the cache pays off on long ones.
  s.use_cache = text.size() >= kCacheFromBytes;
  m.raw_matcher.split(text, options.parse_special, s.segments);
  for (const Segment& seg : s.segments) {
    if (seg.id >= 0)
      out.push_back(seg.id);
    else
      encode_text(m, text.substr(seg.begin, seg.end - seg.begin), options, s, out);
  }
  if (options.add_special_tokens) out.insert(out.end(), m.template_suffix.begin(), m.template_suffix.end());
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  encode(text, out, options);
  return out;
}

bool Tokenizer::has_token(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < m_->id_flags.size() && (m_->id_flags[static_cast<size_t>(id)] & TokenizerModel::kExists);
}

bool Tokenizer::is_special(int32_t id) const {
  return has_token(id) && (m_->id_flags[static_cast<size_t>(id)] & TokenizerModel::kSpecial);
}

size_t Tokenizer::vocab_size() const { return m_->id_flags.size(); }

std::string_view Tokenizer::token_bytes(int32_t id) const {
  if (!has_token(id)) return {};
  const auto i = static_cast<size_t>(id);
  return std::string_view(m_->bytes_arena).substr(m_->bytes_offset[i], m_->bytes_offset[i + 1] - m_->bytes_offset[i]);
}

std::string Tokenizer::token_text(int32_t id) const {
  if (!has_token(id)) fail("token id ", id, " has no token in ", m_->source, " (vocabulary size ", vocab_size(), ")");
  const auto i = static_cast<size_t>(id);
  return m_->piece_arena.substr(m_->piece_offset[i], m_->piece_offset[i + 1] - m_->piece_offset[i]);
}

int32_t Tokenizer::token_id(std::string_view piece) const {
  const int32_t added = m_->added_ids.find(piece);
  return added >= 0 ? added : m_->bpe->token_id(piece);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (skip_special && is_special(id)) continue;
    bytes += token_bytes(id);
  }
  if (utf8::is_valid(bytes)) return bytes;
  return utf8::to_valid(bytes);
}

const std::vector<AddedToken>& Tokenizer::added_tokens() const { return m_->added_tokens; }
bool Tokenizer::has_fast_split() const { return m_->pre_tokenizer.has_fast_split(); }
const std::string& Tokenizer::source() const { return m_->source; }

std::vector<std::string> Tokenizer::pre_tokenize(std::string_view text, bool fast_split) const {
  const TokenizerModel& m = *m_;
  std::string repaired;
  if (!utf8::is_valid(text)) {
    repaired = utf8::to_valid(text);
    text = repaired;
  }
  std::vector<std::string> out;
  std::vector<Segment> segments, inner;
  m.raw_matcher.split(text, true, segments);
  for (const Segment& seg : segments) {
    const std::string_view part = text.substr(seg.begin, seg.end - seg.begin);
    if (seg.id >= 0) {
      out.emplace_back(part);
      continue;
    }
    std::string storage;
    const std::string_view normalized = m.normalizer.apply(part, storage);
    inner.clear();
    m.normalized_matcher.split(normalized, true, inner);
    for (const Segment& s : inner) {
      const std::string_view sub = normalized.substr(s.begin, s.end - s.begin);
      if (s.id >= 0) {
        out.emplace_back(sub);
      } else {
        for (std::string& piece : m.pre_tokenizer.split(sub, fast_split)) out.push_back(std::move(piece));
      }
    }
  }
  return out;
}

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(tokenizer), skip_special_(skip_special) {}

std::string StreamingDecoder::push(int32_t id) {
  if (skip_special_ && tokenizer_.is_special(id)) return {};
  pending_ += tokenizer_.token_bytes(id);
  std::string out;
  const size_t used = utf8::append_complete_prefix(out, pending_);
  pending_.erase(0, used);
  return out;
}

std::string StreamingDecoder::flush() {
  std::string out = utf8::to_valid(pending_);
  pending_.clear();
  return out;
}

}  // namespace glass

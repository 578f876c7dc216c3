// Streaming detokenization and UTF-8 repair: characters split over byte
// tokens come out whole, invalid bytes become U+FFFD, nothing throws.
#include "tokenizer/incremental_decoder.h"

#include <gtest/gtest.h>

#include <random>

#include "testing/shared_data.h"
#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

using Ids = std::vector<int32_t>;
const std::string kFffd = "\xEF\xBF\xBD";

const Tokenizer& stories() {
  static const Tokenizer t = Tokenizer::from_gguf(GgufFile::open(testing::shared_path("models/stories260K.gguf")));
  return t;
}
int32_t byte_id(uint8_t b) { return 3 + b; }  // stories260K: <0x00> is id 3

bool is_valid_utf8(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    const Utf8Scan c = utf8_scan(s.substr(pos));
    if (c.status != Utf8Status::Complete) return false;
    pos += c.length;
  }
  return true;
}

TEST(Utf8, ScanAndSanitize) {
  EXPECT_EQ(utf8_sanitize("plain ascii"), "plain ascii");
  EXPECT_EQ(utf8_sanitize("\xF0\x9F\xA6\x99 ok"), "\xF0\x9F\xA6\x99 ok");
  EXPECT_EQ(utf8_sanitize("a\xFF"
                          "b"),
            "a" + kFffd + "b");
  EXPECT_EQ(utf8_sanitize("\xC0\x80"), kFffd + kFffd);                          // overlong NUL
  EXPECT_EQ(utf8_sanitize("\xED\xA0\x80"), kFffd + kFffd + kFffd);              // surrogate
  EXPECT_EQ(utf8_sanitize("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
  EXPECT_EQ(utf8_sanitize("\xE2\x82"
                          "A"),
            kFffd + "A");                           // truncated, then ASCII
  EXPECT_EQ(utf8_sanitize("\xF0\x9F\xA6"), kFffd);  // truncated at the end
  EXPECT_EQ(utf8_scan("\xE2\x82").status, Utf8Status::Incomplete);
  EXPECT_EQ(utf8_scan("\xE2\x82\xAC").length, 3u);
}

TEST(IncrementalDecoder, EmojiOverFourByteTokens) {
  IncrementalDecoder d(stories());
  EXPECT_EQ(d.push(byte_id(0xF0)), "");
  EXPECT_EQ(d.push(byte_id(0x9F)), "");
  EXPECT_EQ(d.push(byte_id(0xA6)), "");
  EXPECT_TRUE(d.has_pending());
  EXPECT_EQ(d.push(byte_id(0x99)), "\xF0\x9F\xA6\x99");  // 🦙, whole
  EXPECT_FALSE(d.has_pending());
  EXPECT_EQ(d.flush(), "");
}

TEST(IncrementalDecoder, InvalidBytesBecomeReplacement) {
  IncrementalDecoder d(stories());
  EXPECT_EQ(d.push(byte_id(0xFF)), kFffd);  // can never start a character: out at once
  EXPECT_EQ(d.push(byte_id(0xE2)), "");
  EXPECT_EQ(d.push(byte_id('A')), kFffd + "A");  // the started character was cut short
  EXPECT_EQ(d.push(byte_id(0x80)), kFffd);       // a stray continuation byte
  EXPECT_EQ(d.flush(), "");
}

TEST(IncrementalDecoder, TruncatedAtFlush) {
  IncrementalDecoder d(stories());
  EXPECT_EQ(d.push(byte_id(0xE2)), "");
  EXPECT_EQ(d.push(byte_id(0x82)), "");
  EXPECT_EQ(d.flush(), kFffd);
  EXPECT_EQ(d.flush(), "");
}

TEST(IncrementalDecoder, PieceAfterPendingBytes) {
  const Tokenizer& t = stories();
  const int32_t the = t.find_token("\xE2\x96\x81the");
  ASSERT_GE(the, 0);
  IncrementalDecoder d(t);
  EXPECT_EQ(d.push(byte_id(0xC3)), "");
  EXPECT_EQ(d.push(the), kFffd + " the");  // a piece cannot finish a character
  EXPECT_EQ(d.push(1), "");                // BOS renders nothing
}

TEST(IncrementalDecoder, LeadingSpace) {
  const Tokenizer& t = stories();
  // Generation after the prompt "Once upon a time": "," then "▁there" ...
  Ids ids{t.find_token(",")};
  ASSERT_GE(ids[0], 0);
  for (int32_t id : t.encode("there was a little girl.", false)) ids.push_back(id);
  ASSERT_EQ(t.token_text(ids[1]), "\xE2\x96\x81there");
  IncrementalDecoder keep(t);
  std::string out;
  for (int32_t id : ids) out += keep.push(id);
  EXPECT_EQ(out + keep.flush(), ", there was a little girl.");

  // Spaces are kept unless asked to strip the very first one.
  const Ids hello = t.encode("Once upon", false);
  IncrementalDecoder kept(t), stripped(t, /*strip_leading_space=*/true);
  std::string a, b;
  for (int32_t id : Ids{1, hello[0], hello[1]}) {
    a += kept.push(id);
    b += stripped.push(id);
  }
  EXPECT_EQ(a, " Once upon");
  EXPECT_EQ(b, "Once upon");
}

// However a byte stream is cut into tokens, the streamed text equals the
// sanitized whole and every piece handed out is valid UTF-8.
TEST(IncrementalDecoder, RandomByteStreamsMatchWholeDecode) {
  const Tokenizer& t = stories();
  std::mt19937 rng(1234);
  const std::vector<uint8_t> interesting = {'a', ' ', 0x80, 0xBF, 0xC2, 0xC3, 0xE0, 0xE2, 0xED, 0xF0, 0xF4, 0xFF, 0x9F};
  for (int round = 0; round < 300; ++round) {
    std::string bytes;
    Ids ids;
    const int n = int(rng() % 24);
    for (int i = 0; i < n; ++i) {
      const uint8_t b = rng() % 2 ? interesting[rng() % interesting.size()] : uint8_t(rng());
      bytes += char(b);
      ids.push_back(byte_id(b));
    }
    IncrementalDecoder d(t);
    std::string out;
    for (int32_t id : ids) {
      const std::string piece = d.push(id);
      EXPECT_TRUE(is_valid_utf8(piece));
      out += piece;
    }
    out += d.flush();
    EXPECT_EQ(out, utf8_sanitize(bytes)) << "round " << round;
    EXPECT_TRUE(is_valid_utf8(out));
    // Whole-sequence decode also drops a leading space (the dummy prefix).
    const std::string_view rest = !bytes.empty() && bytes[0] == ' ' ? std::string_view(bytes).substr(1) : bytes;
    EXPECT_EQ(t.decode(ids), utf8_sanitize(rest));
  }
}

TEST(IncrementalDecoder, OutOfRangeIdsRenderNothing) {
  IncrementalDecoder d(stories());
  EXPECT_EQ(d.push(-5), "");
  EXPECT_EQ(d.push(512), "");
  EXPECT_EQ(d.push(1 << 30), "");
  EXPECT_EQ(d.flush(), "");
}

}  // namespace
}  // namespace pagoda

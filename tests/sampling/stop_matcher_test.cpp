// StopMatcher over streamed deltas: held-back prefixes, stops split across
// deltas, overlapping candidates, UTF-8, a stop at the very start, and that
// the result never depends on how the text was split.
#include "sampling/stop_matcher.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "util/error.h"

namespace pagoda {
namespace {

struct Outcome {
  std::string text;  // everything emitted, flush included
  bool stopped = false;
  int stop_index = -1;
  bool operator==(const Outcome&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  return os << "{\"" << o.text << "\", stopped=" << o.stopped << ", index=" << o.stop_index << "}";
}

Outcome run(const std::vector<std::string>& stops, const std::vector<std::string>& deltas) {
  StopMatcher m(stops);
  Outcome o;
  for (const auto& d : deltas) {
    const auto step = m.push(d);
    o.text += step.text;
    if (step.stopped) break;
  }
  o.stopped = m.stopped();
  o.stop_index = m.stop_index();
  o.text += m.flush();
  return o;
}

// Every way of cutting `text` into two or three deltas gives `want`.
void expect_split_independent(const std::vector<std::string>& stops, const std::string& text, const Outcome& want) {
  EXPECT_EQ(run(stops, {text}), want) << "whole";
  for (size_t i = 0; i <= text.size(); ++i) {
    EXPECT_EQ(run(stops, {text.substr(0, i), text.substr(i)}), want) << "cut at " << i;
    for (size_t j = i; j <= text.size(); ++j)
      EXPECT_EQ(run(stops, {text.substr(0, i), text.substr(i, j - i), text.substr(j)}), want)
          << "cuts at " << i << ", " << j;
  }
}

TEST(StopMatcher, HoldsBackOnlyWhatCouldStartAStop) {
  StopMatcher m({"STOP"});
  auto s = m.push("hello ST");
  EXPECT_EQ(s.text, "hello ");
  EXPECT_FALSE(s.stopped);
  EXPECT_EQ(m.held(), "ST");
  s = m.push("AR");  // "STAR" is not a prefix of STOP any more
  EXPECT_EQ(s.text, "STAR");
  s = m.push(" S");
  EXPECT_EQ(s.text, " ");
  EXPECT_EQ(m.flush(), "S");  // the generation ended another way
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, StopSplitAcrossDeltasDropsStopAndRest) {
  StopMatcher m({"\n\nUser:"});
  EXPECT_EQ(m.push("Sure.\n").text, "Sure.");
  EXPECT_EQ(m.push("\nUs").text, "");
  const auto s = m.push("er: and more");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.text, "");
  EXPECT_EQ(m.stop_index(), 0);
  EXPECT_EQ(m.flush(), "");
  EXPECT_TRUE(m.push("late").stopped);
  EXPECT_EQ(m.push("late").text, "");
  expect_split_independent({"\n\nUser:"}, "Sure.\n\nUser: and more", {"Sure.", true, 0});
}

TEST(StopMatcher, StopAtTheVeryStart) {
  StopMatcher m({"###"});
  const auto s = m.push("###tail");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.text, "");
  expect_split_independent({"###"}, "###tail", {"", true, 0});
}

TEST(StopMatcher, NoStopPassesEverythingThrough) {
  expect_split_independent({"xyz"}, "abc xy abcxy", {"abc xy abcxy", false, -1});
  expect_split_independent({}, "plain text", {"plain text", false, -1});
}

TEST(StopMatcher, OverlappingCandidatesFirstToCompleteWins) {
  // "c" completes (at byte 3) before "abcd" would (at byte 4).
  expect_split_independent({"abcd", "c"}, "xabcd", {"xab", true, 1});
  // Both complete at the same byte: the one that started first wins.
  expect_split_independent({"cd", "abcd"}, "xabcdy", {"x", true, 1});
  // A stop overlapping itself: "aab" inside "aaab".
  expect_split_independent({"aab"}, "aaaab!", {"aa", true, 0});
  // Several candidates alive at once, only the longer one matches.
  expect_split_independent({"ab", "bba"}, "xbbay", {"x", true, 1});
}

TEST(StopMatcher, Utf8) {
  // "é" is C3 A9, "日本" is E6 97 A5 E6 9C AC, "😀" is F0 9F 98 80.
  const std::string text = "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80 end";
  expect_split_independent({"\xE6\x9C\xAC"}, text, {"caf\xC3\xA9 \xE6\x97\xA5", true, 0});
  expect_split_independent({"\xF0\x9F\x98\x80"}, text, {"caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC ", true, 0});
  // A stop string that shares a lead byte with the text ("日" vs "本": E6).
  expect_split_independent({"\xE6\x9C\xAD"}, text, {text, false, -1});
}

TEST(StopMatcher, NeverSplitsAUtf8Character) {
  StopMatcher m({});
  EXPECT_EQ(m.push("a\xF0\x9F").text, "a");
  EXPECT_EQ(m.push("\x98").text, "");
  EXPECT_EQ(m.push("\x80!").text, "\xF0\x9F\x98\x80!");
  EXPECT_EQ(m.push("\xC3").text, "");
  EXPECT_EQ(m.flush(), "\xC3");  // at the end, whatever is left goes out
  // Every emitted piece is whole characters, however the bytes arrive.
  const std::string text = "\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80";
  const std::set<size_t> boundaries = {0, 2, 5, 9};  // around é, 日, 😀
  for (size_t i = 0; i <= text.size(); ++i) {
    StopMatcher n({"zz"});
    const std::string a = n.push(text.substr(0, i)).text;
    const std::string b = n.push(text.substr(i)).text;
    EXPECT_TRUE(boundaries.count(a.size())) << "split at " << i << " emitted " << a.size() << " bytes";
    EXPECT_EQ(a + b, text);
  }
}

TEST(StopMatcher, RejectsEmptyStop) { EXPECT_THROW(StopMatcher({"a", ""}), InvalidArgument); }

}  // namespace
}  // namespace pagoda

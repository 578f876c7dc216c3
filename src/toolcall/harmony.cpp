// The harmony reader (harmony.h): three modes over the text as it arrives.
// Between messages it waits for a header; in a header it collects the text up
// to <|message|>; in a message it passes the text on to the message's field
// until a marker ends it. Only a marker's possible beginning is held back, so
// each decision is the one the whole text would give.
#include "toolcall/harmony.h"

#include <array>
#include <random>
#include <string>
#include <utility>

namespace pagoda::toolcall {
// Named, not anonymous: HarmonyParser::State holds these types.
namespace harmony_detail {

enum class Mark { start, end, message, channel, constrain, ret, call, none };

struct MarkText {
  Mark mark;
  std::string_view text;
};

constexpr std::array<MarkText, 7> kMarks{{{Mark::start, "<|start|>"},
                                          {Mark::end, "<|end|>"},
                                          {Mark::message, "<|message|>"},
                                          {Mark::channel, "<|channel|>"},
                                          {Mark::constrain, "<|constrain|>"},
                                          {Mark::ret, "<|return|>"},
                                          {Mark::call, "<|call|>"}}};

// The marker at s's start; *partial: s is shorter than some marker it begins.
Mark marker_at(std::string_view s, bool* partial, size_t* len) {
  *partial = false;
  for (const auto& m : kMarks) {
    if (s.starts_with(m.text)) return *len = m.text.size(), m.mark;
    if (m.text.starts_with(s)) *partial = true;
  }
  return Mark::none;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// What may open the output besides a marker: the template writes the
// recipient before the channel (`assistant to=functions.f<|channel|>..`), and
// the generation prompt already holds `<|start|>assistant`.
constexpr std::array<std::string_view, 3> kOutputHeaderStarts = {" to=", "to=", "<|constrain|>"};

struct Header {
  std::string role, channel, recipient;
};

// A header's words, separated by spaces and markers.
Header parse_header(std::string_view h, bool after_start) {
  Header out;
  size_t i = 0;
  auto word = [&] {
    const size_t b = i;
    while (i < h.size() && h[i] != ' ' && h[i] != '<') ++i;
    return std::string(h.substr(b, i - b));
  };
  if (after_start) out.role = word();
  while (i < h.size()) {
    const std::string_view rest = h.substr(i);
    if (h[i] == ' ') {
      ++i;
    } else if (rest.starts_with("<|channel|>")) {
      i += 11;
      out.channel = word();  // the last one counts: a stray "<|channel|>commentary" may come first
    } else if (rest.starts_with("<|constrain|>")) {
      i += 13;
      word();
    } else if (rest.starts_with("to=")) {
      i += 3;
      out.recipient = word();
    } else if (h[i] == '<') {
      ++i;
    } else {
      word();  // a content type ("json")
    }
  }
  return out;
}

enum class Dest { reasoning, content, call };

constexpr std::string_view kFunctions = "functions.";

Dest dest_of(const Header& h, std::string* name) {
  if (h.recipient.starts_with(kFunctions) && h.recipient.size() > kFunctions.size()) {
    *name = h.recipient.substr(kFunctions.size());
    return Dest::call;
  }
  // "to=assistant" is gpt-oss's stray way of saying nothing.
  const bool other_recipient = !h.recipient.empty() && h.recipient != "assistant";
  const bool other_role = !h.role.empty() && h.role != "assistant";
  if (other_recipient || other_role || h.channel == "analysis") return Dest::reasoning;
  return Dest::content;
}

}  // namespace harmony_detail

using namespace harmony_detail;

struct HarmonyParser::State {
  enum class Mode { between, header, body } mode = Mode::between;
  bool calls_on;
  bool at_output_start = true;
  std::string pending;       // text not yet read
  std::string header;        // the open header
  bool after_start = false;  // the open header follows <|start|>: it begins with the role
  Dest dest = Dest::content;
  bool msg_wrote = false;  // the open message has written to its field
  bool wrote_reasoning = false, wrote_content = false;
  bool args_begun = false;  // a call: its arguments have begun (leading whitespace dropped)
  std::string args_space;   // a call: whitespace held until more arguments follow
  size_t ncalls = 0, current = 0;
  std::mt19937_64 rng{std::random_device{}()};
  ParseStep out;

  explicit State(bool calls) : calls_on(calls) {}

  std::string new_id() {
    static constexpr std::string_view kAlnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string id = "call_";
    for (int i = 0; i < 24; ++i) id += kAlnum[rng() % kAlnum.size()];
    return id;
  }

  void open_header(bool start) {
    mode = Mode::header;
    header.clear();
    after_start = start;
  }

  void open_message(const Header& h) {
    std::string name;
    dest = dest_of(h, &name);
    if (dest == Dest::call && (!calls_on || ncalls >= kMaxCalls)) dest = Dest::content;
    if (dest == Dest::call) {
      current = ncalls++;
      out.calls.push_back({current, new_id(), std::move(name), ""});
      args_begun = false;
      args_space.clear();
    }
    msg_wrote = false;
    mode = Mode::body;
  }

  void close_message() {
    if (dest == Dest::call && !args_begun) out.calls.push_back({current, "", "", "{}"});
    args_space.clear();
    dest = Dest::content;
  }

  void write(std::string_view text) {
    if (text.empty()) return;
    if (dest == Dest::call) {
      std::string piece;
      for (const char c : text) {
        if (!is_space(c)) {
          piece += std::exchange(args_space, {});
          piece += c;
          args_begun = true;
        } else if (args_begun) {
          // Held only while it may be trailing; a long run is the arguments' own.
          args_space += c;
          if (args_space.size() > kMaxHeaderBytes) piece += std::exchange(args_space, {});
        }
      }
      if (!piece.empty()) out.calls.push_back({current, "", "", std::move(piece)});
      return;
    }
    bool& wrote = dest == Dest::reasoning ? wrote_reasoning : wrote_content;
    std::string& field = dest == Dest::reasoning ? out.reasoning : out.content;
    if (!msg_wrote && wrote) field += '\n';
    msg_wrote = wrote = true;
    field += text;
  }

  // Each scan returns whether the mode changed (scan again) rather than
  // needing more text.
  bool scan_between(size_t& pos, bool final) {
    if (at_output_start) {
      const std::string_view rest = std::string_view(pending).substr(pos);
      for (const std::string_view s : kOutputHeaderStarts) {
        if (rest.starts_with(s)) {
          at_output_start = false;
          open_header(false);
          return true;
        }
        if (!final && s.starts_with(rest)) return false;  // could still become one
      }
      at_output_start = false;
    }
    while (pos < pending.size() && is_space(pending[pos])) ++pos;
    const std::string_view rest = std::string_view(pending).substr(pos);
    if (rest.empty()) return false;
    bool partial = false;
    size_t len = 0;
    switch (marker_at(rest, &partial, &len)) {
      case Mark::start: pos += len, open_header(true); return true;
      case Mark::channel:
      case Mark::constrain: open_header(false); return true;  // the header holds the marker
      case Mark::message: pos += len, open_message({}); return true;
      case Mark::end:
      case Mark::ret:
      case Mark::call: pos += len; return true;
      case Mark::none: break;
    }
    if (partial && !final) return false;
    open_message({});  // text outside any message: content, until a marker
    return true;
  }

  // The header's text so far was not one: it is content, from where it
  // began, and run on with what came before (no new message began).
  bool header_failed() {
    const std::string text = std::exchange(header, {});
    open_message({});
    msg_wrote = true;
    write(text);
    return true;
  }

  bool scan_header(size_t& pos, bool final) {
    for (;;) {
      const size_t lt = pending.find('<', pos);
      const size_t stop = lt == std::string::npos ? pending.size() : lt;
      for (; pos < stop; ++pos) {
        const char c = pending[pos];
        if (c < 0x20 || c > 0x7e || header.size() >= kMaxHeaderBytes) return header_failed();
        header += c;
      }
      if (lt == std::string::npos) {
        if (final) mode = Mode::between;  // cut off inside a header: markup, dropped
        return false;
      }
      bool partial = false;
      size_t len = 0;
      switch (marker_at(std::string_view(pending).substr(pos), &partial, &len)) {
        case Mark::message:
          pos += len;
          open_message(parse_header(header, after_start));
          return true;
        case Mark::channel:
        case Mark::constrain:
          if (header.size() + len > kMaxHeaderBytes) return header_failed();
          header.append(pending, pos, len);
          pos += len;
          continue;
        case Mark::start: pos += len, open_header(true); continue;  // the open header had no message
        case Mark::end:
        case Mark::ret:
        case Mark::call: pos += len, mode = Mode::between; return true;
        case Mark::none: break;
      }
      if (partial && !final) return false;
      if (partial) {  // cut off inside a marker inside a header: dropped
        pos = pending.size();
        mode = Mode::between;
        return false;
      }
      return header_failed();  // a '<' that begins no marker: no header holds one
    }
  }

  bool scan_body(size_t& pos, bool final) {
    for (;;) {
      const size_t lt = pending.find('<', pos);
      if (lt == std::string::npos) {
        write(std::string_view(pending).substr(pos));
        pos = pending.size();
        if (final) close_message(), mode = Mode::between;
        return false;
      }
      write(std::string_view(pending).substr(pos, lt - pos));
      pos = lt;
      bool partial = false;
      size_t len = 0;
      switch (marker_at(std::string_view(pending).substr(pos), &partial, &len)) {
        case Mark::end:
        case Mark::ret:
        case Mark::call: pos += len, close_message(), mode = Mode::between; return true;
        case Mark::start: pos += len, close_message(), open_header(true); return true;
        case Mark::channel: close_message(), open_header(false); return true;  // a missing <|end|>
        case Mark::message:
        case Mark::constrain:
          write(std::string_view(pending).substr(pos, len));  // no message ends there: its text
          pos += len;
          continue;
        case Mark::none: break;
      }
      if (partial && !final) return false;
      write("<");
      ++pos;
    }
  }

  ParseStep run(bool final) {
    size_t pos = 0;
    for (bool again = true; again;) {
      switch (mode) {
        case Mode::between: again = scan_between(pos, final); break;
        case Mode::header: again = scan_header(pos, final); break;
        case Mode::body: again = scan_body(pos, final); break;
      }
    }
    pending.erase(0, pos);
    return std::exchange(out, {});
  }
};

HarmonyParser::HarmonyParser(bool calls) : s_(std::make_unique<State>(calls)) {}
HarmonyParser::~HarmonyParser() = default;
HarmonyParser::HarmonyParser(HarmonyParser&&) noexcept = default;
HarmonyParser& HarmonyParser::operator=(HarmonyParser&&) noexcept = default;

ParseStep HarmonyParser::push(std::string_view piece) {
  s_->pending.append(piece);
  return s_->run(false);
}

ParseStep HarmonyParser::finish() { return s_->run(true); }

size_t HarmonyParser::calls() const { return s_->ncalls; }

}  // namespace pagoda::toolcall

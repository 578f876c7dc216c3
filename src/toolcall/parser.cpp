// The streaming machine shared by every format (tool_call_parser.h): content
// text until an opening marker, then a call's text until its end finder says
// it is complete, then the format's parser decides call or content. In the
// formats that stream (stream.h), a call whose head has been read is
// committed instead, and its arguments pass on as they arrive.
#include <random>
#include <utility>

#include "toolcall/formats.h"
#include "toolcall/harmony.h"
#include "toolcall/stream.h"

namespace pagoda::toolcall {

using detail::End;
using detail::Spec;
using detail::Step;

struct ToolCallParser::State {
  Format format;
  const Spec& spec;
  enum Mode { content, call, plain } mode = content;
  std::string held;      // content not yet shown: it may start a marker
  std::string buf;       // the open call's text
  std::string marker;    // the marker that opened it, when not part of buf
  bool at_start = true;  // at the output's start or right after a call
  bool dirty = false;    // buf grew by a character that can end a call since the last look
  size_t ncalls = 0;
  // Streaming a committed call: where in buf, and what is being read there.
  const detail::StreamSpec* stream;                      // nullptr: whole calls only
  enum Phase { whole, args, tail, head } phase = whole;  // whole: nothing committed
  bool head_failed = false;                              // this call's text is not a streamable head
  bool array = false;                                    // mistral's [{..}, ..]: tails may lead to a next call
  size_t pos = 0;                                        // in buf: where the reading stands
  size_t current = 0;                                    // the committed call's index
  std::string function;                                  // for_function: the name every call gets
  detail::ArgsMinifier minifier;
  std::mt19937_64 rng{std::random_device{}()};
  ParseStep out;

  State(Format f) : format(f), spec(detail::spec_for(f)), stream(detail::stream_spec_for(f)) {}
  // for_function (a name) and for_array (none): no markers, the output is the call text.
  State(Format f, const Spec& sp, const detail::StreamSpec* st, std::string name)
      : format(f), spec(sp), stream(st), function(std::move(name)) {
    mode = call;  // the output's first character begins the object or array
    dirty = true;
  }

  std::string new_id() {
    static constexpr std::string_view kAlnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const bool mistral = format == Format::mistral;  // its templates demand 9 letters/digits
    std::string id = mistral ? "" : "call_";
    for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kAlnum[rng() % kAlnum.size()];
    return id;
  }

  void emit(std::string_view text) { out.content += text; }

  // Where a marker starts in held at or after `from` (npos if none), and
  // which; `partial`: how long a held suffix could still begin one.
  size_t find_marker(size_t from, const detail::Marker** which, size_t* partial) const {
    size_t best = std::string::npos;
    *partial = 0;
    for (const auto& m : spec.starts) {
      const size_t at = held.find(m.text, from);
      if (at < best) best = at, *which = &m;
      for (size_t k = std::min(m.text.size() - 1, held.size() - from); k > *partial; --k)
        if (std::string_view(held).substr(held.size() - k) == m.text.substr(0, k)) {
          *partial = k;
          break;
        }
    }
    return best;
  }

  void open(const detail::Marker& m, size_t at) {
    buf = m.keep ? std::string(m.text) : std::string();
    marker = m.keep ? std::string() : std::string(m.text);
    buf.append(held, at + m.text.size());
    held.clear();
    mode = call;
    dirty = true;
    head_failed = false;
  }

  // Content mode: show what cannot begin a call, open a call at a marker.
  // Returns whether a call was opened.
  bool scan_content(bool final) {
    if (mode == plain || ncalls >= kMaxCalls) return emit(held), held.clear(), false;
    if (at_start) {
      size_t lead = held.find_first_not_of(" \t\r\n");
      if (lead != std::string::npos && ncalls > 0 && !spec.separator.empty() &&
          std::string_view(held).substr(lead).starts_with(spec.separator))
        lead = held.find_first_not_of(" \t\r\n", lead + spec.separator.size());
      if (lead == std::string::npos) {  // only spaces (and a separator) so far
        if (final) ncalls > 0 ? held.clear() : (emit(held), held.clear());
        return false;
      }
      const std::string_view rest = std::string_view(held).substr(lead);
      for (const auto& m : spec.starts) {
        if (rest.starts_with(m.text)) return open(m, lead), true;
        if (!final && m.text.starts_with(rest)) return false;  // could still become the marker
      }
      at_start = false;
      if (spec.only_at_start) mode = plain;
      return scan_content(final);
    }
    const detail::Marker* m = nullptr;
    size_t partial = 0;
    const size_t at = find_marker(0, &m, &partial);
    if (at != std::string::npos) {
      emit(std::string_view(held).substr(0, at));
      open(*m, at);
      return true;
    }
    const size_t keep = final ? 0 : partial;
    emit(std::string_view(held).substr(0, held.size() - keep));
    held.erase(0, held.size() - keep);
    return false;
  }

  void accept(std::vector<detail::Call> calls) {
    for (auto& c : calls) {
      out.calls.push_back({ncalls, new_id(), std::move(c.name), ""});
      out.calls.push_back({ncalls, "", "", std::move(c.arguments)});
      ++ncalls;
    }
    at_start = true;
  }

  // A call that is not one: its text is content, and no more calls where
  // calls only open the output.
  void reject(size_t len) {
    emit(marker);
    emit(std::string_view(buf).substr(0, len));
    at_start = false;
    if (spec.only_at_start) mode = plain;
  }

  // Call mode: returns whether the call closed (content mode again).
  bool scan_call(bool final) {
    if (phase != whole) return scan_stream(final);
    // Looking again only when a character that can end a call arrived keeps
    // a long call linear in practice; the answer is the same, only later.
    if (!final && !dirty && buf.size() <= kMaxCallBytes) return false;
    dirty = false;
    const std::string_view view = std::string_view(buf).substr(0, kMaxCallBytes + 1);
    End e = spec.end(view);
    if (try_commit(e)) return scan_stream(final);
    if (e.kind == End::need_more && !final && buf.size() <= kMaxCallBytes) return false;
    if (e.kind == End::need_more) e.len = std::min(buf.size(), kMaxCallBytes);
    std::optional<std::vector<detail::Call>> calls;
    if (e.kind != End::invalid && e.len <= kMaxCallBytes)
      calls = spec.parse(std::string_view(buf).substr(0, e.len), e.kind == End::need_more);
    if (calls && ncalls + calls->size() <= kMaxCalls)
      accept(std::move(*calls));
    else
      reject(e.len);
    held = buf.substr(e.len);
    buf.clear();
    marker.clear();
    mode = content;
    return true;
  }

  // Whether the call's head has been read, within what the end finder left
  // (a head past the call's end would make the result depend on the split).
  bool try_commit(const End& e) {
    if (!stream || head_failed) return false;
    const size_t len = std::min(e.kind == End::need_more ? buf.size() : e.len, kMaxCallBytes);
    Step h = stream->first(std::string_view(buf).substr(0, len));
    head_failed = h.kind == Step::fail;
    if (h.kind != Step::commit) return false;
    begin(std::move(h));
    return true;
  }

  void begin(Step h) {
    current = ncalls++;
    out.calls.push_back({current, new_id(), function.empty() ? std::move(h.name) : function, ""});
    minifier = {};
    pos = h.at;
    array = h.array;
    phase = args;
  }

  // A committed call: its arguments, tail and any next calls of its block.
  // Returns whether it ended (content mode again).
  bool scan_stream(bool final) {
    const std::string_view text = std::string_view(buf).substr(0, kMaxCallBytes);
    const bool over = buf.size() > kMaxCallBytes;  // the rest is content
    for (;;) {
      if (phase == args) {
        std::string piece;
        const auto r = minifier.feed(text, pos, piece);
        if (!piece.empty()) out.calls.push_back({current, "", "", std::move(piece)});
        if (r == detail::ArgsMinifier::broken || (r == detail::ArgsMinifier::more && (over || final)))
          return end_stream(pos);
        if (r == detail::ArgsMinifier::more) return false;
        phase = tail;
        continue;
      }
      Step s = phase == tail ? stream->tail(text, pos, array) : stream->head(text, pos);
      if (s.kind == Step::need_more) {
        if (over) return end_stream(pos);
        // The output ended inside a tail: the call stands, its closing syntax unfinished.
        if (final) return end_stream(phase == tail ? buf.size() : pos);
        return false;
      }
      if (s.kind == Step::fail) return end_stream(phase == head ? pos : s.at);
      if (s.kind == Step::done) return end_stream(s.at);
      if (s.kind == Step::next) {
        pos = s.at, phase = head;
        continue;
      }
      if (ncalls >= kMaxCalls) return end_stream(pos);
      begin(std::move(s));
    }
  }

  // The committed call's text ends at `at`; what follows is content again.
  bool end_stream(size_t at) {
    held = buf.substr(at);
    buf.clear();
    marker.clear();
    phase = whole;
    mode = content;
    at_start = true;
    return true;
  }

  ParseStep run(bool final) {
    for (bool moved = true; moved;) moved = mode == call ? scan_call(final) : scan_content(final);
    return std::exchange(out, {});
  }
};

ToolCallParser::ToolCallParser(Format format) {
  if (format == Format::harmony)
    h_ = std::make_unique<HarmonyParser>(true);
  else
    s_ = std::make_unique<State>(format);
}
ToolCallParser ToolCallParser::harmony(bool calls) {
  ToolCallParser p(Format::harmony);
  p.h_ = std::make_unique<HarmonyParser>(calls);
  return p;
}
ToolCallParser ToolCallParser::for_function(Format format, std::string name) {
  ToolCallParser p(Format::hermes);
  p.s_ = std::make_unique<State>(format, detail::function_spec(), detail::function_stream_spec(), std::move(name));
  return p;
}
ToolCallParser ToolCallParser::for_array(Format format) {
  ToolCallParser p(Format::hermes);
  p.s_ = std::make_unique<State>(format, detail::array_spec(), detail::array_stream_spec(), std::string());
  return p;
}

ToolCallParser::~ToolCallParser() = default;
ToolCallParser::ToolCallParser(ToolCallParser&&) noexcept = default;
ToolCallParser& ToolCallParser::operator=(ToolCallParser&&) noexcept = default;

ParseStep ToolCallParser::push(std::string_view piece) {
  if (h_) return h_->push(piece);
  if (s_->mode == State::call) {
    s_->buf.append(piece);
    s_->dirty |= piece.find_first_of("<>[](){}|;") != std::string_view::npos;
  } else {
    s_->held.append(piece);
  }
  return s_->run(false);
}

ParseStep ToolCallParser::finish() { return h_ ? h_->finish() : s_->run(true); }

size_t ToolCallParser::calls() const { return h_ ? h_->calls() : s_->ncalls; }

void apply_deltas(std::vector<ToolCall>& calls, const std::vector<CallDelta>& deltas) {
  for (const auto& d : deltas) {
    if (d.index >= calls.size()) calls.resize(d.index + 1);
    ToolCall& c = calls[d.index];
    if (!d.id.empty()) c.id = d.id;
    c.name += d.name;
    c.arguments += d.arguments;
  }
}

ParsedOutput parse_all(Format format, std::string_view text) {
  ToolCallParser p(format);
  ParsedOutput out;
  for (ParseStep s : {p.push(text), p.finish()}) {
    out.content += s.content;
    out.reasoning += s.reasoning;
    apply_deltas(out.calls, s.calls);
  }
  return out;
}

}  // namespace pagoda::toolcall

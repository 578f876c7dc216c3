// libFuzzer target for the grammar's regex front end (see grammar_fuzz.h).
#include "grammar_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return pagoda::fuzz::fuzz_grammar_front_end(data, size, [](const std::string& text, const auto& limits) {
    return pagoda::grammar::compile_regex(text, limits);
  });
}

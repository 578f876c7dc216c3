// libFuzzer target for the grammar's tagged front end (see grammar_fuzz.h):
// schemas inside literal markup, as forced tool calls use it.
#include "grammar_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return pagoda::fuzz::fuzz_grammar_front_end(data, size, [](const std::string& text, const auto& limits) {
    pagoda::grammar::JsonSchemaOptions o;
    o.limits = limits;
    o.strict = text.size() % 2 == 0;  // both modes
    return pagoda::grammar::compile_tagged(text, o).grammar;
  });
}

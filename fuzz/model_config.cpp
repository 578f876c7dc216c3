// libFuzzer target for reading a model out of a GGUF file: the architecture's
// declaration (model/archs/) and the weights' loader, on any input. It must
// describe a model or throw a pagoda::Error; every matrix and vector it keeps
// must lie inside the input (ASan catches a read past it). Seeds: one tiny
// synthetic file per architecture, fuzz/corpus/model_config (the model tests
// load each, so they stay valid).
#include <cstddef>
#include <cstdint>

#include "gguf/file.h"
#include "model/config.h"
#include "model/weights.h"
#include "util/error.h"

namespace {

void check_inside(const pagoda::Matrix& m, const uint8_t* data, size_t size) {
  const size_t bytes = size_t(m.rows) * m.row_bytes;
  if (bytes == 0 || m.data < data || m.data + bytes > data + size) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const pagoda::GgufFile f = pagoda::GgufFile::parse(data, size, "fuzz");
    pagoda::ModelConfig c = pagoda::ModelConfig::from_gguf(f);
    if (c.layers.size() != size_t(c.n_layer) || !(c.attn_scale > 0)) __builtin_trap();
    const pagoda::ModelWeights w = pagoda::ModelWeights::load(f, c);
    check_inside(w.token_embd, data, size);
    check_inside(w.output, data, size);
    if (c.position_embd) check_inside(w.position_embd, data, size);
    for (const auto& l : w.layers)
      for (const pagoda::Matrix* m : l.matrices()) check_inside(*m, data, size);
  } catch (const pagoda::Error&) {
    // A file that is not a model Pagoda runs is refused with a clear error.
  }
  return 0;
}

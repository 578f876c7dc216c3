// libFuzzer target for the GGUF parser: any input must parse or throw a
// pagoda::Error. On success every metadata value is rendered and read as each
// type the model loader asks for, and every tensor's first and last byte is
// read, so a bad pointer or size that the parser let through is caught by
// ASan. Seeds: fuzz/corpus/gguf.
#include <cstddef>
#include <cstdint>

#include "gguf/file.h"
#include "util/error.h"

namespace {

template <class F>
void may_throw(F&& read) {
  try {
    read();
  } catch (const pagoda::Error&) {
    // A value of the wrong type is a clear error, not a bug.
  }
}

// Each typed read of v (and of the first few elements of an array) returns or throws pagoda::Error.
void read_every_way(const pagoda::Value& v) {
  may_throw([&] { (void)v.as_u64("v"); });
  may_throw([&] { (void)v.as_i64("v"); });
  may_throw([&] { (void)v.as_f64("v"); });
  may_throw([&] { (void)v.as_bool("v"); });
  may_throw([&] { (void)v.as_string("v"); });
  if (v.type() == pagoda::ValueType::ARRAY) {
    const auto& items = v.as_array("v");
    for (size_t i = 0; i < items.size() && i < 4; ++i) read_every_way(items[i]);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const pagoda::GgufFile f = pagoda::GgufFile::parse(data, size, "fuzz");
    size_t sink = f.alignment();
    for (const auto& [key, value] : f.metadata()) {
      sink += key.size() + value.to_display().size();
      read_every_way(value);
    }
    may_throw([&] { sink += f.get_string("general.architecture", "").size(); });
    may_throw([&] { sink += f.get_u64("general.alignment", 32); });
    for (const auto& t : f.tensors()) {
      if (t.n_bytes == 0 || t.data < data || t.data + t.n_bytes > data + size) __builtin_trap();
      sink += t.data[0] + t.data[t.n_bytes - 1] + t.rows();
      if (f.find_tensor(t.name) != &t) __builtin_trap();  // names are unique and indexed
    }
    volatile size_t keep = sink;  // keep the reads from being optimized away
    (void)keep;
  } catch (const pagoda::Error&) {
    // Rejecting the input with a clear error is the expected outcome for junk.
  }
  return 0;
}

#include "kv/types.h"

#include "util/error.h"

namespace pagoda {

KvType kv_type_from_name(std::string_view name) {
  if (name == "f32") return KvType::F32;
  if (name == "f16") return KvType::F16;
  fail<InvalidArgument>("KV cache type must be f32 or f16, got '{}'", name);
}

size_t kv_type_bytes(KvType t) { return t == KvType::F32 ? 4 : 2; }

}  // namespace pagoda

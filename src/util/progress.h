// Progress of a long start-up step (reading the model file, repacking its
// weights), reported to whoever listens: the CLI logs it, at most a line a
// second. A plain callback, so the layers that load (gguf, model) report
// without knowing about logs or servers. Called on one thread at a time (the
// loading thread, then a model's background mover, model/weight_mover.h), a
// few times per 64 MiB; an empty function is never called.
#pragma once

#include <cstdint>
#include <functional>

namespace pagoda {

// stage: "reading", "repacking" or "moving into memory"; done and total in bytes (done == total at the end of a stage).
using LoadProgress = std::function<void(const char* stage, uint64_t done, uint64_t total)>;

}  // namespace pagoda

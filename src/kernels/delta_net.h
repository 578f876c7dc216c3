// The Gated DeltaNet recurrence (Qwen3.5/3.6, Qwen3-Next linear attention),
// one head, one token: compiled with Highway for several targets and picked
// at run time (delta_net.cpp).
#pragma once

#include <cstddef>

namespace pagoda {

// One token's step of one head's state S (dv rows of dk floats; row j
// belongs to value dimension j), in place:
//   S *= decay;  d = beta * (v - S k);  S += d k^T;  o = scale * S q
// (the delta rule: S learns to map k to v at rate beta, after forgetting by
// `decay`). Each row depends only on itself, so one pass over S does it all:
// S is read and written once per token, the whole cost of a decode step.
// Rows that start as `s_in` (may equal s_out, or null for zeros) end in s_out.
void delta_net_step(const float* s_in, float* s_out, size_t dv, size_t dk, const float* q, const float* k,
                    const float* v, float decay, float beta, float scale, float* o);

}  // namespace pagoda

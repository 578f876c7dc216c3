// The two full-vocabulary passes of sampling (sampling/sampler.cpp), with
// Highway, picked at run time: the largest logit with a check that none is
// NaN or +inf, and the softmax's unnormalized weights. As scalar loops
// (std::exp a logit, ~5 ns) they took ~0.3 ms of every token of a 32k
// vocabulary, ~1% of a 1B model's batch-1 step on 2 cores.
#pragma once

#include <cstddef>

namespace pagoda {

struct LogitScan {
  float max = 0;    // the largest element (-inf when every one is -inf)
  bool ok = false;  // no element is NaN or +inf (-inf is allowed: a masked logit)
};
// Over x[0, n), n > 0.
LogitScan scan_logits(const float* x, size_t n);

// w[i] = exp((x[i] - shift) / divisor) for i in [0, n): Highway's vector exp
// (within 1 ULP of std::exp); x[i] = -inf gives 0. shift is finite and
// divisor > 0 (a division, as the scalar loop did: 1 / divisor may overflow).
void exp_weights(const float* x, size_t n, float shift, float divisor, float* w);

}  // namespace pagoda

// Runs a test body once per SIMD target that this CPU supports and the build
// compiled (the portable fallback included), so every kernel variant is
// tested on one machine, not only the one dispatch would pick.
#pragma once

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cstdint>

namespace pagoda::testing {

template <class Body>
void for_each_simd_target(Body body) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    SCOPED_TRACE(hwy::TargetName(target));
    body(target);
  }
  hwy::SetSupportedTargetsForTest(0);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
}

// Whether a target computes MulAdd as one fused operation (every x86 SIMD
// target does; the portable fallbacks round the product first).
inline bool target_fuses_multiply_add(int64_t target) { return target != HWY_EMU128 && target != HWY_SCALAR; }

}  // namespace pagoda::testing

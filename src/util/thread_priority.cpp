#include "util/thread_priority.h"

#if defined(__linux__)
#include <sched.h>
#endif

namespace pagoda {

bool run_as_batch_thread() {
#if defined(__linux__)
  // Unprivileged: lowering a thread from SCHED_OTHER to SCHED_BATCH needs no capability.
  sched_param param{};
  param.sched_priority = 0;
  return sched_setscheduler(0, SCHED_BATCH, &param) == 0;  // 0: the calling thread
#else
  return false;
#endif
}

}  // namespace pagoda

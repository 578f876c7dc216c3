#include "sched/sequence.h"

namespace pagoda {

const char* to_string(SeqState s) {
  switch (s) {
    case SeqState::waiting: return "waiting";
    case SeqState::prefill: return "prefill";
    case SeqState::decode: return "decode";
    case SeqState::preempted: return "preempted";
    case SeqState::finished: return "finished";
  }
  return "?";
}

}  // namespace pagoda

// Threads that serve the engine's output (the HTTP event loop) and must not
// take the core from the engine's compute threads when the engine wakes them.
#pragma once

namespace pagoda {

// Marks the calling thread as a batch thread (Linux SCHED_BATCH; elsewhere
// nothing). Why: the engine hands every token to the HTTP thread, waking it.
// A normal wakee may preempt its waker at once (the fair scheduler's wakeup
// preemption); with as many pool threads as cores there is often no idle
// core to put it on, so the engine thread, mid-step, lost its core to the
// JSON and socket write of the token it had just made (a step trace showed
// the handoff at ~1 ms a token on 2 cores). A batch thread is never woken
// into preemption: it runs on a core that is free, or when the running one
// has used its slice, and the step goes on. Its own latency is what a token's
// wait for the next step already is. Returns false when the call failed (the
// thread keeps its policy; nothing else changes).
bool run_as_batch_thread();

}  // namespace pagoda

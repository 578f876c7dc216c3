// Steps of a loop cut into parts, one part per thread, that a thread done
// with its own part helps to finish: the owner of a part takes its steps from
// the front, a run at a time, any other thread takes them from the back, one
// at a time, so every step runs exactly once and the part's front stays one
// sequential walk. For loops whose parts cost the same but whose threads do not run at
// the same speed: memory is not shared out evenly between cores
// (docs/performance.md, appendix "Kernel tuning").
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace pagoda {

class SharedSteps {
 public:
  // `parts` parts of `steps` steps each.
  SharedSteps(size_t parts, uint32_t steps);

  size_t parts() const { return parts_; }
  // The next run of steps from the front of `part`, [begin, end): a quarter
  // of the steps left, at least one; none when it has no step left. Runs
  // spare the owner an atomic operation per step (a locked instruction waits
  // for the loads before it; measured in docs/performance.md appendix), and shrink as the part
  // does, so helpers still find steps at its back.
  std::optional<std::pair<uint32_t, uint32_t>> take_front(size_t part);
  // A step from the back of the part with the most steps left: {part, step},
  // or none when every part is done.
  std::optional<std::pair<size_t, uint32_t>> take_back();

 private:
  // [front, back) of the steps not yet taken, packed as front << 32 | back,
  // one cache line per part so owners do not contend.
  struct alignas(64) Range {
    std::atomic<uint64_t> v{0};
  };
  size_t parts_;
  std::unique_ptr<Range[]> ranges_;
};

}  // namespace pagoda

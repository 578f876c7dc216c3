// Steps of a loop cut into parts, one part per thread, that a thread done
// with its own part helps to finish: the owner of a part takes its steps from
// the front, any other thread takes them from the back, one at a time, so
// every step runs exactly once and the part's front stays one sequential
// walk. For loops whose parts cost the same but whose threads do not run at
// the same speed: in 1B decode matmuls on the 2-core VM, one thread finished
// its half 10-18% of the loop's time before the other (memory is not shared
// out evenly between cores).
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
  // The next step from the front of `part`, or none when it has no step left.
  std::optional<uint32_t> take_front(size_t part);
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

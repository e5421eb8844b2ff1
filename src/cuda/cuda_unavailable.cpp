// Linked when mseloss is built without CUDA: the CUDA device is refused with
// a clear error, and cuda_available() says so.
#include "common/problem.hpp"

namespace mseloss::detail::cuda {

bool available() { return false; }

void run(const Problem&) {
  throw Unavailable("device cuda: this build of mseloss has no CUDA backend (configure with nvcc present)");
}

}  // namespace mseloss::detail::cuda

// See late_writer.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace testing_mse {

// Copies `bytes` from src to dst on `stream`, after a spin of delay_ns, in a
// kernel that allows the next kernel of the stream to launch as it starts.
cudaError_t launch_late_copy(void* dst, const void* src, std::size_t bytes, unsigned long long delay_ns,
                             cudaStream_t stream);

}  // namespace testing_mse

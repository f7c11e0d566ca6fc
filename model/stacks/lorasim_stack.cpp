// The runner's notes; its counts are model/analytics.cpp's.
#include "model/stacks/lorasim_stack.h"

namespace lorasim::model {

std::string LorasimStack::memory_note(const StackSpec&, bool asynchronous, const std::string&) const {
  if (!asynchronous) return "";
  return "reserved memory assumes PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (what "
         "`lorasim calibrate` runs with); PyTorch's default allocator can hold up to one "
         "more fp32 logits buffer (b x seq x vocab x 4 bytes)";
}

}  // namespace lorasim::model

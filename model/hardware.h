// The cost model's view of a device: datasheet figures plus fitted coefficients.
// hwprofiles/ reads and writes these from TOML; calibrate/ fits them.
#pragma once
#include <cstdint>
#include <string>

#include "model/stack_terms.h"
#include "model/workload.h"

namespace lorasim::model {

/// How host dispatch and device work combine within a micro-batch.
enum class Overlap {
  max,  ///< asynchronous device (CUDA): the slower of the two sets the pace
  sum,  ///< synchronous device (CPU): host and compute time add
};

/// Step-time coefficients (see docs/cost-model.md for the equations).
struct TimeCoefficients {
  double host_fixed_s = 0;          ///< host time per micro-batch, independent of size
  double host_per_op_s = 0;         ///< host time per dispatched operator
  double recompute_host_share = 1;  ///< host cost of a checkpointed block's extra forward
                                    ///< operators relative to ordinary ones (that forward
                                    ///< runs without autograd recording, so it is cheaper)
  double device_fixed_s = 0;        ///< device time per micro-batch, independent of size
  double gemm_tflops = 1;           ///< asymptotic GEMM rate, TFLOP/s
  double gemm_half_tokens = 0;      ///< tokens at which GEMMs reach half that rate (Hockney n_1/2)
  double head_tflops = 1;           ///< LM-head GEMM rate (one large GEMM), TFLOP/s
  double attention_tflops = 1;      ///< attention rate, TFLOP/s
  double memory_gbps = 1;           ///< effective bandwidth of the blocks' memory-bound operators, GB/s
  double loss_gbps = 1;             ///< effective bandwidth of the loss over the vocabulary, GB/s
  double per_kernel_s = 0;          ///< device time floor per operator
  double overlap_loss = 0;          ///< share of the shorter of host/device time that fails to
                                    ///< overlap once a micro-batch outgrows the launch queue
  double launch_queue_ops = 1024;   ///< operators the host can run ahead of the device (CUDA's
                                    ///< launch queue); shorter micro-batches overlap fully
  double optimizer_fixed_s = 0;     ///< AdamW step + zero_grad: host time, fixed part
  double optimizer_per_tensor_s = 0;  ///< host time per adapter tensor (per-tensor dispatch)
  double optimizer_device_per_tensor_s = 0;  ///< device time per adapter tensor (kernel floors)
  double optimizer_per_param_s = 0;   ///< device time per trainable parameter (update bandwidth)
};

/// Peak-memory coefficients: multipliers on the analytic terms of model/analytics.h.
struct MemoryCoefficients {
  double saved_scale = 1;            ///< x analytic saved activations
  double attention_score_scale = 0;  ///< x b*H*s*s scores (0 with fused attention)
  double logits_scale = 1;           ///< x analytic logits/loss buffers
  double workspace_bytes = 0;        ///< allocator-visible constant (library workspaces, tables)
  double reserved_scale = 1;         ///< caching allocator: reserved = scale * allocated + overhead
  double reserved_overhead_bytes = 0;
  double context_bytes = 0;          ///< device memory outside the allocator (CUDA context, kernels)
};

struct HardwareModel {
  std::string name;                  ///< short name: "h200", "cpu"
  std::string display_name;          ///< "NVIDIA H200 SXM 141GB"
  int64_t memory_bytes = 0;          ///< total device memory
  bool bf16_supported = true;
  double peak_bf16_tflops = 0;       ///< dense tensor-core peak, datasheet
  double peak_fp16_tflops = 0;
  double peak_fp32_tflops = 0;       ///< plain fp32 (no TF32)
  double hbm_bandwidth_gbps = 0;     ///< datasheet memory bandwidth
  Precision coefficients_precision = Precision::bf16;  ///< precision the rates were fitted in
  Overlap overlap = Overlap::max;
  TimeCoefficients time;
  MemoryCoefficients memory;
  bool calibrated = false;           ///< fitted from measurements (true) or a datasheet prior
  double expected_time_error = 0.5;  ///< typical relative step-time error of these coefficients
  double expected_memory_error = 0.2;  ///< typical relative peak-memory error
  StackTerms hf_peft;                ///< the hf-peft stack's terms ([stack.hf-peft]; priors if absent)
  /// Set by for_stack (model/stack_terms.h) for the model a stack's workload runs on: the
  /// stack's device-time multiplier and allocator slack. 1 and 0 for the device's own terms.
  double device_scale = 1.0;
  double head_device_scale = 1.0;  ///< the same for the LM head and the loss
  double reserved_logits_share = 0.0;
  double reserved_activation_share = 0.0;
  /// Share of the reserved peak the worst case adds (a stack's expected memory error: the
  /// allocator slack its calibration cannot pin down); 0 for the device's own terms.
  double worst_case_margin = 0.0;
  /// Relative deviations of the host's and the device's time that bound a step's range
  /// (StepTime::low_s/high_s). Set by for_stack: the stack's host_spread and device_spread,
  /// or for the lorasim stack both the profile's expected_time_error.
  double host_spread = 0.0;
  double device_spread = 0.0;
  bool stack_applied = false;  ///< for_stack has put a stack's terms in place (a fit's view)

  /// Datasheet peak for `p`, TFLOP/s (0 when unknown).
  double peak_tflops(Precision p) const;
};

}  // namespace lorasim::model

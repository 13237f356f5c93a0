#include "batching/idle_diagnosis.h"

#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace coalesce {
namespace {

using S = InstanceState;

std::string Percent(double fraction) {
  return absl::StrCat(std::lround(fraction * 100), "%");
}

}  // namespace

IdleDiagnosis DiagnoseInstance(const InstanceWindow& w) {
  const double total = static_cast<double>(w.states.Total().count());
  if (total <= 0) return {"no_traffic", "no time observed yet"};
  auto share = [&](S s) { return w.states[s].count() / total; };
  const double copy_in = share(S::kCopyingIn);
  const double copy_out = share(S::kCopyingOut);
  const double busy = share(S::kComputing) + copy_in + copy_out;
  const double empty = share(S::kIdleEmptyQueue);
  const double assembling = share(S::kIdleAssembling);
  const double blocked = share(S::kBlockedPipeline);
  const double rows = w.executions > 0 ? static_cast<double>(w.inferences) /
                                             static_cast<double>(w.executions)
                                       : 0.0;

  if (w.executions == 0 && empty >= 0.95) {
    return {"no_traffic", absl::StrCat("no batch ran; the queue was empty ",
                                       Percent(empty), " of the time")};
  }
  if (busy >= 0.85) {
    return {"saturated",
            absl::StrCat("busy ", Percent(busy),
                         " of the time: this instance is the bottleneck; add "
                         "instances, GPUs or replicas")};
  }
  const double copies = copy_in + copy_out;
  if (busy > 0 && copies / busy >= 0.4 && copies >= 0.1) {
    const bool in = copy_in >= copy_out;
    return {"copy_bound",
            absl::StrCat(in ? "copy-in" : "copy-out", " takes ",
                         Percent((in ? copy_in : copy_out) / busy),
                         " of busy time: ",
                         in ? "send smaller inputs (FP16/UINT8) or use shared "
                              "memory"
                            : "request fewer or smaller outputs")};
  }
  if (blocked >= 0.25) {
    return {"pipeline_blocked",
            absl::StrCat("batches held the instance's slots off the device ",
                         Percent(blocked),
                         " of the time: answering is slow; give the server "
                         "more CPU")};
  }
  auto ms = [](Clock::Duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
  };
  if (assembling >= 0.25 && w.latency_target > Clock::Duration::zero()) {
    return {"latency_target",
            absl::StrFormat(
                "requests waited for a batch to fill %s of the time, as the "
                "latency target allows (p99 %.3g ms: the batcher waits up to "
                "%.3g ms for batches of %d); raise the load or lower "
                "latency_target_p99_ms to wait less",
                Percent(assembling), ms(w.latency_target), ms(w.target_wait),
                w.target_batch_size)};
  }
  if (assembling >= 0.25) {
    return {"assembling",
            absl::StrFormat(
                "requests waited for a batch to fill %s of the time "
                "(max_queue_delay %.3g ms): lower max_queue_delay_microseconds "
                "or preferred_batch_size",
                Percent(assembling), ms(w.max_queue_delay))};
  }
  if (empty >= 0.5) {
    if (w.max_batch_size > 1 && w.executions > 0 && rows < 2) {
      return {"small_batches",
              absl::StrFormat("batches average %.1f rows while the queue is "
                              "empty %s of the time: offered load is too low "
                              "to batch",
                              rows, Percent(empty))};
    }
    return {"low_load",
            absl::StrCat("queue empty ", Percent(empty),
                         " of the time: offered load is too low to keep this "
                         "instance busy")};
  }
  return {"ok",
          absl::StrCat("busy ", Percent(busy), ", queue empty ", Percent(empty),
                       ", batching wait ", Percent(assembling), ", blocked ",
                       Percent(blocked), ": no single cause dominates")};
}

}  // namespace coalesce

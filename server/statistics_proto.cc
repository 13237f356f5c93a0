#include "server/statistics_proto.h"

#include <string>

namespace coalesce {
namespace {

void Fill(const DurationStat& from, inference::StatisticDuration* to) {
  to->set_count(from.count);
  to->set_ns(from.ns);
}

}  // namespace

void FillModelStatistics(const ServedModel& model,
                         inference::ModelStatistics* out) {
  const ModelStatsSnapshot stats = model.batcher->Stats();
  out->set_name(model.name);
  out->set_version(std::to_string(model.version));
  out->set_last_inference(stats.last_inference_ms);
  out->set_inference_count(stats.inference_count);
  out->set_execution_count(stats.execution_count);
  auto* infer = out->mutable_inference_stats();
  Fill(stats.success, infer->mutable_success());
  Fill(stats.fail, infer->mutable_fail());
  Fill(stats.queue, infer->mutable_queue());
  Fill(stats.compute_input, infer->mutable_compute_input());
  Fill(stats.compute_infer, infer->mutable_compute_infer());
  Fill(stats.compute_output, infer->mutable_compute_output());
  infer->mutable_cache_hit();
  infer->mutable_cache_miss();
  for (const auto& [batch_size, batch] : stats.batch_stats) {
    auto* entry = out->add_batch_stats();
    entry->set_batch_size(batch_size);
    Fill(batch.compute_input, entry->mutable_compute_input());
    Fill(batch.compute_infer, entry->mutable_compute_infer());
    Fill(batch.compute_output, entry->mutable_compute_output());
  }
}

}  // namespace coalesce

#include "batching/instance_timeline.h"

#include <algorithm>

namespace coalesce {

const char* InstanceStateName(InstanceState state) {
  switch (state) {
    case InstanceState::kComputing:
      return "computing";
    case InstanceState::kCopyingIn:
      return "copying_in";
    case InstanceState::kCopyingOut:
      return "copying_out";
    case InstanceState::kBlockedPipeline:
      return "blocked_pipeline";
    case InstanceState::kIdleAssembling:
      return "idle_assembling";
    case InstanceState::kIdleEmptyQueue:
      return "idle_empty_queue";
  }
  return "unknown";
}

Clock::Duration InstanceStateTotals::Total() const {
  Clock::Duration sum{0};
  for (Clock::Duration d : time) sum += d;
  return sum;
}

InstanceTimeline::InstanceTimeline(Clock::TimePoint start)
    : final_until_(start) {}

InstanceState InstanceTimeline::IdleState() const {
  return queue_empty_ ? InstanceState::kIdleEmptyQueue
                      : InstanceState::kIdleAssembling;
}

void InstanceTimeline::QueueChanged(Clock::TimePoint now, bool empty) {
  if (empty == queue_empty_) return;
  if (in_flight_.empty()) {
    totals_.time[static_cast<int>(IdleState())] += now - final_until_;
    final_until_ = now;
  }
  queue_empty_ = empty;
}

uint64_t InstanceTimeline::BatchTaken(Clock::TimePoint now) {
  if (in_flight_.empty()) {
    totals_.time[static_cast<int>(IdleState())] += now - final_until_;
    final_until_ = now;
  }
  const uint64_t ticket = next_ticket_++;
  in_flight_.emplace_back(ticket, now);
  return ticket;
}

void InstanceTimeline::BatchReleased(uint64_t ticket, Clock::TimePoint now,
                                     const BatchIntervals& steps) {
  auto it = std::find_if(in_flight_.begin(), in_flight_.end(),
                         [ticket](const auto& f) { return f.first == ticket; });
  if (it == in_flight_.end()) return;
  const Clock::TimePoint taken = it->second;
  in_flight_.erase(it);
  auto add = [&](const TimeInterval& i, InstanceState state) {
    TimeInterval clipped{std::max(i.begin, taken), std::min(i.end, now)};
    if (clipped.begin < clipped.end) pending_.push_back({clipped, state});
  };
  add(steps.run, InstanceState::kComputing);
  add(steps.gather, InstanceState::kCopyingIn);
  add(steps.copy_in, InstanceState::kCopyingIn);
  add(steps.copy_out, InstanceState::kCopyingOut);
  add(steps.scatter, InstanceState::kCopyingOut);
  // Batches still in flight may have steps anywhere after they were taken,
  // so only time before the oldest of them is final.
  Clock::TimePoint until = now;
  for (const auto& [unused, taken_at] : in_flight_) {
    until = std::min(until, taken_at);
  }
  FinalizeBusy(until);
}

void InstanceTimeline::FinalizeBusy(Clock::TimePoint until) {
  if (until <= final_until_) return;
  // Elementary segments between every step boundary inside the window; each
  // goes to the highest-priority step covering it, else blocked_pipeline.
  std::vector<Clock::TimePoint>& cuts = cuts_;
  cuts.assign({final_until_, until});
  for (const Step& s : pending_) {
    for (Clock::TimePoint t : {s.interval.begin, s.interval.end}) {
      if (t > final_until_ && t < until) cuts.push_back(t);
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    InstanceState state = InstanceState::kBlockedPipeline;
    for (const Step& s : pending_) {
      if (s.interval.begin <= cuts[i] && s.interval.end >= cuts[i + 1] &&
          s.state < state) {
        state = s.state;
      }
    }
    totals_.time[static_cast<int>(state)] += cuts[i + 1] - cuts[i];
  }
  final_until_ = until;
  std::erase_if(pending_,
                [until](const Step& s) { return s.interval.end <= until; });
}

InstanceStateTotals InstanceTimeline::Totals(Clock::TimePoint now) const {
  InstanceStateTotals totals = totals_;
  if (in_flight_.empty() && now > final_until_) {
    totals.time[static_cast<int>(IdleState())] += now - final_until_;
  }
  return totals;
}

}  // namespace coalesce

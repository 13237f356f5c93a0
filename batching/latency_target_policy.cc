#include "batching/latency_target_policy.h"

#include <algorithm>
#include <chrono>

namespace coalesce {
namespace {

constexpr Clock::Duration kRefresh = std::chrono::milliseconds(10);
constexpr size_t kAnswersPerUpdate = 200;
constexpr double kMinMargin = 0.25;
constexpr double kMaxMargin = 1.0;
constexpr double kGrowBelow = 0.85;  // of the target
constexpr double kGrowStep = 0.05;
constexpr double kShrinkBelow = 0.95;  // of the proportional margin
constexpr double kKeepUpHeadroom = 1.1;
constexpr double kAmpleHeadroom = 2.0;
constexpr double kEfficientEnough = 0.95;  // of the best rows per second
constexpr double kFillSlack = 1.25;
constexpr int kFirstProbe = 16;
constexpr int kLastProbe = 1024;

double Seconds(Clock::Duration d) {
  return std::chrono::duration<double>(d).count();
}

Clock::Duration FromSeconds(double s) {
  return std::chrono::duration_cast<Clock::Duration>(
      std::chrono::duration<double>(s));
}

}  // namespace

LatencyTargetPolicy::LatencyTargetPolicy(Clock::Duration target,
                                         int max_batch_size, int instances)
    : target_(target),
      max_batch_size_(std::max(1, max_batch_size)),
      service_(static_cast<size_t>(std::max(1, instances)),
               ServiceTimeModel(std::max(1, max_batch_size))),
      retired_(service_.size(), false),
      ceiling_(max_batch_size_) {}

void LatencyTargetPolicy::RecordFormed(int64_t rows, int64_t rows_left,
                                       bool waited_out) {
  const int before = ceiling_;
  if (waited_out) {
    if (probing_) probe_ = std::min(kLastProbe, probe_ * 2);
    probing_ = false;
    filled_ = 0;
    ceiling_ = static_cast<int>(std::clamp<int64_t>(rows, 1, max_batch_size_));
  } else if (rows + rows_left > ceiling_) {
    ceiling_ =
        static_cast<int>(std::min<int64_t>(rows + rows_left, max_batch_size_));
    probing_ = false;
    probe_ = kFirstProbe;
    filled_ = 0;
  } else if (rows >= ceiling_) {
    if (probing_) {  // the try filled: the load grew
      probing_ = false;
      probe_ = kFirstProbe;
    }
    if (ceiling_ < max_batch_size_ && ++filled_ >= probe_) {
      ++ceiling_;
      probing_ = true;
      filled_ = 0;
    }
  }
  if (ceiling_ != before) decided_at_.reset();
}

void LatencyTargetPolicy::RecordArrival(Clock::TimePoint now, int64_t rows) {
  arrivals_.Record(now, static_cast<int>(std::max<int64_t>(1, rows)));
  changed_ = true;
}

void LatencyTargetPolicy::RecordBatch(int instance, int64_t rows,
                                      Clock::Duration took) {
  if (instance < 0 || static_cast<size_t>(instance) >= service_.size()) return;
  service_[instance].Record(static_cast<int>(rows), took);
  changed_ = true;
}

void LatencyTargetPolicy::RecordAnswer(Clock::Duration latency) {
  answers_.push_back(latency);
  if (answers_.size() >= kAnswersPerUpdate) UpdateMargin();
}

void LatencyTargetPolicy::RetireInstance(int instance) {
  if (instance < 0 || static_cast<size_t>(instance) >= retired_.size()) return;
  retired_[instance] = true;
  decided_at_.reset();  // decide again with the instances left
}

void LatencyTargetPolicy::UpdateMargin() {
  std::vector<Clock::Duration> sorted;
  sorted.swap(answers_);
  // The 99th percentile by rank: the smallest value with >= 99 % at or
  // below it.
  const size_t rank = (sorted.size() * 99 + 99) / 100;
  std::nth_element(sorted.begin(), sorted.begin() + (rank - 1), sorted.end());
  const Clock::Duration p99 = sorted[rank - 1];
  observed_p99_ = p99;
  if (p99 > target_) {
    margin_ = std::max(
        kMinMargin, margin_ * kShrinkBelow * Seconds(target_) / Seconds(p99));
  } else if (Seconds(p99) < kGrowBelow * Seconds(target_)) {
    margin_ = std::min(kMaxMargin, margin_ + kGrowStep);
  }
  decided_at_.reset();
}

std::vector<std::optional<Clock::Duration>> LatencyTargetPolicy::PredictSizes()
    const {
  std::vector<std::optional<Clock::Duration>> slowest(max_batch_size_);
  for (size_t i = 0; i < service_.size(); ++i) {
    if (retired_[i]) continue;
    const auto predicted = service_[i].PredictAll();
    for (size_t b = 0; b < slowest.size(); ++b) {
      if (predicted[b] && (!slowest[b] || *predicted[b] > *slowest[b])) {
        slowest[b] = predicted[b];
      }
    }
  }
  return slowest;
}

const LatencyDecision& LatencyTargetPolicy::Decide(Clock::TimePoint now) {
  if (!decided_at_ || (changed_ && now - *decided_at_ >= kRefresh)) {
    predicted_ = PredictSizes();
    decision_ = Compute(now);
    decided_at_ = now;
    changed_ = false;
  }
  return decision_;
}

LatencyDecision LatencyTargetPolicy::Compute(Clock::TimePoint now) const {
  LatencyDecision decision;
  const double rate = arrivals_.PerSecond(now);
  const double budget = Seconds(target_) * margin_;
  int instances = 0;
  for (bool retired : retired_) instances += retired ? 0 : 1;
  auto fill = [rate](int b) {
    if (b == 1) return 0.0;
    return rate > 0 ? (b - 1) / rate : 1e30;
  };
  // Steps 1 and 2: the feasible sizes and their best rows per second.
  double best = 0;
  for (int b = 1; b <= max_batch_size_; ++b) {
    const auto& s = predicted_[b - 1];
    if (!s) continue;
    const double service = std::max(1e-9, Seconds(*s));
    if (fill(b) + 2 * service <= budget) best = std::max(best, b / service);
  }
  std::optional<int> chosen;
  std::optional<int> keeps_up;
  std::optional<int> ample;
  for (int b = 1; b <= max_batch_size_; ++b) {
    const auto& s = predicted_[b - 1];
    if (!s) continue;
    const double service = std::max(1e-9, Seconds(*s));
    if (!chosen && fill(b) + 2 * service <= budget &&
        b / service >= kEfficientEnough * best) {
      chosen = b;
    }
    const double rows_per_second = std::max(1, instances) * b / service;
    if (!keeps_up && rows_per_second >= kKeepUpHeadroom * rate) keeps_up = b;
    if (!ample && rows_per_second >= kAmpleHeadroom * rate) ample = b;
  }
  if (predicted_.empty() || !predicted_.front()) return decision;
  // Step 3: no more than twice the load needs; step 4: throughput first (no
  // size keeps up: the most efficient feasible one, else the largest); step
  // 6: no more than the load fills.
  const int efficient =
      std::min(chosen.value_or(1), ample.value_or(max_batch_size_));
  const int b = std::min(
      ceiling_,
      std::max(efficient, keeps_up.value_or(chosen.value_or(max_batch_size_))));
  decision.batch_size = b;
  const double service =
      Seconds(predicted_[b - 1].value_or(Clock::Duration(0)));
  const double wait = std::clamp(kFillSlack * fill(b), 0.0,
                                 std::max(0.0, budget - 2 * service));
  decision.wait = b == 1 ? Clock::Duration(0) : FromSeconds(wait);
  decision.predicted_p99 = FromSeconds(std::min(wait, fill(b)) + 2 * service);
  return decision;
}

std::optional<Clock::Duration> LatencyTargetPolicy::PredictService(
    int64_t rows) const {
  if (predicted_.empty() || rows < 1) return std::nullopt;
  return predicted_[std::min<int64_t>(rows, max_batch_size_) - 1];
}

bool LatencyTargetPolicy::ShouldShed(Clock::TimePoint enqueued,
                                     Clock::TimePoint deadline,
                                     Clock::TimePoint now, int64_t rows) const {
  const std::optional<Clock::Duration> service = PredictService(rows);
  if (!service) return false;
  const Clock::TimePoint done = now + *service;
  const bool target_reachable = *service < target_;
  return (target_reachable && done > enqueued + target_) || done > deadline;
}

LatencyTargetSnapshot LatencyTargetPolicy::Snapshot(
    Clock::TimePoint now) const {
  LatencyTargetSnapshot s;
  s.target = target_;
  s.margin = margin_;
  s.arrival_rows_per_second = arrivals_.PerSecond(now);
  s.decision = decision_;
  s.ceiling = ceiling_;
  s.observed_p99 = observed_p99_;
  s.shed = shed_;
  return s;
}

}  // namespace coalesce

#include "batching/service_time_model.h"

#include <algorithm>
#include <cstdint>

namespace coalesce {
namespace {

double MedianOf(std::vector<double> v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  return (*std::max_element(v.begin(), v.begin() + mid) + upper) / 2;
}

}  // namespace

ServiceTimeModel::ServiceTimeModel(int max_batch_size, int window)
    : window_(static_cast<size_t>(std::max(1, window))),
      recent_(static_cast<size_t>(std::max(1, max_batch_size))) {}

void ServiceTimeModel::Record(int batch_size, Clock::Duration took) {
  if (batch_size < 1 || batch_size > max_batch_size()) return;
  std::deque<Clock::Duration>& samples = recent_[batch_size - 1];
  samples.push_back(took);
  if (samples.size() > window_) samples.pop_front();
}

int ServiceTimeModel::samples(int batch_size) const {
  if (batch_size < 1 || batch_size > max_batch_size()) return 0;
  return static_cast<int>(recent_[batch_size - 1].size());
}

std::optional<Clock::Duration> ServiceTimeModel::Median(int batch_size) const {
  const std::deque<Clock::Duration>& samples = recent_[batch_size - 1];
  if (samples.empty()) return std::nullopt;
  std::vector<double> ns;
  ns.reserve(samples.size());
  for (Clock::Duration d : samples)
    ns.push_back(static_cast<double>(d.count()));
  return Clock::Duration(static_cast<int64_t>(MedianOf(std::move(ns))));
}

ServiceTimeModel::Points ServiceTimeModel::SeenMedians() const {
  Points points;
  for (int b = 1; b <= max_batch_size(); ++b) {
    if (auto m = Median(b)) {
      points.emplace_back(b, static_cast<double>(m->count()));
    }
  }
  return points;
}

std::pair<double, double> ServiceTimeModel::TheilSen(const Points& all) {
  if (all.size() < 2) return {0.0, 0.0};
  // At most kFitPoints sizes, evenly spread: the pairs grow as the square,
  // and the batcher refits up to every 10 ms under its lock.
  constexpr size_t kFitPoints = 48;
  Points points;
  const size_t step = (all.size() + kFitPoints - 1) / kFitPoints;
  for (size_t i = 0; i < all.size(); i += step) points.push_back(all[i]);
  std::vector<double> slopes;
  for (size_t i = 0; i < points.size(); ++i) {
    for (size_t j = i + 1; j < points.size(); ++j) {
      slopes.push_back((points[j].second - points[i].second) /
                       (points[j].first - points[i].first));
    }
  }
  const double per_row = std::max(0.0, MedianOf(std::move(slopes)));
  std::vector<double> intercepts;
  for (const auto& [b, t] : points) intercepts.push_back(t - per_row * b);
  return {MedianOf(std::move(intercepts)), per_row};
}

Clock::Duration ServiceTimeModel::Estimate(const Points& points,
                                           std::pair<double, double> line,
                                           int batch_size) {
  // Between two seen sizes: the straight line between them.
  const auto above = std::lower_bound(
      points.begin(), points.end(), batch_size,
      [](const std::pair<int, double>& p, int b) { return p.first < b; });
  if (above != points.begin() && above != points.end()) {
    const auto [b0, t0] = *(above - 1);
    const auto [b1, t1] = *above;
    return Clock::Duration(
        static_cast<int64_t>(t0 + (t1 - t0) * (batch_size - b0) / (b1 - b0)));
  }
  const double estimate = points.size() == 1
                              ? points[0].second * batch_size / points[0].first
                              : line.first + line.second * batch_size;
  return Clock::Duration(static_cast<int64_t>(std::max(0.0, estimate)));
}

std::optional<Clock::Duration> ServiceTimeModel::Predict(int batch_size) const {
  if (batch_size < 1 || batch_size > max_batch_size()) return std::nullopt;
  if (auto seen = Median(batch_size)) return seen;
  const Points points = SeenMedians();
  if (points.empty()) return std::nullopt;
  return Estimate(points, TheilSen(points), batch_size);
}

std::vector<std::optional<Clock::Duration>> ServiceTimeModel::PredictAll()
    const {
  std::vector<std::optional<Clock::Duration>> all(recent_.size());
  const Points points = SeenMedians();
  if (points.empty()) return all;
  const std::pair<double, double> line = TheilSen(points);
  size_t next_seen = 0;
  for (int b = 1; b <= max_batch_size(); ++b) {
    if (next_seen < points.size() && points[next_seen].first == b) {
      all[b - 1] =
          Clock::Duration(static_cast<int64_t>(points[next_seen++].second));
    } else {
      all[b - 1] = Estimate(points, line, b);
    }
  }
  return all;
}

}  // namespace coalesce

#include "benchmarks/coalesce_bench/svg_plot.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace coalesce::bench {
namespace {

constexpr double kWidth = 760, kHeight = 460;
constexpr double kLeft = 80, kRight = 30, kTop = 50, kBottom = 60;
constexpr int kTicks = 5;
constexpr const char* kP50Color = "#1f77b4";
constexpr const char* kP99Color = "#d62728";

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

// Maps data coordinates to the plot area.
struct Frame {
  double x_max, y_max;
  double X(double x) const {
    return kLeft + x / x_max * (kWidth - kLeft - kRight);
  }
  double Y(double y) const {
    return kHeight - kBottom - y / y_max * (kHeight - kTop - kBottom);
  }
};

std::string Text(double x, double y, const std::string& anchor,
                 const std::string& text, const std::string& extra = "") {
  return absl::StrFormat(
      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" %s>%s</text>\n", x, y,
      anchor, extra, XmlEscape(text));
}

std::string Axes(const Frame& f, double x_step, double y_step) {
  std::string out;
  for (int i = 0; i * x_step <= f.x_max * (1 + 1e-9); ++i) {
    const double x = f.X(i * x_step);
    absl::StrAppend(&out,
                    absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                                    "y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                                    x, f.Y(0), x, f.Y(f.y_max)));
    absl::StrAppend(&out, Text(x, f.Y(0) + 18, "middle",
                               absl::StrFormat("%g", i * x_step)));
  }
  for (int i = 0; i * y_step <= f.y_max * (1 + 1e-9); ++i) {
    const double y = f.Y(i * y_step);
    absl::StrAppend(&out,
                    absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                                    "y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                                    f.X(0), y, f.X(f.x_max), y));
    absl::StrAppend(&out, Text(f.X(0) - 8, y + 4, "end",
                               absl::StrFormat("%g", i * y_step)));
  }
  absl::StrAppend(&out,
                  absl::StrFormat("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                                  "height=\"%.1f\" fill=\"none\" "
                                  "stroke=\"#333\"/>\n",
                                  kLeft, kTop, kWidth - kLeft - kRight,
                                  kHeight - kTop - kBottom));
  absl::StrAppend(&out, Text((kLeft + kWidth - kRight) / 2, kHeight - 15,
                             "middle", "throughput (infer/s)"));
  absl::StrAppend(
      &out, Text(20, (kTop + kHeight - kBottom) / 2, "middle", "latency (ms)",
                 absl::StrFormat("transform=\"rotate(-90 20 %.1f)\"",
                                 (kTop + kHeight - kBottom) / 2)));
  return out;
}

std::string Series(const Frame& f, const std::vector<PlotPoint>& points,
                   bool p99, const char* color) {
  std::string line;
  std::string marks;
  for (const PlotPoint& p : points) {
    const double x = f.X(p.throughput), y = f.Y(p99 ? p.p99_ms : p.p50_ms);
    absl::StrAppend(&line, absl::StrFormat("%.1f,%.1f ", x, y));
    absl::StrAppend(
        &marks, absl::StrFormat(
                    "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n",
                    x, y, color));
    if (p99 && !p.label.empty()) {
      absl::StrAppend(&marks, Text(x + 5, y - 6, "start", p.label,
                                   "font-size=\"10\" fill=\"#555\""));
    }
  }
  return absl::StrCat(absl::StrFormat("<polyline fill=\"none\" stroke=\"%s\" "
                                      "stroke-width=\"2\" points=\"%s\"/>\n",
                                      color, line),
                      marks);
}

std::string Legend() {
  std::string out;
  const double x = kLeft + 12, y = kTop + 16;
  absl::StrAppend(
      &out,
      absl::StrFormat(
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
          "stroke-width=\"2\"/>\n",
          x, y, x + 20, y, kP99Color));
  absl::StrAppend(&out, Text(x + 26, y + 4, "start", "p99"));
  absl::StrAppend(
      &out,
      absl::StrFormat(
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
          "stroke-width=\"2\"/>\n",
          x, y + 18, x + 20, y + 18, kP50Color));
  absl::StrAppend(&out, Text(x + 26, y + 22, "start", "p50"));
  return out;
}

}  // namespace

double NiceStep(double max, int ticks) {
  const double raw = max / ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

std::string RenderLatencySvg(const std::vector<PlotPoint>& points,
                             const std::string& title) {
  double x_max = 0, y_max = 0;
  for (const PlotPoint& p : points) {
    x_max = std::max(x_max, p.throughput);
    y_max = std::max({y_max, p.p50_ms, p.p99_ms});
  }
  const double x_step = NiceStep(x_max > 0 ? x_max * 1.05 : 1, kTicks);
  const double y_step = NiceStep(y_max > 0 ? y_max * 1.05 : 1, kTicks);
  const Frame f{std::ceil((x_max > 0 ? x_max * 1.05 : 1) / x_step) * x_step,
                std::ceil((y_max > 0 ? y_max * 1.05 : 1) / y_step) * y_step};
  return absl::StrCat(
      absl::StrFormat(
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
          "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
          "font-family=\"sans-serif\" "
          "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" "
          "fill=\"white\"/>\n",
          kWidth, kHeight, kWidth, kHeight),
      Text(kWidth / 2, 28, "middle", title, "font-size=\"15\""),
      Axes(f, x_step, y_step), Series(f, points, /*p99=*/false, kP50Color),
      Series(f, points, /*p99=*/true, kP99Color), Legend(), "</svg>\n");
}

}  // namespace coalesce::bench

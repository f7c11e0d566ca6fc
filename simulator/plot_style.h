// The charts' look: colours and page layout of simulator/plot_svg.cpp, apart from the drawing
// so that one glance gives the style and the drawing code reads as geometry.
#pragma once
#include <cstddef>

namespace lorasim::sim::plot_style {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr const char* kFont = "DejaVu Sans, Verdana, Arial, sans-serif";
// Series colours (Tableau 10): blue for the first (predicted), orange for the second (measured).
constexpr const char* kSeriesColour[] = {"#4c78a8", "#f58518", "#b279a2", "#72b7b2"};
constexpr const char* kRecommended = "#2a8a3a";
constexpr const char* kRecommendedBand = "#e4f3e1";
constexpr const char* kLimit = "#c62828";
constexpr const char* kOom = "#c62828";
constexpr const char* kNoFit = "#9a9a9a";

// Layout in pixels. The right margin holds the limit lines' labels, outside the bars.
constexpr double kLeft = 84, kRight = 150, kMinPlotWidth = 480;
constexpr double kTimeTop = 116, kTimeHeight = 210, kPanelGap = 50, kMemHeight = 190, kBottom = 62;
constexpr double kChartHeight = kTimeTop + kTimeHeight + kPanelGap + kMemHeight + kBottom;

inline const char* series_colour(size_t i) { return kSeriesColour[i % (sizeof kSeriesColour / sizeof *kSeriesColour)]; }

}  // namespace lorasim::sim::plot_style

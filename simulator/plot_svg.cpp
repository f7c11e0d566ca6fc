#include "simulator/plot_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

#include "model/atomic_file.h"
#include "model/error.h"
#include "simulator/plot_style.h"

namespace lorasim::sim {
namespace {
using namespace plot_style;

std::string num(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

/// Up to three significant digits below 100, whole numbers above: "0.256", "12.2", "1140".
std::string tick_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, std::fabs(v) >= 100 ? "%.0f" : "%.3g", v);
  return buf;
}

/// A value axis mapped onto [top, top + height] pixels, bottom up.
struct Axis {
  bool log = false;
  double lo = 0, hi = 1;
  double top = 0, height = 0;
  std::vector<double> ticks;

  double y(double v) const {
    double f = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    f = std::clamp(f, 0.0, 1.0);
    return top + height * (1 - f);
  }
  double bottom() const { return top + height; }
};

/// Linear from 0 to a round number above `max_value`, about five ticks.
Axis linear_axis(double max_value) {
  Axis a;
  if (!(max_value > 0)) max_value = 1;
  const double raw = max_value * 1.08 / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double f : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (f * mag >= raw) {
      step = f * mag;
      break;
    }
  a.hi = std::ceil(max_value * 1.08 / step) * step;
  for (int i = 0; i * step <= a.hi * (1 + 1e-9); ++i) a.ticks.push_back(i * step);
  return a;
}

/// Linear, or log10 over whole decades when the values span more than 20x.
Axis time_axis(double min_value, double max_value) {
  if (!(min_value > 0) || max_value / min_value <= 20) return linear_axis(max_value);
  Axis a;
  a.log = true;
  const int lo = static_cast<int>(std::floor(std::log10(min_value)));
  int hi = static_cast<int>(std::ceil(std::log10(max_value)));
  if (hi == lo) ++hi;
  a.lo = std::pow(10.0, lo);
  a.hi = std::pow(10.0, hi);
  for (int d = lo; d <= hi; ++d) {
    const double base = std::pow(10.0, d);
    a.ticks.push_back(base);
    if (hi - lo <= 2 && d < hi)  // few decades: 2 and 5 as well, so the scale is readable
      for (double f : {2.0, 5.0}) a.ticks.push_back(f * base);
  }
  return a;
}

/// The subtitle's lines; only the first two fit above the legend.
std::vector<std::string> subtitle_lines(const SplitChart& c) {
  std::vector<std::string> lines;
  std::stringstream ss(c.subtitle);
  for (std::string l; std::getline(ss, l) && lines.size() < 2;) lines.push_back(l);
  return lines;
}

/// A generous estimate of a line's width, so long titles widen the document instead of
/// running off its edge (no font metrics without a font).
double text_width(const std::string& s, double font_px) { return 0.62 * font_px * static_cast<double>(s.size()); }

void check(const SplitChart& c) {
  const size_t n = c.split_labels.size();
  if (n == 0) throw InputError("plot '" + c.title + "': no splits to draw");
  for (const auto* panel : {&c.step_time_s, &c.peak_reserved_bytes})
    for (const PlotSeries& s : *panel)
      if (s.values.size() != n || (!s.oom.empty() && s.oom.size() != n))
        throw InputError("plot '" + c.title + "': series '" + s.name + "' has " + std::to_string(s.values.size()) +
                         " values for " + std::to_string(n) + " splits");
  if (!c.fits.empty() && c.fits.size() != n)
    throw InputError("plot '" + c.title + "': " + std::to_string(c.fits.size()) + " fit flags for " +
                     std::to_string(n) + " splits");
  if (c.recommended && *c.recommended >= n)
    throw InputError("plot '" + c.title + "': the recommended split is out of range");
}

class ChartWriter {
 public:
  ChartWriter(std::ostringstream& out, const SplitChart& c, double y0, double plot_width)
      : out_(out), c_(c), y0_(y0), n_(c.split_labels.size()), slot_(plot_width / static_cast<double>(n_)) {}

  void write() {
    text(12, y0_ + 26, c_.title, "font-size=\"16\" font-weight=\"bold\" fill=\"#222\"");
    const std::vector<std::string> sub = subtitle_lines(c_);
    for (size_t i = 0; i < sub.size(); ++i)
      text(12, y0_ + 46 + 16 * static_cast<double>(i), sub[i], "font-size=\"12\" fill=\"#555\"");
    legend(y0_ + 56 + 16 * static_cast<double>(std::max<size_t>(sub.size(), 1)));
    panel(Panel::time, c_.step_time_s, time_axis_for(), "step time (s)", 1);
    panel(Panel::memory, c_.peak_reserved_bytes, memory_axis_for(), "peak reserved (GiB)", kGiB);
    text(kLeft + slot_ * static_cast<double>(n_) / 2, y0_ + kChartHeight - 12,
         "split: micro-batch x gradient accumulation", "font-size=\"12\" fill=\"#444\" text-anchor=\"middle\"");
  }

 private:
  bool fits(size_t i) const { return c_.fits.empty() || c_.fits[i]; }
  bool any_no_fit() const { return std::find(c_.fits.begin(), c_.fits.end(), false) != c_.fits.end(); }
  double column_x(size_t i) const { return kLeft + slot_ * static_cast<double>(i); }

  void text(double x, double y, const std::string& s, const std::string& attrs) {
    out_ << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" " << attrs << ">" << xml_escape(s) << "</text>\n";
  }
  void rect(double x, double y, double w, double h, const std::string& attrs) {
    out_ << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(std::max(w, 0.0)) << "\" height=\""
         << num(std::max(h, 0.0)) << "\" " << attrs << "/>\n";
  }
  void line(double x1, double y1, double x2, double y2, const std::string& attrs) {
    out_ << "<line x1=\"" << num(x1) << "\" y1=\"" << num(y1) << "\" x2=\"" << num(x2) << "\" y2=\"" << num(y2)
         << "\" " << attrs << "/>\n";
  }

  void legend(double y) {
    double x = 12;
    auto item = [&](const std::string& swatch_attrs, const std::string& label, bool hatch) {
      rect(x, y - 10, 14, 12, swatch_attrs);
      if (hatch) rect(x, y - 10, 14, 12, "fill=\"url(#lorasim-hatch)\"");
      text(x + 20, y, label, "font-size=\"12\" fill=\"#333\"");
      x += 20 + 7.0 * static_cast<double>(label.size()) + 22;
    };
    const size_t series = std::max(c_.step_time_s.size(), c_.peak_reserved_bytes.size());
    const std::vector<PlotSeries>& named = c_.step_time_s.size() >= c_.peak_reserved_bytes.size()
                                               ? c_.step_time_s
                                               : c_.peak_reserved_bytes;
    if (series > 1)
      for (size_t i = 0; i < named.size(); ++i)
        item(std::string("fill=\"") + series_colour(i) + "\"", named[i].name, false);
    if (c_.recommended)
      item(std::string("fill=\"") + kRecommendedBand + "\" stroke=\"" + kRecommended + "\"", "recommended", false);
    if (any_no_fit())
      item(std::string("fill=\"") + kNoFit + "\" fill-opacity=\"0.35\" stroke=\"" + kNoFit + "\"", "does not fit",
           true);
  }

  Axis time_axis_for() const {
    double lo = INFINITY, hi = 0;
    for (const PlotSeries& s : c_.step_time_s)
      for (double v : s.values)
        if (std::isfinite(v) && v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
    Axis a = time_axis(std::isfinite(lo) ? lo : 0, hi);
    a.top = y0_ + kTimeTop;
    a.height = kTimeHeight;
    return a;
  }

  Axis memory_axis_for() const {
    double hi = 0;
    for (const PlotSeries& s : c_.peak_reserved_bytes)
      for (double v : s.values)
        if (std::isfinite(v)) hi = std::max(hi, v / kGiB);
    double limit = 0;
    for (const PlotLimit& l : c_.memory_limits) limit = std::max(limit, l.bytes / kGiB);
    // Splits far over the limit would flatten everything near it: the axis stops at twice the
    // limit and taller bars are drawn broken at the top, with their value.
    if (limit > 0) hi = std::min(std::max(hi, limit), 2 * limit);
    Axis a = linear_axis(hi);
    a.top = y0_ + kTimeTop + kTimeHeight + kPanelGap;
    a.height = kMemHeight;
    return a;
  }

  /// Grid, recommended band, bars, limit lines, axes and labels of one panel; `unit` divides
  /// the series' values into the axis' unit.
  enum class Panel { time, memory };

  void panel(Panel which, const std::vector<PlotSeries>& series, const Axis& a, const std::string& title,
             double unit) {
    const double right = kLeft + slot_ * static_cast<double>(n_);
    if (c_.recommended) {
      const double x = column_x(*c_.recommended);
      rect(x + 1, a.top, slot_ - 2, a.height, std::string("fill=\"") + kRecommendedBand + "\"");
      if (which == Panel::time)
        text(x + slot_ / 2, a.top - 7, "recommended",
             std::string("font-size=\"12\" font-weight=\"bold\" text-anchor=\"middle\" fill=\"") + kRecommended + "\"");
    }
    for (double t : a.ticks) {
      const double y = a.y(t);
      line(kLeft, y, right, y, "stroke=\"#e3e3e3\" stroke-width=\"1\"");
      text(kLeft - 8, y + 4, tick_text(t), "font-size=\"11\" fill=\"#444\" text-anchor=\"end\"");
    }
    const double ty = (a.top + a.bottom()) / 2;
    out_ << "<text x=\"" << num(24) << "\" y=\"" << num(ty) << "\" transform=\"rotate(-90 24 " << num(ty)
         << ")\" font-size=\"12\" fill=\"#333\" text-anchor=\"middle\">"
         << xml_escape(title + (a.log ? ", log scale" : "")) << "</text>\n";

    bars(series, a, unit);

    // Limit lines, labelled in the right margin; labels closer than a text line are pushed apart.
    if (which == Panel::memory) {
      std::vector<std::pair<double, const PlotLimit*>> labels;
      for (const PlotLimit& l : c_.memory_limits) {
        const double y = a.y(l.bytes / kGiB);
        line(kLeft, y, right, y,
             std::string("stroke=\"") + kLimit + "\" stroke-width=\"1.6\"" + (l.dashed ? " stroke-dasharray=\"6 4\"" : ""));
        labels.emplace_back(y, &l);
      }
      std::sort(labels.begin(), labels.end(),
                [](const auto& p, const auto& q) { return p.first < q.first; });
      for (size_t i = 1; i < labels.size(); ++i)
        labels[i].first = std::max(labels[i].first, labels[i - 1].first + 13);
      for (const auto& [y, l] : labels)
        text(right + 6, y + 4, l->label, std::string("font-size=\"11\" fill=\"") + kLimit + "\"");
    }

    // Values last, with a white halo, so the limit lines do not strike through them.
    for (const auto& [x, y, v] : value_labels_)
      text(x, y, v,
           "font-size=\"10\" fill=\"#333\" text-anchor=\"middle\" stroke=\"#ffffff\" stroke-width=\"3\" "
           "stroke-linejoin=\"round\" paint-order=\"stroke\"");
    value_labels_.clear();

    line(kLeft, a.top, kLeft, a.bottom(), "stroke=\"#333\" stroke-width=\"1\"");
    line(kLeft, a.bottom(), right, a.bottom(), "stroke=\"#333\" stroke-width=\"1\"");
    for (size_t i = 0; i < n_; ++i) {
      const double x = column_x(i) + slot_ / 2;
      std::string attrs = "font-size=\"12\" text-anchor=\"middle\"";
      if (c_.recommended && *c_.recommended == i)
        attrs += std::string(" font-weight=\"bold\" fill=\"") + kRecommended + "\"";
      else
        attrs += std::string(" fill=\"") + (fits(i) ? "#222" : kNoFit) + "\"";
      text(x, a.bottom() + 17, c_.split_labels[i], attrs);
    }
  }

  void bars(const std::vector<PlotSeries>& series, const Axis& a, double unit) {
    if (series.empty()) return;
    const double k = static_cast<double>(series.size());
    const double group = std::min(slot_ * 0.72, 56.0 * k);
    const double bar = group / k;
    const bool value_labels = series.size() == 1 && bar >= 30;
    for (size_t i = 0; i < n_; ++i) {
      const double x0 = column_x(i) + (slot_ - group) / 2;
      for (size_t s = 0; s < series.size(); ++s) {
        const PlotSeries& ps = series[s];
        const double x = x0 + bar * static_cast<double>(s) + 1;
        const double w = bar - 2;
        const double v = ps.values[i] / unit;
        if (!ps.oom.empty() && ps.oom[i] && !std::isfinite(v)) {
          rect(x, a.bottom() - 3, w, 3, std::string("fill=\"") + kOom + "\"");
          text(x + w / 2, a.bottom() - 7, "OOM",
               std::string("font-size=\"11\" font-weight=\"bold\" text-anchor=\"middle\" fill=\"") + kOom + "\"");
          continue;
        }
        if (!std::isfinite(v) || (a.log && v <= 0)) continue;
        const double y = a.y(v);
        const bool clipped = !a.log && v > a.hi;
        const bool recommended = c_.recommended && *c_.recommended == i;
        const char* colour = series.size() == 1 && recommended ? kRecommended : series_colour(s);
        if (fits(i)) {
          rect(x, y, w, a.bottom() - y, std::string("fill=\"") + colour + "\"");
        } else {
          rect(x, y, w, a.bottom() - y, std::string("fill=\"") + colour + "\" fill-opacity=\"0.3\" stroke=\"" +
                                            kNoFit + "\" stroke-width=\"1\"");
          rect(x, y, w, a.bottom() - y, "fill=\"url(#lorasim-hatch)\"");
        }
        if (clipped)  // a break near the top: the bar goes on beyond the axis
          for (double dy : {10.0, 15.0})
            line(x - 2, y + dy + 3, x + w + 2, y + dy - 3, "stroke=\"#ffffff\" stroke-width=\"2.5\"");
        if (value_labels || clipped) value_labels_.push_back({x + w / 2, y - 4, tick_text(v)});
      }
    }
  }

  struct ValueLabel {
    double x, y;
    std::string text;
  };

  std::ostringstream& out_;
  const SplitChart& c_;
  std::vector<ValueLabel> value_labels_;  ///< of the panel being drawn
  double y0_;
  size_t n_;
  double slot_;
};

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        default: out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A whole, shortest-form UTF-8 sequence of a character XML allows passes; anything else is '?'.
    const size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool ok = len > 0 && i + len <= text.size();
    uint32_t cp = ok ? c & (0xffu >> (len + 1)) : 0;
    for (size_t k = 1; ok && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      ok = (cc & 0xc0) == 0x80;
      cp = (cp << 6) | (cc & 0x3f);
    }
    const uint32_t shortest[] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= shortest[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff) && cp != 0xfffe &&
         cp != 0xffff;
    if (ok) {
      out.append(text, i, len);
      i += len;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

std::string render_svg(const std::vector<SplitChart>& charts) {
  if (charts.empty()) throw InputError("plot: no charts to draw");
  double plot_width = kMinPlotWidth;
  for (const SplitChart& c : charts) {
    check(c);
    const double k = static_cast<double>(std::max<size_t>({c.step_time_s.size(), c.peak_reserved_bytes.size(), 1}));
    const double slot = std::max(64.0, 30 * k + 22);
    plot_width = std::max(plot_width, slot * static_cast<double>(c.split_labels.size()));
  }
  double width = kLeft + plot_width + kRight;
  for (const SplitChart& c : charts) {
    width = std::max(width, 24 + text_width(c.title, 16));
    for (const std::string& l : subtitle_lines(c)) width = std::max(width, 24 + text_width(l, 12));
  }
  width = std::ceil(width);
  const double height = kChartHeight * static_cast<double>(charts.size());

  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width, 0) << "\" height=\"" << num(height, 0)
      << "\" viewBox=\"0 0 " << num(width, 0) << " " << num(height, 0) << "\" font-family=\"" << kFont << "\">\n"
      << "<title>" << xml_escape(charts.front().title) << "</title>\n"
      << "<defs>\n"
      << "<pattern id=\"lorasim-hatch\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" "
         "patternTransform=\"rotate(45)\">\n"
      << "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#6b6b6b\" stroke-width=\"1.5\"/>\n"
      << "</pattern>\n"
      << "</defs>\n"
      << "<rect x=\"0\" y=\"0\" width=\"" << num(width, 0) << "\" height=\"" << num(height, 0)
      << "\" fill=\"#ffffff\"/>\n";
  for (size_t i = 0; i < charts.size(); ++i) {
    out << "<g>\n";
    if (i > 0)
      out << "<line x1=\"0\" y1=\"" << num(kChartHeight * static_cast<double>(i)) << "\" x2=\"" << num(width, 0)
          << "\" y2=\"" << num(kChartHeight * static_cast<double>(i)) << "\" stroke=\"#cccccc\"/>\n";
    // Each chart spreads its splits over the document's plot width.
    ChartWriter(out, charts[i], kChartHeight * static_cast<double>(i), plot_width).write();
    out << "</g>\n";
  }
  out << "</svg>\n";
  return out.str();
}

void write_svg(const std::vector<SplitChart>& charts, const std::string& path) {
  model::write_file_atomically(path, render_svg(charts), "plot");
}

}  // namespace lorasim::sim

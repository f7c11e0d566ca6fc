// SVG charts of the splits of one effective batch (`--plot`): step time and peak reserved
// memory per micro-batch x accumulation split, the memory limits, the recommended split and
// the splits that do not fit. The input is plain data, not a simulation, so `simulate` and
// `validate` share the renderer and tests can drive it directly. The document is
// self-contained: no external fonts, images or scripts.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace lorasim::sim {

/// One bar per split, e.g. "predicted" or "measured".
struct PlotSeries {
  std::string name;             ///< legend entry; with a single series the legend omits it
  std::vector<double> values;   ///< one per split, in the panel's unit; NaN: no bar
  std::vector<bool> oom;        ///< per split (or empty): the run ran out of memory, drawn "OOM"
};

/// A horizontal line across the memory panel.
struct PlotLimit {
  std::string label;            ///< drawn at the line's right end, e.g. "limit 141.0 GiB"
  double bytes = 0;
  bool dashed = false;
};

/// One figure: a title, a step-time panel above a memory panel, sharing the x axis.
struct SplitChart {
  std::string title;                       ///< model, sequence length, GPU
  std::string subtitle;                    ///< smaller text under the title: up to two lines, '\n' between
  std::vector<std::string> split_labels;   ///< x axis, "4 x 4", ascending micro-batch
  std::vector<PlotSeries> step_time_s;     ///< seconds; log scale when the range exceeds 20x
  std::vector<PlotSeries> peak_reserved_bytes;  ///< bytes, drawn in GiB
  std::vector<PlotLimit> memory_limits;
  std::vector<bool> fits;                  ///< per split (or empty: all fit); false: hatched, grey label
  std::optional<size_t> recommended;       ///< index into split_labels
};

/// The SVG document with the charts stacked top to bottom. Throws InputError when a series
/// does not have one value per split or there is nothing to draw.
std::string render_svg(const std::vector<SplitChart>& charts);

/// Writes render_svg(charts) to `path` through model::write_file_atomically, so a reader never
/// sees half a file. Throws InputError as render_svg does, ConfigError when it cannot write.
void write_svg(const std::vector<SplitChart>& charts, const std::string& path);

/// `text` safe as XML character data and attribute values: markup characters escaped,
/// control characters and invalid UTF-8 replaced by '?'.
std::string xml_escape(const std::string& text);

}  // namespace lorasim::sim

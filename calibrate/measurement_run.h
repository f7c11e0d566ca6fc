// The measurement columns that describe a run rather than its workload: the device it ran on,
// its processes, what the model saw per micro-batch (collation, padded widths, real tokens) and
// the hash of the config file its `model` names (docs/measurements.md). measurement_io.cpp
// reads and writes rows through these; validate and fit read the device from them.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/measurement.h"

namespace lorasim::calib {

/// The run columns, in the order the writer emits them after the workload's and the stack's.
const std::vector<std::string>& run_columns();

/// Sets `m`'s run columns from a row's cells (`get` gives "" for a column left out); needs
/// `m`'s seq_len and micro_batch already read. Throws ConfigError "column NAME: ..." for a
/// malformed value: a collation that is none of docs/measurements.md's, padded widths that are
/// not ascending positive `width:count` pairs or whose largest is not seq_len, real tokens
/// above micro_batch x seq_len, a hash that is not 64 hex digits.
void read_run_columns(const std::function<std::string(const std::string&)>& get, Measurement& m);

/// The cells of `m`'s run columns, in run_columns()'s order ("" where not recorded).
std::vector<std::string> run_cells(const Measurement& m);

/// "512:3;1024:13" -> {{512,3},{1024,13}} (model::parse_padded_widths); throws ConfigError
/// "column padded_lengths: ..." saying what is wrong.
model::PaddedWidths parse_padded_lengths(const std::string& cell);
/// The inverse of parse_padded_lengths.
std::string padded_lengths_cell(const model::PaddedWidths& widths);

/// Where the config file a row's `model` names is: an absolute path as it is; a relative one
/// against `rows_dir` (the rows file's directory, so the file and its configs move together),
/// else -- only for a row without a hash, written before rows named configs beside themselves --
/// against the working directory. Returns "" when the file is in neither place.
std::string resolve_config_path(const std::string& model, const std::string& rows_dir, bool has_hash);

/// The model cell and hash a rows file at `rows_path` names a config by: the config file at
/// `config_path` copied beside it by content hash (`<rows-stem>.configs/<hash prefix>.json`,
/// relative to the rows file's directory) and its SHA-256. {"", ""} when `config_path` is no
/// readable file or the rows go to a device or pipe (nothing beside them to keep configs in).
std::pair<std::string, std::string> store_config_beside(const std::string& config_path, const std::string& rows_path);

/// Throws ConfigError unless `hash` is 64 lowercase hex digits.
void check_sha256_cell(const std::string& hash);
/// Throws ConfigError unless the file at `path` hashes to `sha256` (64 hex digits).
void check_config_hash(const std::string& path, const std::string& sha256);

}  // namespace lorasim::calib

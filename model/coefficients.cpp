// The coefficient table's mechanics: slots, sums and the peak's sides. The rows themselves are
// in coefficient_rows.cpp; docs/cost-model.md derives the equations their features come from.
#include "model/coefficients.h"

#include <deque>

#include "model/coefficient_rows.h"
#include "model/error.h"

namespace lorasim::model {

double process_first_step_s(const Coefficients& c, bool fused_lm_head) {
  return c.first_step_s + (fused_lm_head ? c.first_step_fused_head_s : 0.0);
}

Features accumulating(const Features& f) {
  Features a = f;
  a.host_ops += a.lora_tensors;  // one in-place add per adapter tensor
  return a;
}

double overlap_share(double host_ops, const Coefficients& c) {
  if (host_ops <= c.launch_queue_ops || host_ops <= 0) return 0;
  return 1 - c.launch_queue_ops / host_ops;
}

bool rebuilt_block_sets_peak(const Features& f, const Coefficients& c) {
  return f.recompute_bytes > 0 && c.saved_scale * f.recompute_bytes + c.attention_score_scale * f.attention_score_bytes >
                                      c.logits_scale * f.logits_bytes;
}

double Coefficient::theta(const Coefficients& c, double rate_scale) const {
  const double v = of(c);
  switch (form) {
    case Form::linear: return v;
    case Form::rate: return 1.0 / (v * (precision_scaled ? rate_scale : 1.0) * unit);
    case Form::ratio: return v * find_coefficient(base)->theta(c, rate_scale);
  }
  return 0;
}

double Coefficient::term_value(const Features& f, const Coefficients& c, double rate_scale) const {
  switch (form) {
    case Form::linear: return of(c) * feature(f, c);
    // Divided, not multiplied by theta, so the figures stay those of the written equations.
    case Form::rate: return feature(f, c) / (of(c) * (precision_scaled ? rate_scale : 1.0) * unit);
    case Form::ratio: return 0;
  }
  return 0;
}

namespace {

// The process's table: rows (a deque, so that adding one moves none), their stored values and,
// per sum, its rows in table order (every prediction evaluates the sums per split, and walking
// the whole table for each was most of a split's cost).
struct Table {
  std::deque<Coefficient> rows;
  std::vector<StoredValue> stored;
  std::vector<std::vector<const Coefficient*>> by_term = std::vector<std::vector<const Coefficient*>>(
      static_cast<size_t>(Term::limit) + 1);

  void add(const Coefficient& row) {
    for (const Coefficient& r : rows)
      if (std::string_view(r.name) == row.name && !r.shared && !row.shared) {
        for (int s = 0; s < kStackCount; ++s)
          if (r.stacks[s].section && row.stacks[s].section &&
              std::string_view(r.stacks[s].section) == row.stacks[s].section)
            throw InputError(std::string("coefficient table: ") + row.name + " is in its section twice");
      }
    rows.push_back(row);
    Coefficient& c = rows.back();
    int owner = -1;  // a shared row: the one stack that stores it
    for (int s = 0; s < kStackCount; ++s) {
      const StackEntry& e = c.stacks[s];
      c.slot[s] = -1;
      if (!e.section || e.same_as || (c.shared && owner >= 0)) continue;
      c.slot[s] = static_cast<int>(stored.size());
      stored.push_back({&c, static_cast<StackKind>(s)});
      if (c.shared) owner = s;
    }
    for (int s = 0; s < kStackCount; ++s) {
      const StackEntry& e = c.stacks[s];
      if (c.shared && owner >= 0) {
        c.slot[s] = c.slot[owner];  // the device's value, whichever stack reads it
      } else if (e.same_as) {
        const Coefficient* other = nullptr;
        for (const Coefficient& r : rows)
          if (std::string_view(r.name) == e.same_as) other = &r;
        if (!other || other == &c)
          throw InputError(std::string("coefficient table: ") + c.name + " copies unknown " + e.same_as);
        c.slot[s] = other->slot[s];
      }
    }
    if (c.form != Form::ratio && c.feature) by_term[static_cast<size_t>(c.term)].push_back(&c);
  }
};

Table& table() {
  static Table t = [] {
    Table built;
    for (const Coefficient& row : detail::coefficient_rows()) built.add(row);
    return built;
  }();
  return t;
}

}  // namespace

const std::deque<Coefficient>& coefficient_table() { return table().rows; }

const Coefficient* find_coefficient(std::string_view name) {
  for (const Coefficient& c : table().rows)
    if (name == c.name) return &c;
  return nullptr;
}

const std::vector<StoredValue>& stored_values() { return table().stored; }

void add_coefficient(const Coefficient& row) { table().add(row); }

double sum_terms(Term term, const Features& f, const Coefficients& c, double rate_scale) {
  // The lists, not the table: every prediction evaluates the sums per split.
  static const std::vector<std::vector<const Coefficient*>>& by_term = table().by_term;
  double s = 0;
  for (const Coefficient* k : by_term[static_cast<size_t>(term)]) s += k->term_value(f, c, rate_scale);
  return s;
}

}  // namespace lorasim::model

// The coefficient table's mechanics: slots, sums and the peak's sides. The rows themselves are
// in coefficient_rows.cpp; docs/cost-model.md derives the equations their features come from.
#include "model/coefficients.h"

#include <deque>

#include "model/coefficient_rows.h"
#include "model/error.h"
#include "model/training_stack.h"

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

const OwnEntry* Coefficient::own_entry(std::string_view stack) const {
  for (const OwnEntry& e : own)
    if (e.stack == stack) return &e;
  return nullptr;
}

namespace {

[[noreturn]] void table_error(const std::string& what) { throw InputError("coefficient table: " + what); }

// The process's table: rows (a deque, so that adding one moves none), their stored values and,
// per sum, its rows in table order (every prediction evaluates the sums per split, and walking
// the whole table for each was most of a split's cost).
struct Table {
  std::deque<Coefficient> rows;
  std::vector<StoredValue> stored;
  std::vector<std::vector<const Coefficient*>> by_term = std::vector<std::vector<const Coefficient*>>(
      static_cast<size_t>(Term::limit) + 1);

  static bool stores(const StackEntry& e) { return e.section && !e.same_as; }

  void store(const Coefficient& c, const StackEntry& e, StackKind stack, int& index) {
    if (!stores(e)) return;
    index = static_cast<int>(stored.size());
    stored.push_back({&c, stack});
  }

  void add(const Coefficient& row) {
    auto sections = [](const Coefficient& r) {
      std::vector<std::string_view> s;
      if (r.device.section) s.push_back(r.device.section);
      for (const OwnEntry& e : r.own)
        if (e.entry.section) s.push_back(e.entry.section);
      return s;
    };
    for (const Coefficient& r : rows)
      if (std::string_view(r.name) == row.name)
        for (std::string_view a : sections(r))
          for (std::string_view b : sections(row))
            if (a == b) table_error(std::string(row.name) + " is in its section twice");
    rows.push_back(row);
    Coefficient& c = rows.back();
    store(c, c.device, device_stack(), c.device_stored);
    for (OwnEntry& e : c.own) store(c, e.entry, stack_named(c, e.stack), e.stored);
    if (c.form != Form::ratio && c.feature) by_term[static_cast<size_t>(c.term)].push_back(&c);
    resolve_slots();
  }

  void add_entry(std::string_view name, std::string_view stack, const StackEntry& entry) {
    Coefficient* c = nullptr;
    for (Coefficient& r : rows)
      if (std::string_view(r.name) == name) c = &r;
    if (!c) table_error("no row " + std::string(name) + " to give the " + std::string(stack) + " stack an entry in");
    if (c->own_entry(stack)) table_error(std::string(name) + " names the " + std::string(stack) + " stack twice");
    const StackKind kind = stack_named(*c, stack);
    c->own.push_back({std::string(stack), entry, -1});
    store(*c, entry, kind, c->own.back().stored);
    resolve_slots();
  }

  static StackKind stack_named(const Coefficient& c, std::string_view name) {
    const TrainingStack* s = find_stack(name);
    if (!s) table_error(std::string(c.name) + " names stack " + std::string(name) + ", which is not registered");
    if (s->calibrates_device())
      table_error(std::string(c.name) + ": the " + std::string(name) + " stack calibrates the device: its entry is the device's");
    return s->kind();
  }

  // Per registered stack, the entry each row reads by and the stored value it reads: its own, or
  // the device's (as a reader unless the stack calibrates the device); another row's (`same_as`,
  // an earlier row) for that stack; -1 for a fixed prior.
  void resolve_slots() {
    const size_t stacks = static_cast<size_t>(stack_count());
    for (size_t r = 0; r < rows.size(); ++r) {
      Coefficient& c = rows[r];
      c.entries.assign(stacks, StackEntry{});
      c.slot.assign(stacks, -1);
      for (size_t s = 0; s < stacks; ++s) {
        const TrainingStack& stack = training_stack(StackKind{static_cast<int>(s)});
        const OwnEntry* own = c.own_entry(stack.name());
        // Without an entry of its own a stack reads its base's (as a reader), else the device's.
        const OwnEntry* base = own || !stack.base_stack() ? nullptr : c.own_entry(stack.base_stack());
        const StackEntry& e = own ? own->entry : base ? base->entry : c.device;
        c.entries[s] = e;
        if (!own && !stack.calibrates_device()) c.entries[s] = {nullptr, e.prior, e.range, Fit::never, false, e.same_as};
        if (stores(e)) {
          c.slot[s] = own ? own->stored : base ? base->stored : c.device_stored;
        } else if (e.same_as) {
          const Coefficient* other = nullptr;
          for (size_t o = 0; o < r; ++o)
            if (std::string_view(rows[o].name) == e.same_as) other = &rows[o];
          if (!other) table_error(std::string(c.name) + " copies unknown " + e.same_as);
          c.slot[s] = other->slot[s];
        }
      }
    }
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

void add_stack_entry(std::string_view row, std::string_view stack, const StackEntry& entry) {
  table().add_entry(row, stack, entry);
}

void refresh_stacks() { table().resolve_slots(); }

double sum_terms(Term term, const Features& f, const Coefficients& c, double rate_scale) {
  // The lists, not the table: every prediction evaluates the sums per split.
  static const std::vector<std::vector<const Coefficient*>>& by_term = table().by_term;
  double s = 0;
  for (const Coefficient* k : by_term[static_cast<size_t>(term)]) s += k->term_value(f, c, rate_scale);
  return s;
}

}  // namespace lorasim::model

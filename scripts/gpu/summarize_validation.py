#!/usr/bin/env python3
"""Summarizes `lorasim validate --format json` lines (one JSON object per line): per-split
errors and the overall mean/max absolute errors."""
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
t_err, m_err, m_under, lines = [], [], [], []
for r in rows:
    w = r["workload"]
    s = r["summary"]
    lines.append(f'{w["model"]} seq={w["seq_len"]} B={r["effective_batch"]}: time mean {100*s["time_mean_abs_err"]:.1f}% '
                 f'max {100*s["time_max_abs_err"]:.1f}%, reserved mean {100*s["reserved_mean_abs_err"]:.1f}% '
                 f'max {100*s["reserved_max_abs_err"]:.1f}%, recommended fastest: {s["recommended_was_fastest"]}, '
                 f'regret {100*s["regret"]:.1f}%, recommended OOM: {s["recommended_oom"]}')
    for sp in r["splits"]:
        if sp["measured_oom"]:
            lines.append(f'  {sp["micro_batch"]}x{sp["accumulation"]}: OOM (predicted fits: {sp["predicted_fits"]})')
            continue
        t_err.append(abs(sp["step_time_error"]))
        m_err.append(abs(sp["reserved_error"]))
        m_under.append(max(0.0, -sp["reserved_error"]))
        lines.append(f'  {sp["micro_batch"]}x{sp["accumulation"]}: step {sp["predicted_step_time_s"]:.4f} vs '
                     f'{sp["measured_step_time_s"]:.4f} s ({100*sp["step_time_error"]:+.1f}%), reserved '
                     f'{sp["predicted_peak_reserved_bytes"]/2**30:.2f} vs {sp["measured_peak_reserved_bytes"]/2**30:.2f} GiB '
                     f'({100*sp["reserved_error"]:+.1f}%)')
print("\n".join(lines))
if t_err:
    print(f"\nALL {len(t_err)} measured splits: step time mean |err| {100*sum(t_err)/len(t_err):.2f}% max {100*max(t_err):.2f}%; "
          f"peak reserved mean |err| {100*sum(m_err)/len(m_err):.2f}% max {100*max(m_err):.2f}% "
          f"max under-prediction {100*max(m_under):.2f}%")

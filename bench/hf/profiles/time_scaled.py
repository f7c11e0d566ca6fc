#!/usr/bin/env python3
"""A copy of a profile whose every predicted time is `factor` times the original's: a deliberately
wrong prior for the tuner's experiment (issue 28: `tune` from "a profile 2x off in time").

Every host and device time term is multiplied by the factor (keys ending in `_s`, or holding
`_s_per_`), and every rate divided by it (`_tflops`, `_gbps`) -- in [time], [stack.*] and
[interconnect]; [gpu] (the datasheet) and [memory] are kept, so memory predictions do not change.
The hf-peft stack's shape terms that the source file leaves at their priors are written, scaled,
from PRIORS below (model/coefficient_rows.cpp's values). The [calibration] table is dropped: the
copy was not calibrated, whatever its `calibrated` flags claim (they are kept, so it is as
confidently wrong as a calibrated profile of another machine would be).

    python3 bench/hf/profiles/time_scaled.py hwprofiles/h200.toml bench/hf/profiles/h200-2x-slow.toml \\
        --factor 2 --name h200-2x-slow
"""
import argparse
import json
import tomllib

# [stack.hf-peft] time terms with priors in model/coefficient_rows.cpp that a profile may leave out.
PRIORS = {"stack.hf-peft": {"new_shape_s": 0.18, "first_step_s": 0.46, "first_step_fused_head_s": 0.69,
                            "cold_start_s": 5.5}}
SCALED_SECTIONS = ("time", "interconnect")


def is_time(key):
    return key.endswith("_s") or "_s_per_" in key


def is_rate(key):
    return key.endswith("_tflops") or key.endswith("_gbps")


def scaled(profile, factor):
    out = {}
    for section, value in profile.items():
        if section == "calibration":
            continue
        if section == "stack":
            out["stack"] = {name: _scale_table(dict(PRIORS.get(f"stack.{name}", {}), **t), factor)
                            for name, t in value.items()}
        elif section in SCALED_SECTIONS:
            out[section] = _scale_table(value, factor)
        else:
            out[section] = value
    return out


def _scale_table(table, factor):
    return {k: (v * factor if is_time(k) else v / factor if is_rate(k) else v)
            if isinstance(v, (int, float)) and not isinstance(v, bool) else v for k, v in table.items()}


def _value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(v)


def dumps(profile, header):
    lines = [f"# {line}" for line in header]
    tables = []
    for section, table in profile.items():
        if not isinstance(table, dict):
            lines.append(f"{section} = {_value(table)}")
        elif section == "stack":
            tables += [(f"stack.{name}", t) for name, t in table.items()]
        else:
            tables.append((section, table))
    for name, table in tables:
        lines += ["", f"[{name}]"] + [f"{k} = {_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source")
    ap.add_argument("out")
    ap.add_argument("--factor", type=float, default=2.0, help="times x factor, rates / factor (default 2)")
    ap.add_argument("--name", required=True, help="[gpu].name of the copy")
    args = ap.parse_args()
    with open(args.source, "rb") as f:
        profile = tomllib.load(f)
    out = scaled(profile, args.factor)
    out["gpu"] = dict(out["gpu"], name=args.name,
                      display_name=f"{profile['gpu']['display_name']} (times x{args.factor:g}, deliberately wrong)")
    note = (f"{args.source} with every time term x{args.factor:g} and every rate /{args.factor:g} "
            "(bench/hf/profiles/time_scaled.py): deliberately wrong")
    out["profile"] = dict(out["profile"], source=note)
    for t in out.get("stack", {}).values():
        t["source"] = note
    header = [f"Made by: python3 bench/hf/profiles/time_scaled.py {args.source} {args.out} --factor {args.factor:g} "
              f"--name {args.name}",
              "A deliberately wrong prior for bench/hf/tune_gpu.py (issue 28): every predicted step time is",
              f"{args.factor:g}x {args.source}'s; memory as there. Not a profile of any machine."]
    with open(args.out, "w") as f:
        f.write(dumps(out, header))


if __name__ == "__main__":
    main()

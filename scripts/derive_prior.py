#!/usr/bin/env python3
"""A prior profile for a GPU lorasim has not calibrated, transferred from one it has.

The rule (docs/profile-schema.md, "How the built-in priors are derived"): every coefficient of the
calibrated SOURCE profile is kept -- the stacks' host terms (the dispatching CPU is a machine's,
not a GPU's), the memory terms (what PyTorch and PEFT allocate does not depend on the card), the
efficiencies of its kernels -- and only what the datasheets say differs is scaled by the datasheets'
ratio: FLOP rates (gemm, head, attention) by the peak tensor rate, bandwidths (memory, loss) and the
optimizer's per-parameter time by the HBM bandwidth. The TARGET's [gpu] and [interconnect] sections
(its datasheet) are taken as they are, and the result is marked `calibrated = false` with the
expected errors given (what leaving one GPU out measured, bench/results/gpu-transfer.md).

    python3 scripts/derive_prior.py SOURCE.toml TARGET.toml --time-error 0.25 --memory-error-bytes 2147483648 > OUT.toml

SOURCE is a calibrated profile (both halves: `lorasim calibrate` then `calibrate --stack hf-peft`);
TARGET any profile of the GPU wanted (an embedded prior: only its [gpu] and [interconnect] are read).
"""
import argparse
import sys
import tomllib

RATE_KEYS = ("gemm_tflops", "head_tflops", "attention_tflops")
BANDWIDTH_KEYS = ("memory_gbps", "loss_gbps")
INVERSE_BANDWIDTH_KEYS = ("optimizer_per_param_s",)


def peak(gpu, precision):
    return gpu[{"bf16": "peak_bf16_tflops", "fp16": "peak_fp16_tflops", "fp32": "peak_fp32_tflops"}[precision]]


def transfer(src, dst, time_error, memory_error, memory_error_bytes, note):
    sg, dg = src["gpu"], dst["gpu"]
    precision = src["profile"].get("coefficients_precision", "bf16")
    # A target without the source's precision (a T4 has no bf16) scales from its fp16 peak and
    # fits its rates in fp16, as its own calibration would.
    dprec = precision if peak(dg, precision) > 0 else "fp16"
    rate = peak(dg, dprec) / peak(sg, precision)
    bw = dg["hbm_bandwidth_gbps"] / sg["hbm_bandwidth_gbps"]
    out = {"schema_version": 1, "gpu": dict(dg)}
    out["profile"] = {"calibrated": False, "coefficients_precision": dprec,
                      "overlap": src["profile"].get("overlap", "max"),
                      "expected_time_error": time_error, "expected_memory_error": memory_error,
                      "expected_memory_error_bytes": memory_error_bytes,
                      "source": f"prior transferred from {sg['display_name']} ({note})"}
    time = dict(src["time"])
    for k in RATE_KEYS:
        time[k] = time[k] * rate
    for k in BANDWIDTH_KEYS:
        time[k] = time[k] * bw
    for k in INVERSE_BANDWIDTH_KEYS:
        time[k] = time[k] / bw
    out["time"] = time
    out["memory"] = dict(src["memory"])
    out["memory"]["context_bytes"] = dst.get("memory", {}).get("context_bytes", src["memory"]["context_bytes"])
    for name, section in src.get("stack", {}).items():
        s = dict(section)
        s["calibrated"] = False
        s["source"] = f"transferred from {sg['display_name']}: {section.get('source', '')}"
        out.setdefault("stack", {})[name] = s
    if "interconnect" in dst:
        out["interconnect"] = dict(dst["interconnect"])
    return out, rate, bw


def value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(float(v)) if isinstance(v, float) else str(v)


def dump(doc):
    lines = [f"schema_version = {doc['schema_version']}"]
    for sec in ("gpu", "profile", "time", "memory"):
        lines += ["", f"[{sec}]"] + [f"{k} = {value(v)}" for k, v in doc[sec].items()]
    for name, s in doc.get("stack", {}).items():
        lines += ["", f"[stack.{name}]"] + [f"{k} = {value(v)}" for k, v in s.items()]
    if "interconnect" in doc:
        lines += ["", "[interconnect]"] + [f"{k} = {value(v)}" for k, v in doc["interconnect"].items()]
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("source", help="a calibrated profile (TOML)")
    p.add_argument("target", help="a profile of the target GPU; only its datasheet sections are read")
    p.add_argument("--time-error", type=float, required=True, help="the prior's expected step-time error (a fraction)")
    p.add_argument("--memory-error", type=float, default=0.0,
                   help="the prior's expected memory error as a share of the predicted variable memory (default 0)")
    p.add_argument("--memory-error-bytes", type=float, required=True,
                   help="the device term a prior cannot know, added to its worst case (bytes)")
    p.add_argument("--note", default="scripts/derive_prior.py", help="what the source line records")
    a = p.parse_args()
    try:
        with open(a.source, "rb") as f:
            src = tomllib.load(f)
        with open(a.target, "rb") as f:
            dst = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        sys.exit(f"error: {e}")
    if not src.get("profile", {}).get("calibrated"):
        sys.exit(f"error: {a.source} is not calibrated: a prior is transferred from a calibrated profile")
    doc, rate, bw = transfer(src, dst, a.time_error, a.memory_error, a.memory_error_bytes, a.note)
    head = (f"# lorasim hardware profile: {dst['gpu']['display_name']}, a prior transferred from a calibrated "
            f"{src['gpu']['display_name']}\n# by scripts/derive_prior.py: rates x {rate:.4g} (peak tensor rate), "
            f"bandwidths x {bw:.4g} (HBM); everything else as calibrated.\n")
    sys.stdout.write(head + dump(doc))


if __name__ == "__main__":
    main()

"""The tuner's calls of the lorasim binary: the base profile's facts, every split's prediction,
the anchored refit on the trial rows, and the pick with the measured splits.
"""
import json
import subprocess
import tomllib
import warnings

from lorasim_hf.recommend import LorasimError, run_json


def base_flags(gpu, profile):
    return ["--profile", str(profile)] if profile is not None else ["--gpu", gpu]


# The trial rows ran on this device, and the base profile is the one tune was given (gpu=, profile=,
# or a refit of such): where that is another GPU's, on purpose, lorasim must still take the rows.
OWN_ROWS = ["--allow-device-mismatch"]


def profile_facts(exe, gpu=None, profile=None):
    """{"display_name": ..., "bf16_supported": ...} of the base profile: an embedded one from
    `lorasim profiles --format json`, a file from its [gpu] table."""
    if profile is not None:
        try:
            with open(profile, "rb") as f:
                table = tomllib.load(f).get("gpu", {})
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise LorasimError(f"cannot read the profile {profile}: {e}") from None
        return {"display_name": table.get("display_name", str(profile)),
                "bf16_supported": bool(table.get("bf16_supported", True))}
    for p in run_json([exe, "profiles", "--format", "json"]):
        if p.get("name") == gpu:
            return {"display_name": p.get("display_name", gpu), "bf16_supported": bool(p.get("bf16_supported"))}
    raise LorasimError(f"lorasim has no embedded profile '{gpu}'; `lorasim profiles` lists them")


def predict(exe, workload, gpu=None, profile=None, memory_limit=None):
    """`lorasim simulate --format json`: {"splits": [...], "recommended": ...} for every split."""
    cmd = [exe, "simulate", "--format", "json", "--effective-batch", str(workload.effective_batch)]
    cmd += base_flags(gpu, profile) + workload.flags + _limit(memory_limit)
    return run_json(cmd)


def _limit(memory_limit):
    # The limit is the real device's (or the user's); a profile of another GPU, given on purpose, may
    # have less memory than the device the trials run on.
    return ["--memory-limit", f"{memory_limit / 2**30:.4f}GiB", "--allow-over-memory"] if memory_limit else []


def fit(exe, rows_path, out_path, gpu=None, profile=None):
    """`lorasim fit --fit-mode anchored`: the base profile refined by the trial rows."""
    cmd = [exe, "fit", "--measurements", rows_path, "--fit-mode", "anchored", "--out", out_path] + OWN_ROWS
    cmd += base_flags(gpu, profile)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as e:
        raise LorasimError(f"cannot run {exe}: {e}") from None
    if proc.returncode != 0:
        msg = (proc.stderr.strip() or f"exit status {proc.returncode}").splitlines()[-1]
        raise LorasimError(f"lorasim fit failed: {msg}")
    return out_path


def recommend_measured(exe, workload, rows_path, gpu=None, profile=None, memory_limit=None):
    """lorasim's pick under the refined profile, the measured splits at their measured time and peak
    (`lorasim recommend --measured ROWS`): {"splits": [...], "recommended": {...} or None}."""
    if workload.lengths_path is None:
        cmd = [exe, "recommend", "--format", "json", "--effective-batch", str(workload.effective_batch),
               "--measured", rows_path] + OWN_ROWS + base_flags(gpu, profile) + workload.flags + _limit(memory_limit)
        pick = run_json(cmd)
        unmatched = [s for s in pick["splits"] if (s["micro_batch"], s["accumulation"]) in _tried(rows_path)
                     and not (s.get("measured") or s.get("measured_oom"))]
        if not unmatched:
            return pick
        # lorasim took the rows for another workload (it ignores those): a pick on predictions alone
        # could be a split that ran out of memory, so the rows are applied here instead.
        warnings.warn(f"tune: lorasim recommend --measured did not match {len(unmatched)} trial row(s) to the "
                      "workload; their measured time and peak are applied by tune itself")
    return _measured_overlay(predict(exe, workload, gpu, profile, memory_limit), rows_path)


def _tried(rows_path):
    return set(_measured_rows(rows_path))


def _measured_rows(rows_path):
    measured = {}
    with open(rows_path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                row = json.loads(line)
                measured[(row["micro_batch"], row["accumulation"])] = row
    return measured


def _measured_overlay(prediction, rows_path):
    # `--measured` replays fixed-length data only; for data of many lengths the rule is applied
    # here: a measured split takes its measured step time, and fits when its measured peak leaves
    # the usable memory free (an oom row: it does not fit).
    usable = prediction.get("usable_memory_bytes")
    measured = _measured_rows(rows_path)
    for s in prediction["splits"]:
        row = measured.get((s["micro_batch"], s["accumulation"]))
        if row is None:
            continue
        if row.get("oom"):
            s["fits"] = False
            continue
        s["step_time_s"] = row["step_time_s"]
        peak = row.get("peak_reserved_bytes")
        if peak is not None and usable is not None:
            s["fits"] = peak <= usable
        elif peak is None:
            s["fits"] = True  # it ran: on the CPU there is no peak to hold against a limit
    fitting = [s for s in prediction["splits"] if s["fits"]]
    best = min(fitting, key=lambda s: s["step_time_s"]) if fitting else None
    prediction["recommended"] = (None if best is None else
                                 {"micro_batch": best["micro_batch"], "accumulation": best["accumulation"],
                                  "step_time_s": best["step_time_s"]})
    return prediction

"""ilkarman/DeepLearningFrameworks' claim (other-studies.md): cuDNN autotuning speeds up training."""

from __future__ import annotations

from analysis.claims import Claim, ClaimResult, ResultsTable, insufficient, not_in_campaign, verdict_for
from analysis.stats import describe, format_number
from analysis.sweeps import group_label, sweep_groups
from bench import switches

STUDY = "ilkarman/DLF"
ON, OFF = "on", "off"


def ilkarman_cudnn_autotune_helps(t: ResultsTable) -> ClaimResult:
    """Successful GPU runs of a cudnn_autotune sweep (their sweep point names it alone: make ilkarman-autotune-gpu),
    grouped by workload, framework, runner, profile, data and epoch count, with runs at on and at off. Reproduced
    when in every group the mean training time with autotuning on is below the mean with it off; not reproduced
    otherwise. Insufficient data (not in this campaign) without such runs."""
    groups = [(k, v) for k, v in sweep_groups(t.ok_rows, switches.AUTOTUNE, min_points=1) if k["device"] == "gpu"]
    if not groups:
        return not_in_campaign("GPU runs of one workload and framework with cuDNN autotuning on and off "
                               "(make ilkarman-autotune-gpu)")
    parts, holds, ids = [], True, []
    for key, by_value in groups:
        on = describe(r["training_time_s"] for r in by_value.get(ON, [])).mean
        off = describe(r["training_time_s"] for r in by_value.get(OFF, [])).mean
        if on is None or off is None or on <= 0:
            continue
        holds &= on < off
        ids += [r["run_id"] for rows in by_value.values() for r in rows]
        parts.append(f"{group_label(key)}: on {format_number(on)} s, off {format_number(off)} s, off/on "
                     f"{off / on:.2f}× ({len(by_value[ON])} and {len(by_value[OFF])} runs)")
    if not parts:
        return insufficient("no GPU group of the cudnn_autotune sweep has successful runs both on and off",
                            [r["run_id"] for _, v in groups for rows in v.values() for r in rows])
    return ClaimResult(verdict_for(holds), "; ".join(parts), tuple(ids))


CLAIMS: list[Claim] = [
    Claim("ilkarman-1", STUDY, "Enabling cuDNN autotuning speeds up training.",
          ilkarman_cudnn_autotune_helps, load_sensitive=True, decided_by=("ilkarman-autotune-gpu",)),
]

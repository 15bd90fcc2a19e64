"""Wu et al.'s claims (analysis.studies.wu) on small hand-made result tables."""

from __future__ import annotations

from analysis.claims import INSUFFICIENT, NOT_REPRODUCED, REPRODUCED
from analysis.studies import wu
from tests.analysis.studies.claimcheck import assert_not_in_campaign, check, epochs_of
from tests.resultrows import row


def test_wu_epochs_claim_is_dlbench_claim8s_test() -> None:
    # Cumulative 1, 2, 3, 33 is not a straight line (R² 0.65, see DLBench claim 8).
    a, b = row("keras", "cnn-mnist"), row("pytorch", "cnn-mnist")
    jump = {a["run_id"]: epochs_of([10, 10, 10, 10]), b["run_id"]: epochs_of([1, 1, 1, 30])}
    assert check(wu.wu_time_proportional_to_epochs, [a, b], jump).verdict == NOT_REPRODUCED


def test_wu_batch_size_claims() -> None:
    sweep = [row("tensorflow", "cnn-mnist", batch=50, acc=99.2, cpu=80), row("tensorflow", "cnn-mnist", batch=5000,
                                                                             acc=95.9, cpu=40)]
    res = check(wu.wu_larger_batch_lower_accuracy, sweep)
    assert res.verdict == REPRODUCED and "accuracy 99.2 % at batch_size 50, 95.9 % at 5000" in res.evidence
    assert check(wu.wu_cpu_use_falls_with_batch, sweep).verdict == REPRODUCED
    flipped = [row("tensorflow", "cnn-mnist", batch=50, acc=95, cpu=40), row("tensorflow", "cnn-mnist", batch=5000,
                                                                             acc=99, cpu=80)]
    assert check(wu.wu_larger_batch_lower_accuracy, flipped).verdict == NOT_REPRODUCED
    assert check(wu.wu_cpu_use_falls_with_batch, flipped).verdict == NOT_REPRODUCED
    res = check(wu.wu_larger_batch_lower_accuracy, [row("tensorflow", "cnn-mnist")])
    assert res.verdict == INSUFFICIENT and res.evidence.startswith("not in this campaign")


def test_wu_learning_rate_claim() -> None:
    sweep = [row("tensorflow", "cnn-mnist", lr=0.1, acc=90, time=100),
             row("tensorflow", "cnn-mnist", lr=0.001, acc=80, time=105)]
    res = check(wu.wu_learning_rate_changes_accuracy_not_time, sweep)
    assert res.verdict == REPRODUCED and "accuracy spread 10.00 pp, time max/min 1.05×" in res.evidence
    slower = [row("tensorflow", "cnn-mnist", lr=0.1, acc=90, time=100),
              row("tensorflow", "cnn-mnist", lr=0.001, acc=80, time=200)]
    assert check(wu.wu_learning_rate_changes_accuracy_not_time, slower).verdict == NOT_REPRODUCED
    assert check(wu.wu_learning_rate_changes_accuracy_not_time, sweep[:1]).verdict == INSUFFICIENT


def test_wu_claims_without_the_experiment_are_not_in_this_campaign() -> None:
    assert_not_in_campaign(wu.wu_eigen_beats_mkl)
    assert_not_in_campaign(wu.wu_too_many_threads_slow)

"""Wu et al.'s claims (studies/wu/claims.py) on small hand-made result tables: each sweep's runs are those whose
sweep point names that axis alone (the run table's `sweep`), as make wu-cpu-batch, wu-cpu-lr, wu-cpu-threads and
wu-cpu-blas write them."""

from __future__ import annotations

from typing import Any

from analysis.claims import INSUFFICIENT, NOT_IN_CAMPAIGN, NOT_REPRODUCED, REPRODUCED
from studies.wu import claims as wu
from tests.resultrows import row
from tests.studies.claimcheck import assert_not_in_campaign, check, epochs_of


def _point(fw: str, wl: str, axis: str, value: Any, **kw: Any) -> dict[str, Any]:
    """A run-table row at one sweep point; blas_loaded / threads / blas given as keywords land in the row."""
    extra = {k: kw.pop(k) for k in ("blas_loaded", "blas") if k in kw}
    base = row(fw, wl, **kw)
    base.update(extra, sweep=f"{axis}={value}", run_id=f"{base['run_id']}-{axis}{value}")
    base[f"sweep_{axis}"] = value
    if axis == "batch_size":
        base["batch_size"] = value
    if axis == "learning_rate":
        base["learning_rate"] = value
    if axis == "threads":
        base["threads"] = value
    if axis == "blas":
        base["blas"] = value
    return base


def test_wu_epochs_claim_is_dlbench_claim8s_test() -> None:
    # Cumulative 1, 2, 3, 33 is not a straight line (R² 0.65, see DLBench claim 8).
    a, b = row("keras", "wu-tf-mnist"), row("pytorch", "wu-tf-mnist")
    jump = {a["run_id"]: epochs_of([10, 10, 10, 10]), b["run_id"]: epochs_of([1, 1, 1, 30])}
    assert check(wu.wu_time_proportional_to_epochs, [a, b], jump).verdict == NOT_REPRODUCED
    even = {a["run_id"]: epochs_of([10, 10, 10]), b["run_id"]: epochs_of([5, 5, 5])}
    assert check(wu.wu_time_proportional_to_epochs, [a, b], even).verdict == REPRODUCED


def test_wu_batch_size_claims_read_the_batch_sweep_alone() -> None:
    sweep = [_point("tensorflow", "wu-tf-mnist", "batch_size", 50, acc=99.2, cpu=80),
             _point("tensorflow", "wu-tf-mnist", "batch_size", 5000, acc=95.9, cpu=40)]
    # A baseline run (no sweep) and a thread-sweep run at batch 5000 with 99.9 %: neither is a batch-sweep run, so
    # the mean at 5000 stays 95.9 (with them it would be (95.9 + 99.9 + 99.9) / 3 = 98.6, still below 99.2, so
    # they are put at 99.9 > 99.2 to flip the verdict if they were read).
    others = [dict(row("tensorflow", "wu-tf-mnist", batch=5000, acc=99.9, cpu=90), run_id="baseline"),
              _point("tensorflow", "wu-tf-mnist", "threads", 4, batch=5000, acc=99.9, cpu=90)]
    res = check(wu.wu_larger_batch_lower_accuracy, sweep + others)
    assert res.verdict == REPRODUCED, res.evidence
    assert res.evidence == "tensorflow wu-tf-mnist/cpu: accuracy 99.2 % at batch_size 50, 95.9 % at 5000"
    assert set(res.run_ids) == {r["run_id"] for r in sweep}
    res = check(wu.wu_cpu_use_falls_with_batch, sweep + others)
    # CPU 80 % at 50, 40 % at 5000 (the others' 90 % left out).
    assert res.verdict == REPRODUCED and "CPU 80.0 % at batch_size 50, 40.0 % at 5000" in res.evidence
    flipped = [_point("tensorflow", "wu-tf-mnist", "batch_size", 50, acc=95, cpu=40),
               _point("tensorflow", "wu-tf-mnist", "batch_size", 5000, acc=99, cpu=80)]
    assert check(wu.wu_larger_batch_lower_accuracy, flipped).verdict == NOT_REPRODUCED
    assert check(wu.wu_cpu_use_falls_with_batch, flipped).verdict == NOT_REPRODUCED
    res = check(wu.wu_larger_batch_lower_accuracy, others)
    assert res.verdict == INSUFFICIENT and res.evidence.startswith(NOT_IN_CAMPAIGN)


def test_wu_learning_rate_claim() -> None:
    sweep = [_point("tensorflow", "wu-tf-mnist", "learning_rate", 0.1, acc=90, time=100),
             _point("tensorflow", "wu-tf-mnist", "learning_rate", 0.001, acc=80, time=105)]
    res = check(wu.wu_learning_rate_changes_accuracy_not_time, sweep)
    # Accuracy 80-90: spread 10 pp > 2; time 105 / 100 = 1.05 <= 1.2.
    assert res.verdict == REPRODUCED
    assert res.evidence == ("tensorflow wu-tf-mnist/cpu: learning rates 0.001, 0.1, accuracy 80.0-90.0 % (spread "
                            "10.00 pp), training time 100-105 s (max/min 1.05×)")
    # 200 / 100 = 2.00 > 1.2: the time changed too.
    slower = [sweep[0], _point("tensorflow", "wu-tf-mnist", "learning_rate", 0.001, acc=80, time=200)]
    assert check(wu.wu_learning_rate_changes_accuracy_not_time, slower).verdict == NOT_REPRODUCED
    # Accuracy 89-90: spread 1 pp <= 2: the rate hardly changed accuracy.
    flat = [sweep[0], _point("tensorflow", "wu-tf-mnist", "learning_rate", 0.001, acc=89, time=100)]
    assert check(wu.wu_learning_rate_changes_accuracy_not_time, flat).verdict == NOT_REPRODUCED
    assert check(wu.wu_learning_rate_changes_accuracy_not_time, sweep[:1]).verdict == INSUFFICIENT


def _tf_blas(value: str, time: float, loaded: str | None, repeat: int = 1) -> dict[str, Any]:
    return _point("tensorflow", "wu-tf-mnist", "blas", value, time=time, blas_loaded=loaded, repeat=repeat)


def test_wu_eigen_against_onednn_the_kits_mkl() -> None:
    # 500 / 100 = 5.00×, inside 2.5-10.
    res = check(wu.wu_eigen_beats_mkl, [_tf_blas("eigen", 100, "eigen"), _tf_blas("onednn", 500, "onednn")])
    assert res.verdict == REPRODUCED
    assert res.evidence == ("tensorflow wu-tf-mnist/cpu: eigen 100 s, onednn 500 s, onednn/eigen 5.00×; the study: "
                            "5.47× (Server-1), 5.08× (Server-2)")
    # 150 / 100 = 1.50×: Eigen faster, but not about 5×; 1,200 / 100 = 12.00×: more than 10×.
    for mkl in (150, 1200):
        res = check(wu.wu_eigen_beats_mkl, [_tf_blas("eigen", 100, "eigen"), _tf_blas("onednn", mkl, "onednn")])
        assert res.verdict == NOT_REPRODUCED, res.evidence


def test_wu_eigen_leaves_out_a_run_whose_record_names_another_backend() -> None:
    mismatch = _tf_blas("onednn", 100, "eigen", repeat=2)  # asked oneDNN, its process ran Eigen's kernels
    unrecorded = _tf_blas("eigen", 80, None, repeat=2)  # no record: counted as asked
    res = check(wu.wu_eigen_beats_mkl, [_tf_blas("eigen", 120, "eigen"), unrecorded,
                                        _tf_blas("onednn", 500, "onednn"), mismatch])
    # Eigen (120 + 80) / 2 = 100 s; oneDNN 500 s alone (with the mismatch it would be 300 s: 3.00×).
    assert res.verdict == REPRODUCED
    assert "eigen 100 s, onednn 500 s, onednn/eigen 5.00× (1 run recorded no backend: counted as asked)" in res.evidence
    assert res.evidence.endswith(f"left out, their record names another backend than asked: {mismatch['run_id']}")
    assert mismatch["run_id"] not in res.run_ids and unrecorded["run_id"] in res.run_ids


def test_wu_eigen_without_both_backends_says_what_the_sweep_holds() -> None:
    res = check(wu.wu_eigen_beats_mkl, [_tf_blas("eigen", 100, "eigen"),
                                        _point("theano", "wu-theano-lenet", "blas", "mkl", blas_loaded="mkl")])
    assert res.verdict == INSUFFICIENT and not res.evidence.startswith(NOT_IN_CAMPAIGN)
    assert "(the sweep's runs: tensorflow/cpu: eigen; theano/cpu: mkl)" in res.evidence
    assert_not_in_campaign(wu.wu_eigen_beats_mkl)


def _threads(fw: str, n: int, time: float, loaded: str | None) -> dict[str, Any]:
    return _point(fw, "wu-theano-lenet", "threads", n, time=time, blas_loaded=loaded)


def test_wu_threads_reads_openblas_runs_of_the_thread_sweep() -> None:
    theano = [_threads("theano", 1, 100, "openblas"), _threads("theano", 2, 60, "openblas"),
              _threads("theano", 4, 80, "openblas")]
    tf = [_threads("tensorflow", 1, 100, "onednn"), _threads("tensorflow", 4, 30, "onednn")]
    res = check(wu.wu_too_many_threads_slow, theano + tf)
    # Fastest 60 s at 2 threads; 80 s at 4: 80 / 60 = 1.33× >= 1.1. TensorFlow (oneDNN) is named, not counted
    # (its 4 threads are its fastest: counted, it would make the claim fail).
    assert res.verdict == REPRODUCED
    assert res.evidence == ("theano wu-theano-lenet/cpu: fastest 60.0 s at 2 threads, 80.0 s at 4 (1.33×); not "
                            "OpenBLAS, left out: tensorflow wu-theano-lenet/cpu (onednn)")
    assert set(res.run_ids) == {r["run_id"] for r in theano}
    # 62 / 60 = 1.03× < 1.1: the extra threads hardly cost anything.
    flat = theano[:2] + [_threads("theano", 4, 62, "openblas")]
    assert check(wu.wu_too_many_threads_slow, flat).verdict == NOT_REPRODUCED
    res = check(wu.wu_too_many_threads_slow, tf + [_threads("theano", 1, 100, None), _threads("theano", 2, 90, None)])
    assert res.verdict == INSUFFICIENT and "theano wu-theano-lenet/cpu (not recorded)" in res.evidence
    assert_not_in_campaign(wu.wu_too_many_threads_slow)


def test_every_wu_sweep_claim_names_its_experiment_when_the_campaign_lacks_it() -> None:
    for claim in wu.CLAIMS[1:]:
        assert_not_in_campaign(claim.check)
        assert claim.decided_by and claim.decided_by[0].startswith("wu-cpu"), claim.id

"""A minimal valid run.json for tests of the schema and the campaign logic, made the way the
entrypoint makes one: schema.run_record of a run request."""

from bench import request as run_request
from bench import schema


def minimal_request(run_id_seed: int = 0, **overrides) -> dict:
    """A small valid run request (cnn-mnist smoke, cpu); overrides replace top-level fields."""
    fields = {
        "framework": "pytorch", "era": "current", "workload": "cnn-mnist", "profile": "smoke",
        "spec": {"name": "cnn-mnist", "dataset": "mnist"},
        "data": {"dataset": "mnist", "source": "synthetic", "arrays_sha256": "ab" * 32, "path": "/data/mnist",
                 "train_indices": None, "test_indices": None},
        "device": "cpu", "threads": 1, "seed": run_id_seed, "repeat": 1, "campaign": "t", "runner": "local",
        "env_id": "cd" * 32,
    }
    fields.update(overrides)
    return run_request.make(**fields)


def minimal_run(run_id: str = "r1", status: str = "ok") -> dict:
    """The smallest run.json the schema accepts, ok or failed (cause crash)."""
    record = schema.run_record(minimal_request())
    record["run_id"] = run_id
    record["timing"].update(training_time_s=1.0, eval_time_s=0.1, setup_time_s=0.2,
                            train_start_unix=0.0, train_end_unix=1.0)
    record["results"].update(test_accuracy=0.5, final_loss=1.0, epochs_completed=1)
    return schema.finish(record, None if status == "ok" else {"cause": "crash", "message": "test"})

"""A minimal valid run.json for tests of the schema and the campaign logic."""

from bench import schema


def minimal_run(run_id: str = "r1", status: str = "ok") -> dict:
    """The smallest run.json the schema accepts."""
    return {
        "schema_version": schema.SCHEMA_VERSION, "run_id": run_id, "status": status,
        "failure": None if status == "ok" else {"cause": "crash", "message": "test"},
        "config": {"framework": "pytorch", "workload": "cnn-mnist", "profile": "smoke", "device": "cpu",
                   "seed": 0, "repeat": 1, "campaign": "t", "runner": "local"},
        "spec": {}, "dataset": {}, "environment": {}, "host": {}, "device_used": {}, "model": {},
        "timing": {"training_time_s": 1.0, "eval_time_s": 0.1, "setup_time_s": 0.2,
                   "train_start_unix": 0.0, "train_end_unix": 1.0, "definition": "test"},
        "results": {"test_accuracy": 0.5, "final_loss": 1.0, "epochs_completed": 1},
        "monitor": {}, "started_at": "2026-01-01T00:00:00+00:00", "finished_at": None,
    }

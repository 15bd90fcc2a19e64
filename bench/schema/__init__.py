"""The run artifact schema, defined once and checked on every write and every read.

A run directory holds five files (metrics.jsonl or iterations.csv by its protocol, bench/measurement.py):

- ``request.json``  the run request it was made from (bench/request.py), so it can be run again.
- ``run.json``      one object: configuration, versions, host, timings, status, summaries.
- ``metrics.jsonl`` one object per finished epoch (epoch protocol only).
- ``iterations.csv`` one row per timed mini-batch, warm-up included (iterations and inference protocols only).
- ``collective.csv`` one row per size, repetition and rank of a timed collective (family
  "collective" only: bench/collectives).
- ``monitor.csv``   one row per monitor sample (1 s), header row first.
- ``log.txt``       free-form output of the training process.

Every object carries ``schema_version``; readers refuse versions they do not know, so an old
checker never silently misreads a newer run. Version 1 run.json files (before the request and
the era existed) are read as version 2 with era 'current' and threads unknown.

Standard library only (and NumPy), CPython 3.6-clean: the entrypoint inside every image writes these files,
and the host's campaign and analysis read them.

One module per artifact, every name re-exported here (``from bench import schema``; ``schema.read_run``):

- ``base``        the schema version, the file names, SchemaError and the field checks all the others share.
- ``runfields``   what run.json holds: each section's fields, statuses, failure causes, timing definitions.
- ``run``         run.json's checks, its one constructor, its writer and reader; the run folders of a campaign.
- ``metrics``     metrics.jsonl.
- ``iterations``  iterations.csv, and the timing and inference figures summarized from it.
- ``collective``  collective.csv, and results.collective summarized from it.
- ``monitor``     monitor.csv, and run.json's monitor section summarized from it.
"""

# Every public name of the modules is re-exported here, the package's interface (noqa: ruff's F401 takes a
# re-export for an unused import); the modules import one another, never this package.
# timing.protocol's values (bench/measurement.py), which this module has always exported beside its own.
from bench.measurement import INFERENCE, ITERATIONS, TIMED_BATCHES  # noqa: F401
from bench.schema.base import (  # noqa: F401
    COLLECTIVE_FILE,
    ITERATIONS_FILE,
    LOG_FILE,
    METRICS_FILE,
    MONITOR_FILE,
    NUM,
    OPT_DICT,
    OPT_INT,
    OPT_NUM,
    OPT_STR,
    READABLE_VERSIONS,
    RUN_FILE,
    SCHEMA_VERSION,
    SchemaError,
)
from bench.schema.collective import (  # noqa: F401
    COLLECTIVE_COLUMNS,
    bus_bandwidth,
    read_collective,
    summarize_collective,
    validate_collective,
    write_collective,
)
from bench.schema.iterations import (  # noqa: F401
    ITERATION_COLUMNS,
    ITERATION_PHASES,
    iteration_stats,
    read_iterations,
    summarize_inference,
    summarize_iterations,
    validate_iterations,
    write_iterations,
)
from bench.schema.metrics import (  # noqa: F401
    METRIC_FIELDS,
    MetricsWriter,
    read_metrics,
    validate_metric,
)
from bench.schema.monitor import (  # noqa: F401
    MONITOR_COLUMNS,
    MONITOR_INTERVAL_S,
    format_monitor_row,
    monitor_header,
    monitor_window,
    other_load,
    read_monitor,
    summarize_monitor,
)
from bench.schema.run import (  # noqa: F401
    _check_device_gpus,
    base_problem,
    finish,
    iter_run_dirs,
    read_run,
    run_record,
    validate_run,
    write_run,
)
from bench.schema.runfields import (  # noqa: F401
    BASE_SOURCE_KINDS,
    COLLECTIVE_FAMILY,
    COLLECTIVE_TIME_BASIS,
    COLLECTIVE_TIMING_DEFINITION,
    FAILURE_CAUSES,
    INFERENCE_TIMING_DEFINITION,
    ITERATION_STATS,
    ITERATION_TIMING_DEFINITION,
    PYTHON_BUILD_FLAGS,
    RESULT,
    RESULT_CAUSES,
    RUN_AUTHORS_ACCURACY_FIELDS,
    RUN_BASE_FIELDS,
    RUN_COLLECTIVE_FIELDS,
    RUN_COLLECTIVE_SIZE_FIELDS,
    RUN_CONFIG_FIELDS,
    RUN_DATASET_FIELDS,
    RUN_FIELDS,
    RUN_GPU_FIELDS,
    RUN_INFERENCE_FIELDS,
    RUN_ITERATION_TIMING_FIELDS,
    RUN_LIBRARY_FIELDS,
    RUN_MONITOR_CONTENTION_FIELDS,
    RUN_PYTHON_BUILD_FIELDS,
    RUN_RAW_FILE_FIELDS,
    RUN_RESULTS_FIELDS,
    RUN_THROUGHPUT_FIELDS,
    RUN_TIMING_FIELDS,
    SETUP,
    SETUP_CAUSES,
    STATUSES,
    TIMING_DEFINITION,
    failure_kind,
)

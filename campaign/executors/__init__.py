"""Executors: where a campaign's planned runs are carried out, on this host or handed to a cluster."""

# local: this process runs them (campaign/execute.py); slurm: one job array (slurm.py);
# kubernetes: Indexed Jobs (kubernetes.py).
EXECUTORS = ("local", "slurm", "kubernetes")
# `python -m campaign run` exits with this when runs were handed to a scheduler and are not back yet.
QUEUED_EXIT = 3

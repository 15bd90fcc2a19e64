"""Host tooling that decides what runs and where: nothing here enters an image.

specs (workload specs, studies/*/workloads/*.toml), study (studies as data, studies/*/study.toml: each
experiment a make target, with its device, workloads, measurement protocol and sweep),
requests (one run resolved into its run request), plan (the matrix, the planned runs, the campaign
folder's settings), execute (run what is missing, publish each run folder atomically), runners
(local virtual environments, docker containers, the system Python as it is), preflight (can this
host's GPUs run an image's CUDA), hostcheck (can this Python run the host stages as it is), and
benchmarks of the kit itself (overhead, epochtimes). Command line: `python -m campaign`.
"""

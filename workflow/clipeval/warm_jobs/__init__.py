"""Warm jobs: the workflow's `python -m clipeval` jobs run in forks of processes that have imported their
libraries already.

A job of a small dataset spends most of its time starting: importing torch and
open_clip takes seconds of CPU (more on a GPU node's disks) before a few
blocks are encoded, and a plot job imports matplotlib to draw one figure. In a
local run (`snakemake --cores N`, no cluster executor, no conda or container)
the workflow puts a `python` of its own first on its jobs' PATH (shim.py).
It asks the run's manager (manager.py, a thread of the Snakemake process)
which server may run the job: one server per kind of job (torch, or plain),
numerics profile and thread count, started on the first job that needs it
(server.py). The server forks; the fork takes the job's working directory,
environment, standard streams and arguments, runs the command as
`python -m clipeval` would, and the job's `python` exits with its status.

Any job the manager cannot vouch for runs in a new interpreter, as before:
an environment that differs from its server's in a variable read when a
library loads, a command that must set such a variable itself before its
libraries load (score-probe), or no manager at all (a cluster's job, a conda
environment, CLIPEVAL_WARM_JOBS=0). Either way the job writes the same bytes.
"""

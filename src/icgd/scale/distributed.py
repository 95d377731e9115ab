"""Independent jobs side by side on Ray: a local runtime started in this process (nothing to set up), or an
existing cluster joined by address (`ray start --head` on one machine, `ray start --address HEAD:6379` on
the others; docs/sweeps.md). Used by `icgd sweep` (one job per trial) and `icgd verify --workers`/`--address`
(one job per declared model).

Why Ray Core tasks and not Ray Tune: a job here is a function that trains into a run directory and
returns a small record; Tune's trial schedulers, searchers and its own result folders would duplicate what
the run directories and `icgd.scale.sweep` already do (resume, tables), while tasks give what is missing:
placement on a cluster's CPUs/GPUs, a killed worker reported as an error of its job only, and cancellation.

Ray is an optional extra (`pip install -e ".[ray]"`); `available()` says whether it is installed. Nothing
starts at import.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from icgd.core.io import first_line  # also imported from here by icgd.scale.sweep


class RayUnavailable(ValueError):
    """Ray is needed (several workers, or a cluster address) but not installed, or the cluster at the given
    address cannot be joined (a ValueError: the command line reports it in one line)."""


def available() -> bool:
    """Whether Ray can be imported here."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def cores() -> int:
    """The CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclass
class Outcome:
    """What became of one job: its key, its return value, or the error that ended it (`killed`: its worker
    process died, e.g. killed by a signal or out of memory)."""

    key: Any
    value: Any = None
    error: str | None = None
    killed: bool = False


class Pool:
    """Jobs on Ray, each with `threads` CPUs (and torch threads), `gpus` GPUs. A local runtime is started with
    `workers * threads` CPUs when `address` is None; with an address ("auto" or "ray://host:10001" or
    "host:6379") the cluster's own resources apply and `workers` is ignored. Use as a context manager: the
    local runtime stops at exit (a joined cluster keeps running)."""

    def __init__(self, workers: int = 1, threads: int | None = None, address: str | None = None,
                 gpus: float = 0.0) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if not available():
            raise RayUnavailable('Ray is not installed: pip install -e ".[ray]" (or pip install "ray>=2.9")')
        self.workers, self.address, self.gpus = workers, address, gpus
        self.threads = threads if threads is not None else (max(1, cores() // workers) if address is None else 1)
        self._started = False
        self._remote: Any = None
        self._pending: dict[Any, Any] = {}  # object ref -> key

    def __enter__(self) -> "Pool":
        import ray

        if not ray.is_initialized():
            quiet = {"log_to_driver": False, "logging_level": logging.ERROR, "configure_logging": True}
            if self.address is None:
                # a small object store: jobs return small records, tensors stay in run directories
                ray.init(num_cpus=self.workers * self.threads, include_dashboard=False,
                         object_store_memory=100 * 2 ** 20, **quiet)
            else:
                try:
                    ray.init(address=self.address, **quiet)
                except (ConnectionError, RuntimeError, ValueError) as e:
                    raise RayUnavailable(f"cannot join the Ray cluster at {self.address!r}: {first_line(e)} "
                                         "(is `ray start --head` running there? docs/sweeps.md)") from None
            self._started = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._started and self.address is None:
            self._stop_local_jobs()
        else:
            self.cancel()
        if self._started:
            import ray

            ray.shutdown()
            self._started = False

    def _stop_local_jobs(self, wait: float = 60.0) -> None:
        """Stop the jobs of the local runtime this process started: SIGTERM to their worker processes (our
        children, titled "ray::_call"), so that a training job checkpoints and stops as on Ctrl-C; the shutdown
        that follows ends the rest. Not ray.cancel: its cancellation races with the reply of a job that is
        just finishing and can abort the driver ("Check failed: it != submissible_tasks_.end()", fixed upstream
        in ray-project/ray PR 54798; it failed our Ctrl-C test in one of four runs here with Ray 2.60, and once in CI)."""
        refs = list(self._pending)
        self._pending.clear()
        if not refs:
            return
        try:
            import psutil
        except ImportError:  # the shutdown alone ends the workers, a few seconds later
            return
        import ray

        signalled = 0
        for proc in psutil.Process().children(recursive=True):
            try:
                if proc.name() == "ray::_call":
                    proc.terminate()
                    signalled += 1
            except psutil.Error:  # it has just ended
                pass
        if signalled:  # each job returns (with its error) once it has checkpointed
            ray.wait(refs, num_returns=len(refs), timeout=wait)

    def submit(self, key: Any, fn: Callable, *args: Any) -> None:
        """Run fn(*args) as a job (fn must be importable by the workers: a module-level function)."""
        import ray

        if self._remote is None:  # retries are the caller's: it records each attempt
            self._remote = ray.remote(_call).options(num_cpus=self.threads, num_gpus=self.gpus, max_retries=0)
        self._pending[self._remote.remote(fn, self.threads, *args)] = key

    def __len__(self) -> int:
        return len(self._pending)

    def as_completed(self) -> Iterator[Outcome]:
        """The outcomes of the submitted jobs as they finish (jobs submitted meanwhile included)."""
        import ray
        from ray.exceptions import RayError, RayTaskError

        while self._pending:
            # in slices of half a second, so that Python's signal handler (Ctrl-C) runs between them whatever
            # Ray's wait does with signals. It did not cure what it was tried for: in the two-worker test suite a
            # Ray sweep ignored the interrupt with it as without (docs/lab-notes/project-test-time.md)
            done, _ = ray.wait(list(self._pending), num_returns=1, timeout=0.5)
            if not done:
                continue
            ref = done[0]
            key = self._pending.pop(ref)
            try:
                yield Outcome(key, ray.get(ref))
            except RayTaskError as err:  # the job raised: its own error, without Ray's wrapping
                cause = err.cause if getattr(err, "cause", None) is not None else err
                yield Outcome(key, error=f"{type(cause).__name__}: {first_line(cause)}")
            except RayError as err:  # the worker died (signal, out of memory) or the node was lost
                yield Outcome(key, error=f"{type(err).__name__}: {first_line(err)}", killed=True)

    def cancel(self) -> None:
        """Stop the jobs still pending or running (their workers are killed)."""
        import ray

        for ref in list(self._pending):
            try:
                ray.cancel(ref, force=True)
            except Exception:  # already finished, or the runtime is gone
                pass
        self._pending.clear()


def _call(fn: Callable, threads: int, *args: Any) -> Any:
    """A job's body on a worker: torch gets the job's CPU share, then fn runs."""
    import torch

    torch.set_num_threads(max(1, threads))
    return fn(*args)


def say(msg: str, quiet: bool = False) -> None:
    """One progress line on stderr."""
    if not quiet:
        print(msg, file=sys.stderr, flush=True)

"""The ``ray`` build engine: a generation built by a pool of Ray actors, from one snapshot of the
source (registered through ptah's door by :mod:`ptah_ray.plugin`).

The driver (this process):

1. refuses what one machine owns: a SQLite source or a SQLite store is one
   file (InputError, exit 2);
2. takes the store's build lock for the generation -- the lock a local build
   takes, so a local and a Ray build of one generation exclude each other;
3. starts Ray (``ray.init``: a local instance without an address, the cluster
   at ``ray_address`` with one; a process that already called ``ray.init``
   keeps its own; a local instance ptah started is shut down on every way
   out, SIGTERM included), refuses (exit 2) a pool that asks for more CPUs or
   GPUs than the whole cluster has -- Ray would keep it pending for ever --
   and starts its pool of actors (at most :data:`MAX_ACTORS`)
   (:class:`~ptah_ray.partition.PartitionWorker`), which start
   (a process, its imports, a store connection) while the driver
4. opens the source's read-only ``REPEATABLE READ`` transaction, exports its
   snapshot (``pg_export_snapshot()``) and cuts the rows it sees into key
   ranges (:meth:`PartitionedSource.partitions`), keeping the transaction open
   (and so the snapshot importable) until every partition is done; then it
   registers the generation, indexes its vectors by key once (so each
   partition counts its range's vectors, and reads their row identities when
   some rows are gone, through an index, not by a scan of the whole table)
   and hands the partitions to the actors, at most
   one partition per actor at a time: a slow actor holds back only its own
   next partition, and no more rows are read than the actors embed;
5. reports progress (rows read of the snapshot's rows, so rows/s and ETA, and
   partitions done) and, once every partition has succeeded, the summary.

Why the driver's transaction stays open for the whole build: an exported
snapshot can be imported (``SET TRANSACTION SNAPSHOT``) only while the
transaction that exported it is open, and each partition imports it when it
begins -- the last one may begin long after the first. Holding it open keeps
the source's ``VACUUM`` from removing rows dead since the snapshot, so it is
closed on every way out: the build's end, a failed partition, an error, a
Ctrl-C (the ``with`` around it closes the connection, and PostgreSQL ends the
transaction), before the actors are stopped.

A partition that fails (an actor killed, a node lost, a model error) leaves
its committed batches; the other partitions run to the end, then the build
fails (exit 3) saying how many partitions did not finish: the next build,
either engine, embeds exactly what is missing. A ptah error raised in an actor
(a filter PostgreSQL refuses, a duplicate key) is raised here as itself.
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ptah import BuildSummary, InputError, OperationalError, PtahError
from ptah.adapters.sources.base import source_kind
from ptah.adapters.stores.registry import store_kind
from ptah.core.errors import SourceUnavailable
from ptah.services.build import library_versions, register_generation
from ptah.services.project import Opened, refuse_build, stored_probe
from ptah_ray.sealed import Sealed, scrub

LOCAL_OBJECT_STORE = (
    256 * 2**20
)  # bytes; partitions and results are small: vectors go straight to PostgreSQL
PARTITIONS_PER_ACTOR = 4
PROGRESS_SECONDS = (
    0.5  # how often running actors are asked how far they are, when progress is shown
)
ACTOR_START_SECONDS = 300  # to start and open a model, once the cluster has room for them all
MAX_ACTORS = 1024
CONNECT_SECONDS = 5  # for a --ray-address to answer at all


class RayUnavailable(OperationalError):
    """Ray is not installed, or the cluster cannot be reached (exit 3)."""


class BuildIncomplete(OperationalError):
    """Some partitions did not finish; their committed batches are kept (exit 3)."""


def build(
    project: Opened, name: str | None = None, progress: Callable | None = None, **options
) -> BuildSummary:
    """Bring generation ``name`` up to date on Ray; see the module's documentation for the steps."""
    try:
        return _build(project, name, progress, **options)
    except (
        RayUnavailable,
        BuildIncomplete,
    ) as exc:  # they quote what Ray or a worker said: never a password
        text = str(exc)
        clean = scrub(text, Sealed(project.spec.source.database), Sealed(project.spec.store))
        if clean == text:
            raise
        raise type(exc)(clean) from None


def _build(
    project: Opened,
    name: str | None,
    progress: Callable | None,
    *,
    ray_address: str | None = None,
    partitions: int | None = None,
    actors: int | None = None,
    actor_cpus: float | None = None,
    actor_gpus: float | None = None,
) -> BuildSummary:
    from ptah.adapters.stores.pgvector import PgvectorStore
    from ptah_ray.partition import BuildPlan
    from ptah_ray.partitions import PartitionedSource
    from ptah_ray.ranges import ensure_range_index

    started = time.perf_counter()
    generation = project.generation(name)
    refuse_build(generation)
    _refuse_single_machine(project)
    for option, value in (("--partitions", partitions), ("--actors", actors)):
        if value is not None and value < 1:
            raise InputError(f"{option} must be at least 1, not {value}")
    if actors is not None and actors > MAX_ACTORS:
        raise InputError(
            f"--actors must be at most {MAX_ACTORS:,}, not {actors:,}: each actor is a process holding "
            "a model and a store connection"
        )
    for option, share in (("--actor-cpus", actor_cpus), ("--actor-gpus", actor_gpus)):
        if share is not None and share < 0:
            raise InputError(f"{option} must be 0 or more, not {share}")
    ray = _ray()
    if not ray.is_initialized():
        _reach(ray_address)  # before the store is asked
    settings = generation.settings
    identity = generation.identity.identity
    store = project.store(create=True)
    assert isinstance(store, PgvectorStore), "_refuse_single_machine refused every other store"
    spec = project.spec
    with store.build_lock(identity, settings.name), _session(ray, ray_address):
        workers: list = []
        try:
            pool = _pool(ray, actors, actor_cpus, actor_gpus)
            _refuse_unplaceable(ray, pool, actor_cpus, actor_gpus)
            plan = BuildPlan.sealing(
                spec.source, settings, spec.root, spec.store, identity, 16 * settings.batch_size
            )
            workers = _actors(ray, plan, pool, actor_cpus, actor_gpus)
            opening = [
                worker.open.remote() for worker in workers
            ]  # they start while the snapshot is cut
            with PartitionedSource(
                spec.source, spec.root
            ) as source:  # open until every partition is done
                snapshot = source.export_snapshot()
                total = source.count()
                ranges = source.partitions(partitions or PARTITIONS_PER_ACTOR * pool, rows=total)
                with store.snapshot() as snap:
                    record = snap.generation(identity)
                _started(ray, opening)
                if (
                    record is None
                ):  # the first build: one actor opens the model for its dimension and probe
                    dimension, probe = _get(ray, workers[0].describe.remote())
                    record = register_generation(
                        store, generation, dimension, library_versions(settings), probe
                    )
                else:
                    record = register_generation(
                        store,
                        generation,
                        record.dimension,
                        record.library_versions,
                        stored_probe(record.settings),
                    )
                ensure_range_index(store, identity, source.key_kinds)
                _get(ray, [worker.begin.remote(snapshot, record.dimension) for worker in workers])
                results, failures, usage = _run(ray, workers, ranges, total, progress)
        finally:
            for worker in workers:
                ray.kill(
                    worker
                )  # now, not when the last handle goes: a kept traceback would hold their CPUs
        deleted = (
            0
            if failures
            else _settle_unsplittable(
                store, identity, source.key_kinds, results, where=source.where
            )
        )
    if failures:
        raise BuildIncomplete(
            f"{len(failures)} of {len(ranges)} partitions of generation {settings.name} did not finish "
            f"({failures[0]}); the batches they committed are kept: run the build again to finish it"
        )
    project.forget_matrices()
    rows = sum(r.rows for r in results)
    embedded = sum(r.embedded for r in results)
    return BuildSummary(
        generation=settings.name,
        identity=identity,
        rows=rows,
        embedded=embedded,
        deleted=deleted + sum(r.deleted for r in results),
        unchanged=rows - embedded,
        dimension=record.dimension,
        seconds=round(time.perf_counter() - started, 3),
        usage=usage,
    )


def _refuse_single_machine(project: Opened) -> None:
    spec = project.spec
    if source_kind(spec.source.database) != "postgresql":
        raise InputError(
            "--engine ray reads a PostgreSQL source: this source is a SQLite file, which one machine "
            "reads; build it with the local engine"
        )
    if store_kind(spec.store) != "pgvector":
        raise InputError(
            "--engine ray writes to a pgvector store (store: postgresql://…): this store is a SQLite "
            "file, which one machine writes; build it with the local engine"
        )


def _ray():
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable(
            f"Ray is not installed ({exc}); install it with: pip install 'ray>=2.9' "
            "(a dependency of ptah-ray)"
        ) from None
    return ray


@contextmanager
def _session(ray, address: str | None) -> Iterator[None]:
    """Ray joined (:func:`_connect`) for one build. A local instance ptah started is shut down on
    every way out: the build's end, an error, Ctrl-C and SIGTERM, which, in the main thread, raises
    SystemExit(143) once (and is ignored after, so a second one cannot cut the shutdown short):
    Ray's own handler stops Ray's processes under the running driver, which then aborts."""
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGTERM) if main else None
    owned = _connect(ray, address)
    if owned and main:
        signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        if owned:
            try:
                ray.shutdown()
            finally:
                if main:
                    signal.signal(signal.SIGTERM, before if before is not None else signal.SIG_DFL)


def _terminated(signum: int, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def _connect(ray, address: str | None) -> bool:
    """Join the cluster at ``address`` (None: start a local instance); False when this process had
    joined one."""
    if ray.is_initialized():
        return False
    options = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
    if address is None:
        options["object_store_memory"] = LOCAL_OBJECT_STORE
    try:
        ray.init(address=address, **options)
    except Exception as exc:  # ConnectionError, ValueError, RuntimeError: Ray says what failed
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise RayUnavailable(
            f"cannot start or reach {where} ({str(exc).splitlines()[0] if str(exc) else exc!r})"
        ) from None
    return True


def _reach(address: str | None) -> None:
    """Refuse at once a cluster address where nothing answers within CONNECT_SECONDS: ``ray.init``
    would retry for minutes. Only a ``host:port`` (or ``ray://host:port``) is tried; ``auto`` and
    the like go to Ray."""
    host, _, port = (address or "").split("://", 1)[-1].rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        return
    if not 0 < int(port) < 65536:
        raise InputError(f"--ray-address {address}: the port must be 1 to 65535")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        why = (
            f"no answer within {CONNECT_SECONDS:g} s"
            if isinstance(exc, TimeoutError)
            else exc.strerror or str(exc)
        )
        raise RayUnavailable(
            f"cannot reach the Ray cluster at {address} ({why}): start Ray there (ray start --head) "
            "or give the address it printed"
        ) from None


def _pool(ray, actors: int | None, cpus: float | None, gpus: float | None) -> int:
    """How many actors: as asked, else as many as the cluster's CPUs (and GPUs, if each needs some)
    hold."""
    if actors is not None:
        return actors
    resources = ray.cluster_resources()
    fits = (
        int(resources.get("CPU", 1) // (cpus or 1)) if (cpus if cpus is not None else 1) > 0 else 1
    )
    if gpus:
        fits = min(fits, int(resources.get("GPU", 0) // gpus))
    return max(1, fits)


def _refuse_unplaceable(ray, count: int, cpus: float | None, gpus: float | None) -> None:
    """InputError (exit 2) naming the resource when ``count`` actors ask for more CPUs or GPUs than
    the whole cluster has: Ray would keep them pending, and the build would wait for them, for
    ever."""
    resources = ray.cluster_resources()
    for name, each, option in (
        ("CPU", 1 if cpus is None else cpus, "--actor-cpus"),
        ("GPU", gpus or 0, "--actor-gpus"),
    ):
        needed, has = count * each, resources.get(name, 0)
        if needed > has + 1e-6:  # Ray counts resources in steps of 0.0001: 3 x 0.1 CPU fit 0.3
            raise InputError(
                f"{count:,} Ray actor{'s' if count != 1 else ''} of {each:g} {name} each need {needed:g} "
                f"{name} in all and the Ray cluster has {has:g} {name}: lower --actors or {option}"
            )


def _actors(ray, plan, count: int, cpus: float | None, gpus: float | None) -> list:
    from ptah_ray.partition import PartitionWorker

    remote = ray.remote(PartitionWorker).options(
        num_cpus=1 if cpus is None else cpus, num_gpus=gpus or 0, max_concurrency=2, max_restarts=0
    )
    return [remote.remote(plan) for _ in range(count)]


def _started(ray, opening: list) -> None:
    """Wait for every actor to start and open the store; RayUnavailable when the cluster cannot
    place them all in time."""
    ready, _ = ray.wait(opening, num_returns=len(opening), timeout=ACTOR_START_SECONDS)
    if len(ready) < len(opening):
        raise RayUnavailable(
            f"only {len(ready)} of {len(opening)} Ray actors started within {ACTOR_START_SECONDS} s: "
            "the cluster lacks the CPUs or GPUs they ask for (--actors, --actor-cpus, --actor-gpus)"
        )
    _get(ray, ready)


def _get(ray, refs):
    """``ray.get``, with a ptah error raised in an actor raised here as itself."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, PtahError):
            raise exc.cause from None
        raise RayUnavailable(f"a Ray worker failed: {_first_line(exc.cause or exc)}") from None
    except ray.exceptions.RayError as exc:
        raise RayUnavailable(f"a Ray worker failed: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[-1] if text else type(exc).__name__)[:300]


def _run(ray, workers: list, ranges: list, total: int, progress: Callable | None):
    """Hand each key range to an idle actor until all are done; ``(results, failures, usage)``."""
    queue = deque(enumerate(ranges))
    idle = list(workers)
    running: dict = {}  # ObjectRef -> (actor, index)
    results: list = []
    failures: list[str] = []
    first_error = None
    done_rows = 0
    _report(progress, 0, total, 0, len(ranges))
    while queue or running:
        while idle and queue and first_error is None:
            worker, (index, within) = idle.pop(), queue.popleft()
            running[worker.run.remote(index, within)] = (worker, index)
        if not running:
            break
        if (
            progress is not None
        ):  # asked after the idle actors got their next partition, so none waits for it
            in_flight = _in_flight(ray, list(running.values()))
            _report(progress, min(total, done_rows + in_flight), total, len(results), len(ranges))
        # Woken by a partition's end; with progress to show, also every PROGRESS_SECONDS to ask how
        # far they are.
        ready, _ = ray.wait(
            list(running), num_returns=1, timeout=None if progress is None else PROGRESS_SECONDS
        )
        for ref in ready:
            worker, index = running.pop(ref)
            try:
                result = ray.get(ref)
            except ray.exceptions.RayTaskError as exc:  # the actor lives: its partition raised
                if isinstance(exc.cause, PtahError):
                    first_error = first_error or exc.cause
                failures.append(f"partition {index + 1}: {_first_line(exc.cause or exc)}")
                idle.append(worker)
            except (
                ray.exceptions.RayError
            ) as exc:  # the actor or its node is gone: its partition is not done
                failures.append(f"partition {index + 1}: its worker died ({_first_line(exc)})")
            else:
                results.append(result)
                done_rows += result.rows
                idle.append(worker)
        if not idle and not running:
            failures.extend(
                f"partition {index + 1}: no worker was left to run it" for index, _ in queue
            )
            queue.clear()
    _report(progress, min(total, done_rows), total, len(results), len(ranges))
    if first_error is not None:
        raise first_error
    usage = _usage(ray, idle)
    return results, failures, usage


def _in_flight(ray, running: list) -> int:
    """Rows the running partitions (``(actor, index)``) have read so far; 0 for an actor that does
    not answer in time, or that has not begun the partition yet (it still counts its previous
    one)."""
    refs = {worker.progress.remote(): index for worker, index in running}
    ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=PROGRESS_SECONDS)
    read = 0
    for ref in ready:
        try:
            index, rows, _ = ray.get(ref)
        except ray.exceptions.RayError:
            continue
        read += rows if index == refs[ref] else 0
    return read


def _report(
    progress: Callable | None, done: int, total: int, partitions_done: int, partitions: int
) -> None:
    if progress is None:
        return
    progress(done, total)
    hears_partitions = getattr(progress, "partitions", None)
    if callable(hears_partitions):
        hears_partitions(partitions_done, partitions)


def _usage(ray, workers: list) -> dict | None:
    """What the actors asked a service, summed (None: no service was asked)."""
    try:
        found = [
            usage
            for usage in ray.get([worker.usage.remote() for worker in workers])
            if usage is not None
        ]
    except ray.exceptions.RayError:
        return None
    if not found:
        return None
    summed = dict(found[0])
    for usage in found[1:]:
        for name, value in usage.items():
            if isinstance(value, (int, float)) and isinstance(summed.get(name), (int, float)):
                summed[name] = summed[name] + value
            elif value is None:
                summed[name] = None
    return summed


def _settle_unsplittable(
    store, identity: str, kinds: tuple[str, ...], results: list, where: str
) -> int:
    """Rows whose key holds U+001F inside a component: refuse two that read alike, delete such
    vectors gone."""
    from ptah_ray.ranges import stored_unsplittable

    keys: dict[str, str] = {}
    for result in results:
        for key, row_identity in result.unsplittable:
            if keys.setdefault(key, row_identity) != row_identity:
                raise SourceUnavailable(
                    f"{where}: two rows have the key {key!r}, because a key column holds U+001F, "
                    "the separator of composite keys; key_fields must identify exactly one row"
                )
    present = set(keys.values())
    return store.delete_vectors(
        identity, sorted(set(stored_unsplittable(store, identity, kinds)) - present)
    )

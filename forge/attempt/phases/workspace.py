"""The workspace phase: the attempt's private directory, its seal, and its trees.

The attempt's trees (forge's source, the recipe's workspace and home, views, homes of the views,
task file) live in a private 0700 directory outside `--out` (`<attempt dir>/work` is a link to
it, for a person and for an executor that must tell a started attempt from a fresh one), so
nothing the recipe can reach names a path into `--out` or `--source`. The recipe and the checks
run in the bubblewrap sandbox where the platform allows, and the seal says which held.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from forge.attempt import sandbox
from forge.attempt.checkouts import make_attempt_source, make_workspace, save_index
from forge.attempt.egress.policy import allow_list_policy, public_policy
from forge.attempt.egress.proxy import EgressProxy, machine_addresses
from forge.attempt.limits import Bounds
from forge.attempt.phases.context import Context, Meter
from forge.attempt.record import Seal
from forge.attempt.redact import Redactor
from forge.attempt.sandbox import Sandbox
from forge.attempt.spec import AttemptSpec
from forge.clock import Clock
from forge.git import GitError

WORK_LINK = "work"
"""`<attempt dir>/work`: a link to the attempt's private directory while it exists."""


class Holdings:
    """What a cancelled attempt must release: its private directory and its egress proxy, each
    noted here the moment it exists, so a cancellation at any await finds it."""

    def __init__(self) -> None:
        self.work: Path | None = None
        self.egress: EgressProxy | None = None

    async def close_egress(self) -> None:
        """The proxy closed with every port and tunnel through it (after the last step)."""
        if self.egress is not None:
            await self.egress.stop()
            self.egress = None

    def discard(self, attempt_dir: Path) -> None:
        """A cancelled attempt leaves nothing: neither its private trees nor its directory."""
        if self.work is not None:
            shutil.rmtree(self.work, ignore_errors=True)
        shutil.rmtree(attempt_dir, ignore_errors=True)


@dataclass(frozen=True)
class Workspace:
    """The workspace phase's result: the context every later phase runs in, the seal that
    held, and why the trees could not be made (None when they were)."""

    context: Context
    seal: Seal
    error: str | None


async def workspace(spec: AttemptSpec, clock: Clock, held: Holdings) -> Workspace:
    """Make the private directory, seal it, and build the attempt source and the workspace."""
    work = await asyncio.to_thread(_make_work, spec)
    held.work = work
    seal, box = await _seal(spec, work, held)
    context = Context(
        spec=spec,
        clock=clock,
        work=work,
        sandbox=box,
        egress=held.egress,
        meter=Meter(),
        redactor=Redactor(spec.caller_env, spec.variant.formula.coding.pass_env),
        recipe_bounds=Bounds(spec.settings.limits, (work / "workspace", work / "home")),
    )
    return Workspace(context=context, seal=seal, error=await _trees(context))


def _make_work(spec: AttemptSpec) -> Path:
    """The private directory (0700, outside `--out`) and the link to it from the attempt dir."""
    label = spec.attempt_id.replace("/", "_")
    work = Path(tempfile.mkdtemp(prefix=f"forge-attempt-{label}-"))
    (work / "home").mkdir()
    (work / "task").mkdir()
    (spec.attempt_dir / WORK_LINK).symlink_to(work, target_is_directory=True)
    return work


async def _seal(spec: AttemptSpec, work: Path, held: Holdings) -> tuple[Seal, Sandbox | None]:
    """Sandbox the recipe when bubblewrap runs here; say why not when it does not."""
    atom = spec.variant.formula.coding
    probe = await asyncio.to_thread(sandbox.probe, spec.caller_env)
    if probe.program is None:
        return Seal(sandbox=None, reason=probe.reason, network=True), None
    launcher: list[str] = []
    if atom.network or atom.egress:
        own = await asyncio.to_thread(machine_addresses)
        policy = public_policy(own=own) if atom.network else allow_list_policy(atom.egress, own=own)
        held.egress = EgressProxy(policy)
        await held.egress.start()
        launcher = held.egress.wrap([])
    # The private directories' parent is scratch: other attempts' trees live beside this one.
    box = await asyncio.to_thread(
        Sandbox.for_attempt,
        probe.program,
        hidden=spec.hidden,
        mounts=atom.mounts,
        scratch=[str(work.parent)],
        tmpfs_bytes=spec.settings.limits.disk_bytes,
        launcher=launcher,
    )
    seal = Seal(sandbox=sandbox.NAME, reason=None, network=atom.network)
    if atom.egress:
        seal.egress = list(atom.egress)
    return seal, box


async def _trees(context: Context) -> str | None:
    """The attempt source and the recipe's workspace at the base commit; why not, if not."""
    spec, base = context.spec, context.plan.base_commit
    try:
        await make_attempt_source(spec.source, base, context.source)
        # With any way out, a public origin would point the recipe at the fix: no remote.
        origin = None if context.atom.network or context.atom.egress else spec.origin
        await make_workspace(context.source, base, context.workspace, origin)
        await save_index(context.workspace, context.stat_index)
    except (GitError, OSError) as error:
        return f"workspace preparation failed: {error}"
    return None


async def release(context: Context) -> str | None:
    """Remove the private directory and its link (unless workspaces are kept); the error that
    stopped it, if any."""
    spec = context.spec
    if spec.keep_workspaces:
        return None
    try:
        context.forced("cleanup")
        await asyncio.to_thread(shutil.rmtree, context.work)
        await asyncio.to_thread((spec.attempt_dir / WORK_LINK).unlink)
    except OSError as error:
        return str(error)
    return None

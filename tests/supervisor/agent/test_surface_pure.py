"""The pure parts of the agent surface: catalogues and tool calls from worker events, token appends
folded with their numbers, the usage pool, and a background call's output read only from its own
task file (the attacks: `..`, a planted link, another session's task, another seat's call)."""

from __future__ import annotations

import os
import typing
from pathlib import Path

import msgspec
import pytest

from forge.supervisor.agent import call_output, fold, usage
from forge.supervisor.agent.call_output import OutputRefused, read_tail, task_parts
from forge.supervisor.agent.records import UsageLedger
from forge.supervisor.agent.seat import AgentSeat, Update
from forge.wire import agent as wire
from forge.wire.seats import Seat
from forge.wire.window import SeatWindow
from forge.workers.agent import protocol as worker

KEY = Seat("acme", "web", "main")
OTHER = Seat("acme", "web", "other")
SESSION = "5f0c7a43-0000-4000-8000-000000000001"
UID = os.getuid()


def started(commands: list[str], agents: list[str]) -> worker.SessionStarted:
    return worker.SessionStarted(
        session_id=SESSION, model="m", permission_mode="default", cwd="/w", tools=[],
        slash_commands=commands, agents=agents,
    )  # fmt: skip


def variants(updates: list[Update]) -> list[str]:
    return [variant for variant, _ in updates]


def test_the_catalogues_are_pushed_only_when_an_init_moves_them() -> None:
    seat = AgentSeat(key=KEY, cwd="/w")
    first = seat.apply(started(["compact", "context"], ["general-purpose"]))
    assert variants(first) == ["agent_header", "slash_commands_changed", "subagents_changed"]
    assert first[1][1] == {"key": KEY, "slash_commands": ["compact", "context"]}
    assert variants(seat.apply(started(["compact", "context"], ["general-purpose"]))) == [
        "agent_header"
    ]
    moved = seat.apply(started(["compact"], ["general-purpose"]))
    assert variants(moved) == ["agent_header", "slash_commands_changed"]


def lifecycle(updates: list[Update]) -> list[tuple[str, str | None, str | None]]:
    return [
        (body["phase"], body["task_id"], body["outcome"])
        for variant, body in updates
        if variant == "command_lifecycle"
    ]


def call(call_id: str) -> worker.AssistantMessage:
    block = worker.ToolUseBlock(call_id, "Bash", {"command": "ls"})
    return worker.AssistantMessage(blocks=[block], model="m")


def test_a_tool_call_moves_through_its_lifecycle_under_its_tool_use_id() -> None:
    seat = AgentSeat(key=KEY, cwd="/w", session_id=SESSION)
    assert lifecycle(seat.apply(call("toolu_1"))) == [("requested", None, None)]
    asked = seat.apply(worker.PermissionAsk(ask_id="toolu_1", tool_name="Bash", input={}))
    assert variants(asked) == ["ask_pending", "command_lifecycle"]
    assert asked[1][1]["id"] == "toolu_1"
    ended = seat.apply(worker.ToolResult(tool_use_id="toolu_1", is_error=True, text="no"))
    assert lifecycle(ended) == [("ended", None, "error")]
    assert "toolu_1" not in seat.calls, "a plain call is forgotten once it ended"


def test_a_background_call_is_kept_until_its_task_ends() -> None:
    seat = AgentSeat(key=KEY, cwd="/w", session_id=SESSION)
    seat.apply(call("toolu_2"))
    seat.apply(worker.TaskStarted(task_id="bg1", tool_use_id="toolu_2", description="d"))
    result = worker.ToolResult(
        tool_use_id="toolu_2", is_error=False, text="running", background_task_id="bg1",
        background_output="/tmp/x/bg1.output",
    )  # fmt: skip
    assert lifecycle(seat.apply(result)) == [("backgrounded", "bg1", None)]
    assert seat.calls["toolu_2"].running
    ended = seat.apply(worker.TaskEnded(task_id="bg1", tool_use_id=None, status="completed"))
    assert lifecycle(ended) == [("ended", "bg1", "ok")]
    assert not seat.calls["toolu_2"].running
    assert seat.calls["toolu_2"].output_file == "/tmp/x/bg1.output"


def delta(text: str, index: int = 0, kind: typing.Literal["text", "thinking"] = "text") -> Update:
    message = wire.DeltaMessage(kind=kind, index=index, text=text)
    return ("chat_appended", {"key": KEY, "msg": message})


def test_a_run_of_token_appends_folds_into_one_frame_per_block() -> None:
    header: Update = ("agent_header", {"key": KEY})
    folded = fold.fold(
        [delta("Hel"), delta("lo"), delta(" there"), delta("hm", 0, "thinking"), header,
         delta("a", 1), delta("b", 1)]
    )  # fmt: skip
    assert [(variant, span) for (variant, _), span in folded] == [
        ("chat_appended", 3),
        ("chat_appended", 1),
        ("agent_header", 1),
        ("chat_appended", 2),
    ]
    assert folded[0][0][1]["msg"].text == "Hello there"
    assert folded[3][0][1]["msg"] == wire.DeltaMessage(kind="text", index=1, text="ab")


def test_a_folded_frame_keeps_every_number_of_its_run_for_seat_range() -> None:
    window = SeatWindow(KEY, "epoch")
    before = window.append(msgspec.Raw(b'{"a":1}'), 10)
    run = window.append(msgspec.Raw(b'{"chat_appended":{}}'), 30, span=3)
    after = window.append(msgspec.Raw(b'{"b":1}'), 10)
    assert (before, run, after) == (1, 2, 5)
    [(seq, _)] = window.range("epoch", 3, 3)
    assert seq == 2, "a number inside the run is answered with the run's one frame"
    assert [seq for seq, _ in window.range("epoch", 1, 5)] == [1, 2, 5]


def result(*models: tuple[str, int, float]) -> worker.Result:
    return worker.Result(
        session_id=SESSION, subtype="success", is_error=False, text="ok", num_turns=1,
        duration_ms=1, usage=worker.Usage(), cost_usd=None,
        model_usage={
            name: worker.ModelUsage(input_tokens=tokens, output_tokens=tokens, cost_usd=cost)
            for name, tokens, cost in models
        },
    )  # fmt: skip


def test_the_usage_pool_sums_per_seat_project_and_model_in_each_window() -> None:
    now = 40 * usage.DAY_MS + 3600_000
    spends = [
        *usage.spends_of(result(("opus", 10, 0.5), ("haiku", 2, 0.01)), KEY, now - 1000),
        *usage.spends_of(result(("opus", 5, 0.25)), OTHER, now - 2 * usage.DAY_MS),
        *usage.spends_of(result(("opus", 100, 9.0)), KEY, now - 35 * usage.DAY_MS),
    ]
    pool = usage.snapshot(spends, now)
    today, week, lifetime = pool["today"], pool["week"], pool["lifetime"]
    assert today["total"]["input_tokens"] == 12
    assert [row["key"] for row in today["by_seat"]] == [KEY]
    assert {row["model"]: row["cost_usd"] for row in week["by_model"]} == {
        "haiku": 0.01,
        "opus": 0.75,
    }
    assert {row["key"]: row["output_tokens"] for row in week["by_seat"]} == {KEY: 12, OTHER: 5}
    assert lifetime["by_project"] == [
        {"project": {"org": "acme", "name": "web"}, **lifetime["total"]}
    ]
    assert lifetime["total"]["input_tokens"] == 117
    assert usage.snapshot([], now)["month"] == {
        "by_model": [], "by_project": [], "by_seat": [], "total": None
    }  # fmt: skip


def test_the_usage_ledger_survives_a_restart_and_a_torn_line(tmp_path: Path) -> None:
    ledger = UsageLedger(tmp_path / "usage.jsonl")
    spends = usage.spends_of(result(("opus", 10, 0.5)), KEY, 1000)
    ledger.append(spends)
    with ledger.path.open("ab") as torn:
        torn.write(b'{"at_ms": 2')
    assert UsageLedger(ledger.path).load() == spends
    assert ledger.path.stat().st_mode & 0o777 == 0o600


# --- read_call_output's wall -----------------------------------------------------------------


def task_file(base: Path, session: str = SESSION, task: str = "bg1", text: str = "") -> Path:
    path = base / f"claude-{UID}" / "-w" / session / "tasks" / f"{task}.output"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def backgrounded(seat: AgentSeat, call_id: str, task: str, output: str | None) -> None:
    seat.apply(call(call_id))
    seat.apply(
        worker.ToolResult(
            tool_use_id=call_id, is_error=False, text="", background_task_id=task,
            background_output=output,
        )
    )  # fmt: skip


def read(seat: AgentSeat, call_id: str, base: Path, lines: int = 200) -> wire.CallOutput:
    asked = wire.ReadCallOutput(key=seat.key, id=call_id, lines=lines)
    return call_output.answer(seat, asked, {"CLAUDE_CODE_TMPDIR": str(base)})


def test_a_background_call_reads_the_newest_lines_of_its_own_task_file(tmp_path: Path) -> None:
    path = task_file(tmp_path, text="".join(f"line {n}\n" for n in range(10)))
    seat = AgentSeat(key=KEY, cwd="/w", session_id=SESSION)
    backgrounded(seat, "toolu_1", "bg1", str(path))
    answer = read(seat, "toolu_1", tmp_path, lines=3)
    assert (answer.lines, answer.truncated, answer.reason) == (
        ["line 7", "line 8", "line 9"], True, None
    )  # fmt: skip
    backgrounded(seat, "toolu_2", "bg1", None)
    assert read(seat, "toolu_2", tmp_path).lines[-1] == "line 9", "the slug is a wildcard"


def test_the_tail_of_a_large_file_is_bounded_and_starts_on_a_whole_line(tmp_path: Path) -> None:
    row = "x" * 99 + "\n"
    path = task_file(tmp_path, text=row * (3 * call_output.TAIL_BYTES // len(row)))
    seat = AgentSeat(key=KEY, cwd="/w", session_id=SESSION)
    backgrounded(seat, "toolu_1", "bg1", str(path))
    answer = read(seat, "toolu_1", tmp_path, lines=2000)
    assert answer.truncated
    assert set(answer.lines) == {"x" * 99}
    assert len(answer.lines) < call_output.TAIL_BYTES // len(row) + 1


@pytest.mark.parametrize(
    "named",
    [
        "{base}/claude-{uid}/-w/{session}/tasks/../../../../../etc/passwd",
        "{base}/claude-{uid}/-w/{session}/tasks/../tasks/bg1.output",
        "{base}/../etc/claude-{uid}/-w/{session}/tasks/bg1.output",
        "/etc/passwd",
        "{base}/claude-{uid}/-w/{other}/tasks/bg1.output",
        "{base}/claude-{uid}/-w/{session}/tasks/bg2.output",
        "{base}/claude-0{uid}/-w/{session}/tasks/bg1.output",
        "tasks/bg1.output",
    ],
)
def test_a_named_path_other_than_the_tasks_own_file_is_refused(tmp_path: Path, named: str) -> None:
    other = "5f0c7a43-0000-4000-8000-000000000002"
    task_file(tmp_path, session=other, text="another session's output")
    task_file(tmp_path, task="bg2", text="another task's output")
    path = named.format(base=tmp_path, uid=UID, session=SESSION, other=other)
    with pytest.raises(OutputRefused) as refused:
        task_parts(tmp_path, UID, SESSION, "bg1", path)
    assert refused.value.reason == "no_path"


@pytest.mark.parametrize("where", ["file", "tasks", "session"])
def test_a_link_planted_on_the_way_to_the_file_is_not_followed(tmp_path: Path, where: str) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "bg1.output").write_text("the key\n")
    (secret / "tasks").mkdir()
    (secret / "tasks" / "bg1.output").write_text("the key\n")
    path = task_file(tmp_path, text="mine\n")
    seat = AgentSeat(key=KEY, cwd="/w", session_id=SESSION)
    backgrounded(seat, "toolu_1", "bg1", str(path))
    planted = {"file": path, "tasks": path.parent, "session": path.parent.parent}[where]
    target = {"file": secret / "bg1.output", "tasks": secret, "session": secret}[where]
    os.rename(planted, planted.with_name(planted.name + ".moved"))
    planted.symlink_to(target)
    answer = read(seat, "toolu_1", tmp_path)
    assert answer.lines == []
    assert answer.reason == "unreadable"
    assert "link" in (answer.why or "")


def test_a_fifo_in_place_of_the_file_is_refused_without_blocking(tmp_path: Path) -> None:
    path = task_file(tmp_path)
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(OutputRefused) as refused:
        read_tail(tmp_path, task_parts(tmp_path, UID, SESSION, "bg1", str(path)), 10)
    assert refused.value.reason == "unreadable"


def test_another_seats_call_and_a_path_shaped_id_are_unknown_calls(tmp_path: Path) -> None:
    path = task_file(tmp_path, text="mine\n")
    mine, theirs = (AgentSeat(key=k, cwd="/w", session_id=SESSION) for k in (KEY, OTHER))
    backgrounded(mine, "toolu_1", "bg1", str(path))
    assert read(mine, "toolu_1", tmp_path).lines == ["mine"]
    assert read(theirs, "toolu_1", tmp_path).reason == "no_call"
    assert read(mine, "../../bg1.output", tmp_path).reason == "no_call"
    mine.apply(call("toolu_3"))
    assert read(mine, "toolu_3", tmp_path).reason == "not_background"


def test_a_task_id_or_session_that_is_not_an_id_is_refused(tmp_path: Path) -> None:
    for session, task in ((SESSION, "../bg1"), ("../" + SESSION, "bg1"), (SESSION, "")):
        with pytest.raises(OutputRefused):
            task_parts(tmp_path, UID, session, task, None)


def test_a_task_that_ends_before_its_call_s_result_and_twice_ends_once() -> None:
    seat = AgentSeat(key=KEY, cwd="/w", session_id=SESSION)
    seat.apply(call("toolu_4"))
    first = seat.apply(worker.TaskEnded(task_id="bg4", tool_use_id="toolu_4", status="failed"))
    assert lifecycle(first) == [("ended", "bg4", "error")]
    result = worker.ToolResult(
        tool_use_id="toolu_4", is_error=False, text="", background_task_id="bg4"
    )
    assert lifecycle(seat.apply(result)) == [("backgrounded", "bg4", None)]
    assert not seat.calls["toolu_4"].running
    again = worker.TaskEnded(task_id="bg4", tool_use_id=None, status="killed")
    assert seat.apply(again) == []

"""The Agent pane in a real browser against a real `forge supervise`, the real Claude Code CLI (the
SDK's bundled one) and forge's scripted model server (the only fake: the network).

One supervisor and one model server serve the module; each test starts its agent from the page
on a seat of its own and gives the model server its turns (`ModelServerThread.play`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, expect

from forge.testing.model_conversation import tool_results
from forge.testing.model_thread import ModelServerThread

from .agentkit import (
    AGENT_MS,
    AGENT_S,
    agent_project,
    agent_supervised,
    fits,
    idle,
    on_screen,
    open_seat,
    prompt,
    said,
    start_agent,
)
from .conftest import Supervised, poll
from .routing import routed

pytest.importorskip("claude_agent_sdk")
pytestmark = pytest.mark.timeout(900)

STREAMED = (
    "Hello from the scripted model. This answer arrives in many small deltas, "
    "and the page paints each one as it comes."
)


@pytest.fixture(scope="module")
def model() -> Iterator[ModelServerThread]:
    with ModelServerThread() as server:
        yield server


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return agent_project(tmp_path_factory.mktemp("agentweb"))


@pytest.fixture(scope="module")
def supervised(
    tmp_path_factory: pytest.TempPathFactory, model: ModelServerThread, project: Path
) -> Iterator[Supervised]:
    """This module's `forge supervise` (the one `phone` and `desktop` pair with), its agents
    pointed at the model server."""
    server = agent_supervised(tmp_path_factory.mktemp("agentsup"), model, project)
    server.start()
    yield server
    server.stop()


def test_a_phone_sees_the_answer_stream_and_allows_a_bash_command_the_desktop_sees_go(
    phone: BrowserContext,
    desktop: BrowserContext,
    supervised: Supervised,
    model: ModelServerThread,
    project: Path,
) -> None:
    model.play(
        {"say": STREAMED, "stall": {"after": 2}},
        {"when": {"user_text": "Make f.txt."}, "bash": "echo hi > f.txt && echo made it"},
        {"when": {"tool_result": "Bash"}, "say": "Done: f.txt is made."},
    )
    hand = phone.new_page()
    start_agent(hand, supervised, "phone")
    desk = desktop.new_page()
    open_seat(desk, supervised, "phone")
    prompt(hand, "Say hello.")
    model.wait_stalled(AGENT_S)
    streaming = hand.locator("[data-streaming]")
    expect(streaming).to_contain_text(STREAMED[:16], timeout=AGENT_MS)
    expect(said(hand, STREAMED)).to_have_count(0)
    model.release()
    expect(said(hand, STREAMED)).to_have_count(1)
    expect(streaming).to_have_count(0)
    idle(hand)

    prompt(hand, "Make f.txt.")
    ask = hand.locator('[data-ask-kind="permission"]')
    expect(ask).to_contain_text("echo hi > f.txt", timeout=AGENT_MS)
    expect(desk.locator('[data-ask-kind="permission"]')).to_contain_text("echo hi > f.txt")
    assert fits(hand), "the phone scrolls sideways with an ask up"
    allow = ask.get_by_role("button", name="Allow once")
    on_screen(hand, allow)
    on_screen(hand, hand.get_by_label("prompt", exact=True))
    allow.tap()
    expect(desk.locator("[data-ask]")).to_have_count(0)
    expect(hand.locator("[data-ask]")).to_have_count(0)
    expect(said(hand, "Done: f.txt is made.")).to_have_count(1, timeout=AGENT_MS)
    bash = hand.locator('[data-tool="Bash"]')
    expect(bash).to_have_attribute("data-tool-status", "done")
    bash.locator("summary").tap()
    expect(bash.locator("[data-tool-output]")).to_contain_text("made it")
    assert (project / "f.txt").read_text(encoding="utf-8") == "hi\n"
    assert fits(hand)


def test_a_denied_edit_leaves_the_file_as_it_was(
    desktop: BrowserContext, supervised: Supervised, model: ModelServerThread, project: Path
) -> None:
    notes = project / "notes.txt"
    notes.write_text("hi\n", encoding="utf-8")
    reason = "Keep notes.txt as it is."
    model.play(
        {"tool": {"name": "Read", "input": {"file_path": str(notes)}}},
        {
            "when": {"tool_result": "Read"},
            "edit": {"file_path": str(notes), "old_string": "hi", "new_string": "bye"},
        },
        {"when": {"tool_result": "Edit"}, "say": "Understood: notes.txt stays."},
    )
    page = desktop.new_page()
    start_agent(page, supervised, "edit")
    prompt(page, "Change hi to bye in notes.txt.")
    ask = page.locator('[data-ask-kind="permission"]')
    expect(ask.locator('[data-line="removed"]')).to_contain_text("hi", timeout=AGENT_MS)
    expect(ask.locator('[data-line="added"]')).to_contain_text("bye")
    ask.get_by_label("reason to deny").fill(reason)
    ask.get_by_role("button", name="Deny").click()
    expect(page.locator("[data-ask]")).to_have_count(0)
    expect(said(page, "Understood: notes.txt stays.")).to_have_count(1, timeout=AGENT_MS)
    edit = page.locator('[data-tool="Edit"]')
    expect(edit).to_have_attribute("data-tool-status", "error")
    edit.locator("summary").click()
    expect(edit.locator("[data-tool-output]")).to_contain_text(reason)
    expect(edit.locator('[data-line="added"]')).to_contain_text("bye")
    read = page.locator('[data-tool="Read"]')
    read.locator("summary").click()
    docs = read.get_by_role("link", name="Docs")
    expect(docs).to_have_attribute("href", "#/seat/acme/web/edit/docs")
    assert notes.read_text(encoding="utf-8") == "hi\n"


def test_a_question_is_answered_by_a_tap_and_home_shows_the_seat_waiting(
    phone: BrowserContext, desktop: BrowserContext, supervised: Supervised, model: ModelServerThread
) -> None:
    question = {"question": "Which colour?", "header": "Colour", "options": ["Red", "Blue"]}
    model.play(
        {"ask": question},
        {"when": {"tool_result": "AskUserQuestion"}, "say": "Blue it is."},
    )
    hand = phone.new_page()
    start_agent(hand, supervised, "question")
    home = desktop.new_page()
    home.goto(supervised.url)
    prompt(hand, "Pick a colour.")
    card = hand.locator('[data-ask-kind="question"]')
    expect(card).to_contain_text("Which colour?", timeout=AGENT_MS)
    seat_row = home.locator('[data-seat="acme/web/question"]')
    expect(seat_row.locator('[data-waiting="question"]')).to_be_visible()
    expect(home).to_have_title("(1) forge")
    blue = card.get_by_role("button", name="Blue")
    on_screen(hand, blue)
    blue.tap()
    expect(hand.locator("[data-ask]")).to_have_count(0)
    expect(said(hand, "Blue it is.")).to_have_count(1, timeout=AGENT_MS)
    expect(seat_row.locator("[data-waiting]")).to_have_count(0)
    expect(home).to_have_title("forge")


def test_a_prompt_queues_behind_a_turn_that_is_then_interrupted(
    desktop: BrowserContext, supervised: Supervised, model: ModelServerThread
) -> None:
    model.play(
        {"say": "A long answer that will not finish.", "stall": {"after": 1}},
        {"when": {"user_text": "Second question."}, "say": "The second answer."},
    )
    page = desktop.new_page()
    start_agent(page, supervised, "queue")
    prompt(page, "First question.")
    model.wait_stalled(AGENT_S)
    expect(page.locator("[data-turn-state]")).to_have_text("working", timeout=AGENT_MS)
    prompt(page, "Second question.")
    queued = page.get_by_label("waiting prompts")
    expect(queued).to_contain_text("Second question.", timeout=AGENT_MS)
    page.get_by_role("button", name="Interrupt").click()
    expect(said(page, "The second answer.")).to_have_count(1, timeout=AGENT_MS)
    expect(queued).to_have_count(0)
    idle(page)
    assert page.locator(".msg.user").all_inner_texts() == ["First question.", "Second question."]


def test_a_link_dropped_mid_turn_shows_every_message_once(
    desktop: BrowserContext, supervised: Supervised, model: ModelServerThread
) -> None:
    model.play({"say": STREAMED, "stall": {"after": 2}})
    page = desktop.new_page()
    links = routed(page)
    start_agent(page, supervised, "drop")
    watcher = desktop.new_page()
    open_seat(watcher, supervised, "drop")
    prompt(page, "Say hello.")
    model.wait_stalled(AGENT_S)
    expect(page.locator("[data-streaming]")).to_contain_text(STREAMED[:16], timeout=AGENT_MS)
    first = links[-1]
    first.deaf = True  # the rest of the turn is said while this page hears nothing
    model.release()
    expect(said(watcher, STREAMED)).to_have_count(1, timeout=AGENT_MS)
    idle(watcher)
    count = len(links)
    first.route.close()
    expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")
    expect(said(page, STREAMED)).to_have_count(1)
    expect(page.locator("[data-streaming]")).to_have_count(0)
    idle(page)
    assert page.locator(".msg.user").all_inner_texts() == ["Say hello."]
    [text] = page.locator(".msg.assistant").all_inner_texts()
    assert text.strip() == STREAMED
    turns = "() => JSON.stringify(window.forgeApp.seatAgent.turns)"
    assert page.evaluate(turns) == watcher.evaluate(turns), "the page repaired holds what was seen"
    assert len(links) > count
    assert "seat_range" in links[-1].kinds(), "the gap was read from the seat's window"


def test_older_turns_load_on_scroll_and_the_pane_keeps_its_place_across_a_switch(
    desktop: BrowserContext, supervised: Supervised, model: ModelServerThread
) -> None:
    count = 23  # past the snapshot's newest 20
    words = " ".join(["A line of the answer that takes up some room on the screen."] * 6)
    model.play(*({"say": f"Answer {n}. {words}"} for n in range(1, count + 1)))
    page = desktop.new_page()
    start_agent(page, supervised, "long")
    for n in range(1, count + 1):
        prompt(page, f"Prompt {n}.")
    expect(said(page, f"Answer {count}.")).to_have_count(1, timeout=AGENT_MS)
    idle(page)
    page.reload()
    expect(page.locator(".msg.user").last).to_have_text(f"Prompt {count}.", timeout=AGENT_MS)
    expect(page.locator(".msg.user").filter(has_text="Prompt 1.")).to_have_count(0)
    convo = page.locator(".convo")
    convo.evaluate("(el) => { el.scrollTop = 0; }")
    expect(page.locator(".msg.user").filter(has_text="Prompt 1.")).to_have_count(1)
    prompts = [f"Prompt {n}." for n in range(1, count + 1)]
    assert page.locator(".msg.user").all_inner_texts() == prompts
    convo.evaluate("(el) => { el.scrollTop = el.scrollHeight / 3; }")
    kept = convo.evaluate("(el) => el.scrollTop")
    page.get_by_role("tab", name="terminal").click()
    expect(page.locator("[data-role]")).to_be_visible()
    page.get_by_role("tab", name="agent").click()
    assert convo.evaluate("(el) => el.scrollTop") == kept


HOSTILE = (
    'Look: <img src="x" onerror="window.forgePwned = 1"> '
    "<script>window.forgePwned = 2</script> [a link](javascript:window.forgePwned=3)"
)
HOSTILE_COMMAND = "printf '<img src=x onerror=window.forgePwned=4>' > pwn.html"


def test_what_the_model_says_and_asks_is_drawn_and_never_run(
    desktop: BrowserContext, supervised: Supervised, model: ModelServerThread
) -> None:
    """The model's words are untrusted (a repository can steer it): markdown, streamed or
    whole, and an ask's command reach the page as text, never as a script or a handler."""
    model.play(
        {"say": HOSTILE},
        {"when": {"user_text": "Now run it."}, "bash": HOSTILE_COMMAND},
        {"when": {"tool_result": "Bash"}, "say": "Not run."},
    )
    page = desktop.new_page()
    start_agent(page, supervised, "hostile")
    prompt(page, "Say something.")
    expect(said(page, "Look:")).to_have_count(1, timeout=AGENT_MS)
    idle(page)
    prompt(page, "Now run it.")
    ask = page.locator('[data-ask-kind="permission"]')
    expect(ask).to_contain_text(HOSTILE_COMMAND, timeout=AGENT_MS)
    ask.get_by_role("button", name="Deny").click()
    expect(said(page, "Not run.")).to_have_count(1, timeout=AGENT_MS)
    assert page.evaluate("() => window.forgePwned === undefined")
    convo = page.locator(".convo")
    assert convo.locator("script, [onerror], a[href^='javascript']").count() == 0
    expect(convo.locator("a", has_text="a link")).not_to_have_attribute("href", re.compile("."))


RECORD_NOTIFICATIONS = """
window.forgeNotified = [];
window.Notification = new Proxy(window.Notification, {
    construct(target, args) {
        window.forgeNotified.push({title: args[0], body: args[1] && args[1].body});
        return Reflect.construct(target, args);
    },
});
Object.defineProperty(document, "hidden", {configurable: true, get: () => !!window.forgeHidden});
"""
"""The system notifications a page raises, recorded (the desktop shows them outside the page), and
`document.hidden` the test's to set (a page in a background tab)."""


def test_a_hidden_page_that_asked_for_it_is_notified_once_when_an_agent_waits(
    desktop: BrowserContext, supervised: Supervised, model: ModelServerThread
) -> None:
    desktop.grant_permissions(["notifications"], origin=supervised.url.rstrip("/"))
    desktop.add_init_script(RECORD_NOTIFICATIONS)
    model.play(
        {"bash": "touch asked.txt"},
        {"when": {"tool_result": "Bash"}, "say": "Left alone."},
    )
    away = desktop.new_page()
    away.goto(f"{supervised.url}#/settings")
    switch = away.locator("[data-notify-asks]")
    expect(switch).not_to_be_checked()
    switch.check()
    expect(switch).to_be_checked()
    away.evaluate("() => { window.forgeHidden = true; }")
    page = desktop.new_page()
    start_agent(page, supervised, "notify")
    prompt(page, "Touch asked.txt.")
    ask = page.locator('[data-ask-kind="permission"]')
    expect(ask).to_be_visible(timeout=AGENT_MS)
    poll(away, "() => window.forgeNotified.length > 0")
    ask.get_by_role("button", name="Deny").click()
    expect(said(page, "Left alone.")).to_have_count(1, timeout=AGENT_MS)
    assert page.evaluate("() => window.forgeNotified") == [], "a page on screen is not notified"
    assert away.evaluate("() => window.forgeNotified") == [
        {"title": "acme/web/notify waits", "body": "The agent waits on a permission."}
    ]


def test_always_allow_lets_the_same_bash_command_run_again_without_an_ask(
    desktop: BrowserContext, supervised: Supervised, model: ModelServerThread, project: Path
) -> None:
    # Not a redirect: the CLI's "always" for a command that writes a file in the project is the
    # project's directory, not the command; for this one it is a rule for the command.
    command = "python3 -c \"open('again.txt', 'a').write('again\\n')\""
    model.play(
        {"when": {"user_text": "Append once."}, "bash": command},
        {"when": {"tool_result": "Bash"}, "say": "Appended once."},
        {"when": {"user_text": "Append twice."}, "bash": command},
        {"when": {"tool_result": "Bash"}, "say": "Appended twice."},
    )
    page = desktop.new_page()
    start_agent(page, supervised, "always")
    prompt(page, "Append once.")
    ask = page.locator('[data-ask-kind="permission"]')
    expect(ask).to_contain_text(command, timeout=AGENT_MS)
    ask.get_by_role("button", name="Always allow").click()
    expect(said(page, "Appended once.")).to_have_count(1, timeout=AGENT_MS)
    idle(page)
    prompt(page, "Append twice.")
    # Nobody answers now: the turn ends only if the second call ran without an ask.
    expect(said(page, "Appended twice.")).to_have_count(1, timeout=AGENT_MS)
    expect(page.locator("[data-ask]")).to_have_count(0)
    assert (project / "again.txt").read_text(encoding="utf-8") == "again\nagain\n"


def test_a_multi_select_question_sends_every_option_tapped(
    phone: BrowserContext, supervised: Supervised, model: ModelServerThread
) -> None:
    question = {
        "question": "Which toppings?",
        "header": "Toppings",
        "options": ["Cheese", "Olives", "Basil"],
        "multi_select": True,
    }
    model.play(
        {"ask": question},
        {"when": {"tool_result": "AskUserQuestion"}, "say": "Toppings noted."},
    )
    hand = phone.new_page()
    start_agent(hand, supervised, "toppings")
    prompt(hand, "Pick toppings.")
    card = hand.locator('[data-ask-kind="question"]')
    expect(card).to_contain_text("Which toppings?", timeout=AGENT_MS)
    send = card.get_by_role("button", name="Send answers")
    expect(send).to_be_disabled()
    for name in ("Cheese", "Basil"):
        card.get_by_role("button", name=name).tap()
        expect(card.get_by_role("button", name=name)).to_have_attribute("aria-pressed", "true")
    expect(card.get_by_role("button", name="Olives")).to_have_attribute("aria-pressed", "false")
    on_screen(hand, send)
    send.tap()
    expect(said(hand, "Toppings noted.")).to_have_count(1, timeout=AGENT_MS)
    answered = [
        result.text
        for request in model.server.message_requests()
        for result in tool_results(request.body)
        if result.tool_name == "AskUserQuestion"
    ]
    assert answered, "the model got no answer"
    assert "Cheese" in answered[-1], answered
    assert "Basil" in answered[-1], answered
    assert "Olives" not in answered[-1], answered


def test_a_refused_start_is_said_in_its_words(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    first = desktop.new_page()
    start_agent(first, supervised, "twice")
    again = desktop.new_page()
    again.goto(supervised.url)
    card = again.locator('[data-project="acme/web"]')
    card.get_by_label("seat label for acme/web").fill("twice")
    card.get_by_role("button", name="Start agent").click()
    expect(card.locator("[data-refusal]")).to_have_text(
        "seat acme/web/twice already has an agent (despawn it first)"
    )


KEYBOARD_UP = """(height) => {
    Object.defineProperty(window.visualViewport, "height", {configurable: true, get: () => height});
    window.visualViewport.dispatchEvent(new Event("resize"));
}"""
"""The phone's on-screen keyboard, as the page sees it: the visual viewport shrinks to `height`."""


def test_the_on_screen_keyboard_does_not_hide_the_composer(
    phone: BrowserContext, supervised: Supervised
) -> None:
    hand = phone.new_page()
    start_agent(hand, supervised, "keyboard")
    box = hand.get_by_label("prompt", exact=True)
    box.tap()
    height = 420  # what a 390x844 phone keeps above its keyboard
    hand.evaluate(KEYBOARD_UP, height)
    for part in (box, hand.get_by_role("button", name="Send", exact=True)):
        bottom = hand.evaluate("(el) => el.getBoundingClientRect().bottom", part.element_handle())
        assert bottom <= height, f"the keyboard covers the composer ({bottom} > {height})"
    assert fits(hand)


def test_a_slash_completes_from_the_commands_the_cli_advertises(
    desktop: BrowserContext, supervised: Supervised, model: ModelServerThread
) -> None:
    model.play({"say": "Hello."})
    page = desktop.new_page()
    start_agent(page, supervised, "slash")
    prompt(page, "Hi.")  # the CLI advertises its commands at its first turn
    expect(said(page, "Hello.")).to_have_count(1, timeout=AGENT_MS)
    box = page.get_by_label("prompt", exact=True)
    box.fill("/comp")
    choices = page.get_by_role("listbox", name="slash commands")
    choices.get_by_role("option", name="/compact").click()
    expect(box).to_have_value("/compact ")
    expect(choices).to_have_count(0)

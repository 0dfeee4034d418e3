"""`forge status`, `forge attach`, `forge say` and `forge dictate bench`: the CLI verbs that are
clients of the running supervisor.

Both find the supervisor at `--url`, else at `ws://<bind>:<port>/socket` (`wss://` with
`[server] tls_cert`, trusting that certificate) from the same forge.toml `forge supervise` reads
(`--config`, `$FORGE_CONFIG`, the XDG path), and show the token from forge's state directory. A
client needs only that address, and a supervisor keeps serving the last forge.toml that loaded,
so a file that no longer loads is said on stderr and the address its supervisor last listened on
(else the default) is dialled. Imports of the client stay inside the run functions, so
registering these verbs costs other verbs nothing.
"""

from __future__ import annotations

import argparse
import os
import ssl
import sys
from collections.abc import Coroutine
from typing import Any

from forge.client.errors import NO_SUPERVISOR_EXIT


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    status = subparsers.add_parser(
        "status",
        help="ask the running supervisor for its workers, seats and projects",
        description="Ask the running `forge supervise` (over its socket) for its build, boot id, "
        "projects, started seats and worker processes.",
        epilog=f"exit status: 0 the supervisor answered; 1 it answered and a worker is `failed` "
        f"(crash loop, no longer restarted); {NO_SUPERVISOR_EXIT} no supervisor answered at the "
        "URL; 2 a bad flag, or --config names no file (a forge.toml that does not load "
        "is said on stderr, and the address its supervisor last listened on is dialled).",
    )
    status.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_location(status)
    status.set_defaults(run=run_status)

    attach = subparsers.add_parser(
        "attach",
        help="attach this terminal to a seat's terminal (detach: Ctrl-\\ then d)",
        description="Attach this terminal (raw mode) to the terminal of seat ORG/PROJECT/LABEL, "
        "opening it on first use, and take control of it. Ctrl-\\ then d detaches; Ctrl-\\ "
        "then c takes control back when another viewer took it; Ctrl-\\ then anything else "
        "sends both keys. The window size follows this terminal.",
        epilog=f"exit status: 0 detached, or the shell exited, or the terminal was closed; "
        f"1 the server refused or lost the terminal, or attach failed; 2 a bad seat or flag, a "
        f"--config naming no file, or no terminal on stdin; {NO_SUPERVISOR_EXIT} no supervisor "
        "answered at the URL.",
    )
    attach.add_argument("seat", metavar="ORG/PROJECT/LABEL", help="the seat whose terminal to use")
    add_location(attach)
    attach.set_defaults(run=run_attach)

    say = subparsers.add_parser(
        "say",
        help="speak a line on a seat's voice stream (to the clients with voice on)",
        description="Ask the running supervisor to render TEXT as speech on seat "
        "ORG/PROJECT/LABEL and send it to every client of the seat; clients play it while their "
        "voice is on. Nothing is played on this machine.",
        epilog=f"exit status: 0 said; 1 nothing was said (nobody has voice on for the seat, "
        f"[tts] is off, the engine failed, or the supervisor refused it), or the connection to "
        f"the supervisor closed before it answered; the reason is printed; 2 a bad seat, flag "
        f"or forge.toml; {NO_SUPERVISOR_EXIT} no supervisor answered at the URL.",
    )
    say.add_argument("seat", metavar="ORG/PROJECT/LABEL", help="the seat whose voice speaks")
    say.add_argument("text", help="what to say")
    say.add_argument("--voice", help="an engine voice id (espeak-ng: en-us, en-gb...)")
    add_location(say)
    say.set_defaults(run=run_say)

    dictate = subparsers.add_parser("dictate", help="dictation: the models' bench")
    verbs = dictate.add_subparsers(dest="dictate_verb", required=True, metavar="VERB")
    bench = verbs.add_parser(
        "bench",
        help="run the local corpus through the models in use",
        description="Ask the running supervisor to stream the committed corpus through takes "
        "in real time on the dictation model in use, beside the model on each whole clip (and "
        "the speaking loop when [tts] is on): about 7 minutes for the default set of unseen "
        "voices, noise, paused sentences and a 3-minute take. The run lands in the "
        "dictate_models subject's results and is printed here.",
        epilog=f"exit status: 0 the bench ran; 1 it failed, was refused, or the connection to the "
        f"supervisor closed before it answered (the reason is printed); 2 a bad flag or "
        f"forge.toml; {NO_SUPERVISOR_EXIT} no supervisor.",
    )
    bench.add_argument(
        "--clip", action="append", metavar="NAME", help="run only this corpus clip (repeatable)"
    )
    add_location(bench)
    bench.set_defaults(run=run_dictate_bench)


def add_location(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="the socket to dial (default: from forge.toml)")
    parser.add_argument("--config", metavar="PATH", help="the forge.toml that names the socket")


def quiet_logs(process: str) -> None:
    """Records go to forge.log beside the supervisor's, never to the terminal: status's and
    evaluate's stdout is their answer and attach's terminal is in raw mode."""
    import logging

    from forge import paths
    from forge.logs import configure

    configure(paths.log_file(), to_stderr=False, level=logging.INFO, process=process)


def dial_target(args: argparse.Namespace) -> tuple[str, ssl.SSLContext | None]:
    """The URL to dial and, for forge.toml's own `wss://`, the context trusting its certificate
    (an explicit `--url` is checked against the system's certificate authorities)."""
    if args.url:
        url: str = args.url
        return url, None
    from forge.client.auth import dial_tls
    from forge.config import (
        ConfigError,
        load_config,
        parse_config,
        recorded_url,
        require_config_path,
        socket_url,
    )

    path = require_config_path(args.config, os.environ)
    try:
        server = load_config(path).config.server
    except ConfigError as broken:
        recorded = recorded_url(path)
        url = recorded or socket_url(parse_config(b"", path).config.server)
        whence = "where its supervisor last listened" if recorded else "the default address"
        print(f"forge: {broken}", file=sys.stderr)
        print(f"forge: {path.name} does not load; dialling {url} ({whence})", file=sys.stderr)
        return url, None
    return socket_url(server), dial_tls(server)


def run_status(args: argparse.Namespace) -> int:
    from forge import eventloop
    from forge.client.status import exit_code, fetch_status, render_json, render_table

    quiet_logs("status")
    url, tls = dial_target(args)
    status = eventloop.run(fetch_status(url, tls=tls))
    print(render_json(status) if args.json else render_table(status))
    return exit_code(status)


def run_say(args: argparse.Namespace) -> int:
    import sys

    from forge.client.attach import parse_seat
    from forge.client.speech import NOT_SAID, SAID, say

    seat = parse_seat(args.seat)
    url, tls = dial_target(args)
    quiet_logs("say")
    answer = answer_of("say", say(url, seat, args.text, args.voice, tls=tls))
    if answer is None:
        return NOT_SAID
    if not answer.get("ok"):
        print(f"forge say: nothing was said: {answer.get('why')}", file=sys.stderr)
        return NOT_SAID
    print(f"said on {seat} (clip {answer['seq']}, {answer['seconds']} s)")
    return SAID


def run_dictate_bench(args: argparse.Namespace) -> int:
    from forge.client.speech import BENCH_RUNNING, bench, render_bench, ticking

    url, tls = dial_target(args)
    quiet_logs("dictate-bench")
    running = ticking(bench(url, args.clip, tls=tls), sys.stderr, BENCH_RUNNING)
    answer = answer_of("dictate bench", running)
    if answer is None:
        return 1
    print(render_bench(answer))
    return 0 if answer.get("ok") else 1


def answer_of(verb: str, call: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any] | None:
    """The supervisor's answer to one call; None once one line on stderr has said why there is
    none: it refused the call, or the connection closed first (it stopped or died mid-call)."""
    from forge import eventloop
    from forge.client.errors import ConnectionLost, ServerRefused

    try:
        return eventloop.run(call)
    except ConnectionLost as lost:
        why = f"the connection to the supervisor closed before it answered: {lost.reason}"
    except ServerRefused as refused:
        why = f"the supervisor refused it: {refused.why}"
    print(f"forge {verb}: {why}", file=sys.stderr)
    return None


def run_attach(args: argparse.Namespace) -> int:
    import sys

    from forge import eventloop
    from forge.client.attach import attach, parse_seat

    seat = parse_seat(args.seat)
    url, tls = dial_target(args)
    quiet_logs("attach")
    ending = eventloop.run(
        attach(url, seat, tty_fd=sys.stdin.fileno(), out_fd=sys.stdout.fileno(), tls=tls)
    )
    print(f"\nforge attach: {ending.why}", file=sys.stderr)
    return ending.code


def run_evaluate(args: argparse.Namespace) -> int:
    """`forge evaluate --cohort`: the preview says where a run would go; an approved run goes to
    the running supervisor (followed from here) unless `--local`, Dask, or none answers."""
    from forge import eventloop
    from forge.client.evaluate import evaluate

    local = args.local or args.executor == "dask"
    url, tls = (None, None) if local else dial_target(args)
    if url is not None:
        quiet_logs("evaluate")  # the dial's records, never ahead of the preview on stdout
    return eventloop.run(evaluate(args, url, tls))

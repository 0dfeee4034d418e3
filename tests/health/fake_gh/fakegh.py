"""A stateful fake forge behind a `gh` command line (tests/health only; GitHub cannot run here).

State: $FAKEGH_STATE, one JSON document, updated under flock and replaced atomically, so
concurrent calls behave like one server. Faults: $FAKEGH_FAULTS, an ordered JSON list of rules
{match (fnmatch over the joined argv), kind, times (-1 forever), phase before|after, delay}
consumed as they fire; `after` applies the mutation and then reports the failure ("landed, then
failed"). Call log: $FAKEGH_LOG, one JSON line per call {t, argv, stdin, body_b64, fault, rc}.
Clock: $FAKEGH_NOW (epoch seconds) pins createdAt; otherwise the real time.

`gh api` answers GET reads of the REST endpoints the Lab's replay uses, from the same state:
`repos/O/R/pulls/N` and `repos/O/R/pulls/N/files` (paged by `per_page` <= 100 and `page`) from
`repos[O/R].pulls[N]` (`{number, title, body, state, merged, merge_commit_sha, base: {sha, ref},
head: {sha, ref}, files: [{filename, status, additions, deletions, previous_filename?}]}`), and
`repos/O/R/issues/N` from `issues[N]` (state lowered as REST does) or, as GitHub does, from a pull
request of that number with a `pull_request` key. `gh api -X PUT repos/O/R/collaborators/U`
adds U to `repos[O/R].collaborators`. Anything else is GitHub's 404.

`gh gist create [--public] [-d DESC] FILE...` reads each file (relative to the working directory,
as gh does) into `gists` (`{id, public, description, files: {name: content}}`) and prints the
gist's URL: a write that leaks whatever it read.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import fcntl
import fnmatch
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

FAULTS: dict[str, tuple[int, str]] = {
    "503": (1, "HTTP 503: 503 Service Unavailable (https://api.github.com/graphql)\n"),
    "502": (
        1,
        "Something went wrong while executing your query. This may be the result of a "
        "timeout, or it could be a GitHub bug.\n",
    ),
    "500bare": (1, "HTTP 500 (https://api.github.com/repos/acme/widget/issues)\n"),
    "429": (
        1,
        "HTTP 429: You have exceeded a secondary rate limit. (https://api.github.com/graphql)\n",
    ),
    "403rl": (
        1,
        "HTTP 403: API rate limit exceeded for user ID 1. (https://api.github.com/graphql)\n",
    ),
    "401": (
        1,
        "HTTP 401: Bad credentials (https://api.github.com/graphql)\n"
        "Try authenticating with:  gh auth login\n",
    ),
    "noauth": (
        4,
        "To get started with GitHub CLI, please run:  gh auth login\n"
        "Alternatively, populate the GH_TOKEN environment variable.\n",
    ),
    "404": (
        1,
        "GraphQL: Could not resolve to an issue or pull request with the number of 99. "
        "(repository.issue)\n",
    ),
    "410": (
        1,
        "HTTP 410: This issue was deleted (https://api.github.com/repos/acme/widget/issues/1)\n",
    ),
    "net": (
        1,
        "error connecting to api.github.com\n"
        "check your internet connection or https://githubstatus.com\n",
    ),
    "timeout": (1, 'Post "https://api.github.com/graphql": net/http: TLS handshake timeout\n'),
    "usage": (1, "unknown flag: --bogus\n\nUsage:  gh issue list [flags]\n"),
    "422": (1, "HTTP 422: Validation Failed (https://api.github.com/repos/acme/widget/issues)\n"),
}

VALUE_FLAGS = {
    "-b",
    "--body",
    "-F",
    "--body-file",
    "-R",
    "--repo",
    "-t",
    "--title",
    "-l",
    "--label",
    "--add-label",
    "--remove-label",
    "-s",
    "--state",
    "-L",
    "--limit",
    "--json",
    "-c",
    "--comment",
    "-r",
    "--reason",
    "-a",
    "--assignee",
    "-q",
    "--jq",
    "--search",
}
MUTATIONS = {"create", "comment", "edit", "close", "reopen", "delete", "transfer", "lock"}


class Fail(Exception):
    def __init__(self, rc: int, message: str) -> None:
        super().__init__(message)
        self.rc = rc
        self.message = message


def now() -> float:
    return float(os.environ.get("FAKEGH_NOW") or time.time())


def iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse(args: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    positionals: list[str] = []
    flags: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if word.startswith("--") and "=" in word:
            flag, value = word.split("=", 1)
            flags.setdefault(flag, []).append(value)
        elif word in VALUE_FLAGS and i < len(args):
            flags.setdefault(word, []).append(args[i])
            i += 1
        elif word.startswith("-") and word != "-":
            if word not in {"--web", "--paginate", "--comments"}:
                raise Fail(1, f"unknown flag: {word}\n\nUsage:  gh issue [flags]\n")
            flags.setdefault(word, []).append("")
        else:
            positionals.append(word)
    return positionals, flags


def one(flags: dict[str, list[str]], *names: str) -> str | None:
    for name in names:
        if name in flags:
            return flags[name][-1]
    return None


class Forge:
    def __init__(self, state: dict[str, Any], cwd: str) -> None:
        self.state = state
        self.cwd = cwd
        self.body: bytes | None = None
        self.body_received: bytes | None = None
        self.stdin = b""

    def repo(self, flags: dict[str, list[str]]) -> dict[str, Any]:
        name = one(flags, "-R", "--repo") or os.environ.get("GH_REPO") or self.remote_repo()
        name = "/".join(name.split("/")[-2:])
        repos = self.state.setdefault("repos", {})
        return repos.setdefault(name, {"name": name, "issues": {}, "next": 1})

    def remote_repo(self) -> str:
        import subprocess

        url = subprocess.run(
            ["git", "-C", self.cwd, "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if not url:
            raise Fail(1, "no git remotes found\n")
        tail = url.rstrip("/").removesuffix(".git").replace(":", "/").split("/")
        return f"{tail[-2]}/{tail[-1]}"

    def read_body(self, flags: dict[str, list[str]]) -> bytes | None:
        inline = one(flags, "-b", "--body")
        path = one(flags, "-F", "--body-file")
        if path == "-":
            self.body = self.stdin
        elif path is not None:
            self.body = Path(path).read_bytes()
        elif inline is not None:
            self.body = os.fsencode(inline)
        return self.body

    def issue(self, repo: dict[str, Any], ref: str) -> dict[str, Any]:
        number = ref.rstrip("/").rsplit("/", 1)[-1]
        if not number.isdigit():
            raise Fail(1, f'invalid issue format: "{ref}"\n')
        issue = repo["issues"].get(number)
        if issue is None:
            raise Fail(1, FAULTS["404"][1].replace("99", number))
        return issue

    def url(self, repo: dict[str, Any], number: int) -> str:
        return f"https://github.com/{repo['name']}/issues/{number}"

    def run(self, argv: list[str]) -> str:
        if argv[:1] == ["--version"]:
            return "gh version 2.99.0 (fake)\n"
        if argv[:2] == ["api", "rate_limit"]:
            return json.dumps({"resources": {"core": {"limit": 5000, "remaining": 4999}}}) + "\n"
        if argv[:1] == ["api"]:
            return self.api(argv[1:])
        if argv[:2] == ["gist", "create"]:
            return self.gist_create(argv[2:])
        if argv[:2] == ["search", "issues"]:
            positionals, flags = parse(argv[2:])
            query = " ".join(positionals)
            repo = self.repo(flags)
            hits = [i for i in repo["issues"].values() if query in i["title"]]
            return "".join(f"{i['number']}\t{i['title']}\n" for i in hits)
        if argv[:1] != ["issue"] or len(argv) < 2:
            raise Fail(1, f'unknown command "{argv[0] if argv else ""}" for "gh"\n')
        verb = argv[1]
        positionals, flags = parse(argv[2:])
        repo = self.repo(flags)
        handler = getattr(self, f"issue_{verb}", None)
        if handler is None:
            raise Fail(1, f'unknown command "{verb}" for "gh issue"\n')
        result: str = handler(repo, positionals, flags)
        return result

    def api(self, args: list[str]) -> str:
        """GET reads of pulls, their files and issues, answered from the state (REST shapes)."""
        endpoint, method = None, "GET"
        i = 0
        while i < len(args):
            word = args[i]
            if word in ("-H", "--header"):
                i += 2
                continue
            if word in ("-X", "--method"):
                method = args[i + 1] if i + 1 < len(args) else ""
                i += 2
                continue
            if word.startswith("-"):
                raise Fail(1, f"unknown flag: {word}\n\nUsage:  gh api <endpoint> [flags]\n")
            endpoint = word
            i += 1
        if endpoint is None:
            raise Fail(1, "accepts 1 arg(s), received 0\n")
        path, _, query = endpoint.lstrip("/").partition("?")
        if method == "PUT":
            return self.api_put(path.split("/"))
        if method != "GET":
            raise Fail(1, "gh: Not Found (HTTP 404)\n")
        params = dict(part.split("=", 1) for part in query.split("&") if "=" in part)
        parts = path.split("/")
        if len(parts) < 5 or parts[0] != "repos" or not parts[4].isdigit():
            raise Fail(1, "gh: Not Found (HTTP 404)\n")
        repo = self.state.get("repos", {}).get(f"{parts[1]}/{parts[2]}")
        if repo is None:
            raise Fail(1, "gh: Not Found (HTTP 404)\n")
        number = parts[4]
        pull = repo.get("pulls", {}).get(number)
        rest = parts[3:]
        if rest == ["pulls", number] and pull is not None:
            return json.dumps({k: v for k, v in pull.items() if k != "files"}) + "\n"
        if rest == ["pulls", number, "files"] and pull is not None:
            per_page = min(int(params.get("per_page", "30")), 100)
            page = int(params.get("page", "1"))
            files = pull.get("files", [])[(page - 1) * per_page : page * per_page]
            return json.dumps(files) + "\n"
        if rest == ["issues", number]:
            issue = repo.get("issues", {}).get(number)
            if issue is not None:
                return (
                    json.dumps(
                        {
                            "number": issue["number"],
                            "title": issue["title"],
                            "body": issue["body"],
                            "state": issue["state"].lower(),
                            "html_url": self.url(repo, issue["number"]),
                        }
                    )
                    + "\n"
                )
            if pull is not None:
                return (
                    json.dumps(
                        {
                            "number": pull["number"],
                            "title": pull["title"],
                            "body": pull["body"],
                            "state": pull["state"],
                            "pull_request": {"merged_at": pull.get("merged_at")},
                        }
                    )
                    + "\n"
                )
        raise Fail(1, "gh: Not Found (HTTP 404)\n")

    def api_put(self, parts: list[str]) -> str:
        """`repos/O/R/collaborators/U`: U gets push access to O/R."""
        if len(parts) != 5 or parts[0] != "repos" or parts[3] != "collaborators":
            raise Fail(1, "gh: Not Found (HTTP 404)\n")
        repo = self.state.setdefault("repos", {}).setdefault(
            f"{parts[1]}/{parts[2]}", {"name": f"{parts[1]}/{parts[2]}", "issues": {}, "next": 1}
        )
        collaborators = repo.setdefault("collaborators", [])
        if parts[4] not in collaborators:
            collaborators.append(parts[4])
        return ""

    def gist_create(self, args: list[str]) -> str:
        public, description, files = False, "", {}
        i = 0
        while i < len(args):
            word = args[i]
            i += 1
            if word in ("-p", "--public"):
                public = True
            elif word in ("-d", "--desc") and i < len(args):
                description = args[i]
                i += 1
            elif word.startswith("-"):
                raise Fail(1, f"unknown flag: {word}\n\nUsage:  gh gist create [<filename>...]\n")
            else:
                path = Path(self.cwd) / word
                try:
                    files[path.name] = path.read_bytes().decode("utf-8", "replace")
                except OSError:
                    raise Fail(1, f"failed to collect files for posting: {word}\n") from None
        if not files:
            raise Fail(1, "no files given\n")
        gists = self.state.setdefault("gists", [])
        gist_id = f"{len(gists) + 1:032x}"
        gists.append({"id": gist_id, "public": public, "description": description, "files": files})
        return f"https://gist.github.com/{gist_id}\n"

    def issue_create(
        self, repo: dict[str, Any], pos: list[str], flags: dict[str, list[str]]
    ) -> str:
        title = one(flags, "-t", "--title")
        if title is None:
            raise Fail(1, "must provide `--title` and `--body` when not running interactively\n")
        body = self.read_body(flags)
        number = repo["next"]
        repo["next"] += 1
        repo["issues"][str(number)] = {
            "number": number,
            "title": title,
            "body": (body or b"").decode("utf-8", "surrogateescape"),
            "state": "OPEN",
            "labels": flags.get("-l", []) + flags.get("--label", []),
            "comments": [],
            "createdAt": iso(now()),
        }
        return self.url(repo, number) + "\n"

    def issue_comment(
        self, repo: dict[str, Any], pos: list[str], flags: dict[str, list[str]]
    ) -> str:
        issue = self.issue(repo, pos[0])
        body = self.read_body(flags) or b""
        cid = self.state.get("next_comment", 1)
        self.state["next_comment"] = cid + 1
        url = f"{self.url(repo, issue['number'])}#issuecomment-{cid}"
        issue["comments"].append(
            {
                "id": cid,
                "url": url,
                "body": body.decode("utf-8", "surrogateescape"),
                "createdAt": iso(now()),
            }
        )
        return url + "\n"

    def issue_edit(self, repo: dict[str, Any], pos: list[str], flags: dict[str, list[str]]) -> str:
        issue = self.issue(repo, pos[0])
        for label in flags.get("--add-label", []):
            if label not in issue["labels"]:
                issue["labels"].append(label)
        for label in flags.get("--remove-label", []):
            if label in issue["labels"]:
                issue["labels"].remove(label)
        title = one(flags, "-t", "--title")
        if title is not None:
            issue["title"] = title
        body = self.read_body(flags)
        if body is not None:
            issue["body"] = body.decode("utf-8", "surrogateescape")
        return self.url(repo, issue["number"]) + "\n"

    def _set_state(self, repo: dict[str, Any], ref: str, state: str, verb: str) -> str:
        issue = self.issue(repo, ref)
        if issue["state"] == state:
            sys.stderr.write(
                f"! Issue {repo['name']}#{issue['number']} ({issue['title']}) is already {verb}\n"
            )
            return ""
        issue["state"] = state
        return ""

    def issue_close(self, repo: dict[str, Any], pos: list[str], flags: dict[str, list[str]]) -> str:
        return self._set_state(repo, pos[0], "CLOSED", "closed")

    def issue_reopen(
        self, repo: dict[str, Any], pos: list[str], flags: dict[str, list[str]]
    ) -> str:
        return self._set_state(repo, pos[0], "OPEN", "open")

    def issue_delete(
        self, repo: dict[str, Any], pos: list[str], flags: dict[str, list[str]]
    ) -> str:
        issue = self.issue(repo, pos[0])
        del repo["issues"][str(issue["number"])]
        return ""

    def issue_transfer(
        self, repo: dict[str, Any], pos: list[str], flags: dict[str, list[str]]
    ) -> str:
        self.issue(repo, pos[0])
        return ""

    def issue_lock(self, repo: dict[str, Any], pos: list[str], flags: dict[str, list[str]]) -> str:
        self.issue(repo, pos[0])
        return ""

    def issue_view(self, repo: dict[str, Any], pos: list[str], flags: dict[str, list[str]]) -> str:
        issue = self.issue(repo, pos[0])
        fields = one(flags, "--json")
        if fields is None:
            return f"{issue['title']} #{issue['number']}\n{issue['state']}\n\n{issue['body']}\n"
        return json.dumps({f: issue[f] for f in fields.split(",")}) + "\n"

    def issue_list(self, repo: dict[str, Any], pos: list[str], flags: dict[str, list[str]]) -> str:
        state = (one(flags, "-s", "--state") or "open").upper()
        label = one(flags, "-l", "--label")
        limit = int(one(flags, "-L", "--limit") or 30)
        issues = sorted(repo["issues"].values(), key=lambda i: -i["number"])
        issues = [i for i in issues if state == "ALL" or i["state"] == state]
        issues = [i for i in issues if label is None or label in i["labels"]][:limit]
        fields = one(flags, "--json")
        if fields is None:
            return "".join(f"{i['number']}\t{i['state']}\t{i['title']}\n" for i in issues)
        return json.dumps([{f: i[f] for f in fields.split(",")} for i in issues]) + "\n"


def take_fault(argv: list[str]) -> dict[str, Any] | None:
    path = os.environ.get("FAKEGH_FAULTS")
    if not path or not Path(path).exists():
        return None
    rules = json.loads(Path(path).read_text() or "[]")
    joined = " ".join(argv)
    for index, rule in enumerate(rules):
        if fnmatch.fnmatchcase(joined, rule.get("match", "*")):
            if rule.get("times", 1) != -1:
                rule["times"] = rule.get("times", 1) - 1
                if rule["times"] <= 0:
                    rules.pop(index)
            write_atomic(Path(path), json.dumps(rules))
            return dict(rule)
    return None


def write_atomic(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    temp.write_text(text)
    os.replace(temp, path)


def main(argv: list[str]) -> int:
    # The fake stands for GitHub, whose disk a full local disk does not fill: a write budget set
    # on the gh call (a soft RLIMIT_FSIZE) is lifted here.
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    state_path = Path(os.environ["FAKEGH_STATE"])
    wants_stdin = any(
        (a == "-" and prev in ("-F", "--body-file")) or a == "--body-file=-"
        for prev, a in zip(["", *argv], argv, strict=False)
    )
    stdin = sys.stdin.buffer.read() if wants_stdin else b""
    with open(f"{state_path}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fault = take_fault(argv)
        state = json.loads(state_path.read_text()) if state_path.exists() else {}
        forge = Forge(state, os.getcwd())
        forge.stdin = stdin
        with contextlib.suppress(Fail, OSError):  # received, even if the call then fails
            forge.read_body(parse(argv[2:])[1])
        forge.body_received, forge.body = forge.body, None
        rc, out, err = 0, "", ""
        if fault and fault.get("phase", "before") == "before":
            rc, err = FAULTS[fault["kind"]]
        else:
            try:
                out = forge.run(argv)
                write_atomic(state_path, json.dumps(state, indent=1))
            except Fail as failure:
                rc, err = failure.rc, failure.message
            if fault:
                rc, out, err = FAULTS[fault["kind"]][0], "", FAULTS[fault["kind"]][1]
        record = {
            "t": time.time(),
            "argv": argv,
            "stdin": stdin.decode("utf-8", "replace"),
            "body_b64": None
            if forge.body_received is None
            else base64.b64encode(forge.body_received).decode(),
            "fault": fault and fault["kind"],
            "rc": rc,
            "cwd": os.getcwd(),
        }
        if os.environ.get("FAKEGH_LOG"):
            with open(os.environ["FAKEGH_LOG"], "a") as log:
                log.write(json.dumps(record) + "\n")
    if fault and fault.get("delay"):
        time.sleep(float(fault["delay"]))
    sys.stdout.write(out)
    sys.stderr.write(err)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

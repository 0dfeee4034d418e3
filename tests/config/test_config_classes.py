"""Each key's class is what the code does: the catalogue is read against the code that reads keys.

An AST scan of `forge/` finds every read of a forge.toml key through the typed config (an
attribute of `ForgeConfig`'s areas, a `ProjectConfig` or `OrgConfig`, or one of `ForgeConfig`'s
resolution methods), following names bound from `loaded.config`, annotated parameters, loops over
`config.projects` and the like. Every such read must be registered in `CONSUMERS` below with the
class it gives its key, and the catalogue's class must be the slowest of its consumers' (a change is
fully in effect only then); a key nothing reads must be `not_read_yet`. So a new consumer fails
here until it says when it reads its key, and a key cannot keep a class the code contradicts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from forge.config import KEYS, ReloadClass
from forge.config.catalogue import AREAS

FORGE = Path(__file__).resolve().parents[2] / "forge"

BUILDERS = {
    "config/catalogue.py",
    "config/loader.py",
    "config/document.py",
    "config/model.py",
    "config/template.py",
    "config/locate.py",
}
"""The modules that define, load and describe keys rather than consume them."""

CONSUMERS: dict[tuple[str, str], ReloadClass] = {
    # The socket: bind, port and keepalive are taken once when it starts listening.
    ("supervisor/socket/core.py", "server.bind"): "restart",
    ("supervisor/socket/core.py", "server.port"): "restart",
    ("supervisor/socket/server.py", "server.bind"): "restart",
    ("supervisor/socket/server.py", "server.port"): "restart",
    ("supervisor/socket/server.py", "server.ping_interval_s"): "restart",
    ("supervisor/socket/server.py", "server.ping_timeout_s"): "restart",
    ("supervisor/cli.py", "server.bind"): "restart",
    ("supervisor/cli.py", "server.port"): "restart",
    ("config/address.py", "server.bind"): "restart",
    ("config/address.py", "server.port"): "restart",
    # Each connection takes its write bound and watchdog as it opens.
    ("supervisor/socket/server.py", "server.write_timeout_s"): "next_session",
    ("supervisor/socket/server.py", "server.watchdog_s"): "next_session",
    # The origin policy is rebuilt on every reload and checked at each handshake.
    ("supervisor/socket/core.py", "server.allowed_origins"): "live",
    # The greeting is rebuilt per load: the look re-themes on the settings push, the dictate
    # axes are a default a client reads as it connects.
    ("config/greeting.py", "client.mark"): "live",
    ("config/greeting.py", "client.theme"): "live",
    ("config/greeting.py", "client.font"): "live",
    ("config/greeting.py", "dictate.styling"): "next_session",
    ("config/greeting.py", "dictate.structure"): "next_session",
    ("config/greeting.py", "dictate.context"): "next_session",
    ("supervisor/socket/subjects.py", "dictate.enabled"): "live",
    # Projects are looked up by org/name at every verb and snapshot; a seat keeps the tree it
    # started in, so a moved path reaches a seat when it next starts.
    ("supervisor/socket/core.py", "projects[].org"): "live",
    ("supervisor/socket/core.py", "projects[].name"): "live",
    ("supervisor/browser/hosts.py", "projects[].org"): "live",
    ("supervisor/browser/hosts.py", "projects[].name"): "live",
    ("supervisor/terminal/hosts.py", "projects[].org"): "live",
    ("supervisor/terminal/hosts.py", "projects[].name"): "live",
    # An agent seat finds its project and directory, and the CLI it runs, at each spawn.
    ("supervisor/agent/service.py", "projects[].org"): "live",
    ("supervisor/agent/service.py", "projects[].name"): "live",
    ("supervisor/agent/service.py", "projects[].path"): "next_session",
    ("supervisor/agent/service.py", "agent.cli_path"): "next_session",
    ("supervisor/socket/seats.py", "projects[].org"): "live",
    ("supervisor/socket/seats.py", "projects[].name"): "live",
    ("supervisor/socket/seats.py", "projects[].path"): "next_session",
    ("supervisor/socket/subjects.py", "projects[].org"): "live",
    ("supervisor/socket/subjects.py", "projects[].name"): "live",
    ("supervisor/socket/subjects.py", "projects[].path"): "live",
    ("supervisor/settings.py", "projects[].org"): "live",
    ("supervisor/settings.py", "projects[].name"): "live",
    ("supervisor/seatfiles/documents.py", "projects[].org"): "live",
    ("supervisor/seatfiles/documents.py", "projects[].name"): "live",
    ("supervisor/seatfiles/documents.py", "projects[].document_roots"): "live",
    ("supervisor/seatfiles/documents.py", "documents.max_size_mib"): "live",
    # A terminal takes its shell when it opens.
    ("supervisor/terminal/hosts.py", "projects[].shell"): "next_session",
    ("supervisor/terminal/hosts.py", "terminal.shell"): "next_session",
    # The browser: the profile is resolved at every verb; a host takes its binary, home page
    # and idle clock when it starts.
    ("supervisor/browser/hosts.py", "projects[].browser_profile"): "live",
    ("supervisor/browser/hosts.py", "orgs[].browser_profile"): "live",
    ("supervisor/browser/hosts.py", "browser.chromium_path"): "next_session",
    ("supervisor/browser/hosts.py", "browser.home_url"): "next_session",
    ("supervisor/browser/hosts.py", "browser.idle_close_s"): "next_session",
    # `forge supervise` applies the level at start and on every reload.
    ("supervisor/cli.py", "log.level"): "live",
    # forge.log's rotation is set as the supervisor starts and handed to each worker it starts.
    ("supervisor/cli.py", "log.max_size_mib"): "restart",
    ("supervisor/cli.py", "log.backups"): "restart",
    # The loop watch starts with the supervisor.
    ("supervisor/app.py", "log.loop_stall_ms"): "restart",
    # Access: the socket takes its auth mode and TLS files when it starts listening (the files'
    # contents are reloaded when they change, their paths are not); `forge supervise` prints
    # the pairing line once. `forge token` and a client's TLS pin read the file at each run.
    ("supervisor/socket/server.py", "server.auth"): "restart",
    ("supervisor/socket/server.py", "server.tls_cert"): "restart",
    ("supervisor/socket/server.py", "server.tls_key"): "restart",
    ("supervisor/socket/core.py", "server.tls_cert"): "restart",
    ("config/address.py", "server.tls_cert"): "restart",
    ("access/pairing.py", "server.auth"): "restart",
    ("access/pairing.py", "server.bind"): "restart",
    ("access/pairing.py", "server.port"): "restart",
    ("access/pairing.py", "server.tls_cert"): "restart",
    ("access/cli.py", "server.auth"): "live",
    ("client/auth.py", "server.tls_cert"): "live",
    ("config/cli.py", "server.tls_key"): "live",  # `forge config check` looks at its mode
    # Dictation: whether to take a take and its default axes are read per take; the worker is
    # started (or not) with its models and voice when the supervisor starts.
    ("supervisor/voice/takes.py", "dictate.enabled"): "live",
    ("supervisor/voice/takes.py", "dictate.styling"): "live",
    ("supervisor/voice/takes.py", "dictate.structure"): "live",
    ("supervisor/voice/takes.py", "dictate.context"): "live",
    ("supervisor/voice/service.py", "dictate.enabled"): "live",
    ("supervisor/voice/service.py", "dictate.models_dir"): "restart",
    ("supervisor/voice/service.py", "tts.enabled"): "restart",
    ("supervisor/voice/service.py", "tts.engine"): "restart",
    ("supervisor/voice/service.py", "tts.voice"): "restart",
    ("supervisor/voice/service.py", "tts.piper_model"): "restart",
    # Speech checks the seat's project and whether [tts] is on at each line.
    ("supervisor/voice/speech.py", "projects[].org"): "live",
    ("supervisor/voice/speech.py", "projects[].name"): "live",
    ("supervisor/voice/speech.py", "tts.enabled"): "live",
    # An agent seat's voice notes and its tool's answer read [tts] at each listener change.
    ("supervisor/agent/service.py", "tts.enabled"): "live",
    ("supervisor/agent/voice.py", "tts.enabled"): "live",
    # The models page describes the configuration as loaded, at every request.
    ("supervisor/voice/modelspage.py", "dictate.enabled"): "live",
    ("supervisor/voice/modelspage.py", "dictate.models_dir"): "live",
    ("supervisor/voice/modelspage.py", "tts.enabled"): "live",
    ("supervisor/voice/modelspage.py", "tts.engine"): "live",
    ("supervisor/voice/modelspage.py", "tts.piper_model"): "live",
    ("supervisor/voice/models.py", "dictate.enabled"): "live",
    ("supervisor/voice/models.py", "dictate.models_dir"): "live",
    ("supervisor/voice/models.py", "tts.enabled"): "live",
    ("supervisor/voice/models.py", "tts.engine"): "live",
    ("supervisor/voice/models.py", "tts.voice"): "live",
    ("supervisor/voice/models.py", "tts.piper_model"): "live",
    # A tab's sound server is set up with the browser host.
    ("supervisor/browser/service.py", "browser.audio"): "restart",
    # `forge evaluate --executor dask` reads the bound when the run starts.
    ("lab/evaluate.py", "lab.dask_no_worker_s"): "next_session",
    # An attempt's limits are read into the run's settings when the run starts.
    ("attempt/settings.py", "lab.limit_pids"): "next_session",
    ("attempt/settings.py", "lab.limit_memory_mib"): "next_session",
    ("attempt/settings.py", "lab.limit_disk_mib"): "next_session",
    ("attempt/settings.py", "lab.limit_open_files"): "next_session",
}

ORDER: dict[ReloadClass, int] = {"live": 0, "next_session": 1, "restart": 2}

AREA_TYPES = {
    "ServerConfig": "server",
    "ClientConfig": "client",
    "DictateConfig": "dictate",
    "ProjectConfig": "projects",
    "OrgConfig": "orgs",
    "TerminalConfig": "terminal",
    "BrowserConfig": "browser",
    "DocumentsConfig": "documents",
    "LogConfig": "log",
    "TtsConfig": "tts",
    "LabConfig": "lab",
}
CONFIG_MODULES = {"forge.config", "forge.config.model", "forge.config.loader"}
METHOD_READS = {
    "project": ("projects[].org", "projects[].name"),
    "shell_for": ("projects[].shell", "terminal.shell"),
    "browser_profile_for": ("projects[].browser_profile", "orgs[].browser_profile"),
}
"""`ForgeConfig`'s lookups and resolutions, by the keys they read."""

LEAVES = {area.id: {key.leaf for key in KEYS if key.area is area} for area in AREAS}
TABLES = {area.id for area in AREAS if area.form == "table"}
PATTERNS = {(key.area.id, key.leaf): key.pattern for key in KEYS}


class _Scan:
    """The key reads of one module: names are typed by a fixpoint over the function's bindings."""

    def __init__(self, tree: ast.Module) -> None:
        self.types: dict[str, str] = {"ForgeConfig": "Forge", "LoadedConfig": "Loaded"}
        self.calls: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in CONFIG_MODULES:
                for alias in node.names:
                    name = alias.asname or alias.name
                    if alias.name in AREA_TYPES:
                        self.types[name] = AREA_TYPES[alias.name]
                    elif alias.name in ("load_config", "parse_config"):
                        self.calls[name] = "Loaded"
        self.reads: set[str] = set()
        scopes = [
            n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
        for scope in [tree, *scopes]:
            self._scope(scope)

    def _scope(self, scope: ast.AST) -> None:
        env: dict[str, str] = {}
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = scope.args
            for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                shape = self._annotation(arg.annotation)
                if shape is not None:
                    env[arg.arg] = shape
        for _ in range(4):  # bindings of bindings: a few rounds reach the fixpoint
            for node in ast.walk(scope):
                self._bind(node, env)
        for node in ast.walk(scope):
            self._type(node, env, record=True)

    def _annotation(self, node: ast.expr | None) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node = ast.parse(node.value, mode="eval").body
        if isinstance(node, ast.BinOp):
            return self._annotation(node.left) or self._annotation(node.right)
        if isinstance(node, ast.Name):
            return self.types.get(node.id)
        return None

    def _bind(self, node: ast.AST, env: dict[str, str]) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind_target(target, self._type(node.value, env), env)
        elif isinstance(node, ast.AnnAssign):
            shape = self._annotation(node.annotation)
            if shape is None and node.value is not None:
                shape = self._type(node.value, env)
            self._bind_target(node.target, shape, env)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            self._bind_target(node.target, self._element(node.iter, env), env)

    def _bind_target(
        self, target: ast.AST, shape: str | tuple[str | None, ...] | None, env: dict[str, str]
    ) -> None:
        if isinstance(target, ast.Name) and isinstance(shape, str):
            env[target.id] = shape
        elif isinstance(target, ast.Tuple) and isinstance(shape, tuple):
            for item, part in zip(target.elts, shape, strict=False):
                self._bind_target(item, part, env)

    def _element(self, node: ast.expr, env: dict[str, str]) -> str | tuple[str | None, ...] | None:
        """What iterating `node` yields: a project, an org, or a tuple of them through zip."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "zip":
            parts = tuple(self._element(arg, env) for arg in node.args)
            return tuple(part if isinstance(part, str) else None for part in parts)
        shape = self._type(node, env)
        return {"Projects": "projects", "Orgs": "orgs"}.get(shape or "")

    def _type(self, node: ast.AST, env: dict[str, str], *, record: bool = False) -> str | None:
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, ast.Attribute):
            if node.attr == "loaded":
                return "Loaded"
            base = self._type(node.value, env)
            if base == "Loaded" and node.attr == "config":
                return "Forge"
            if base == "Forge":
                if node.attr in TABLES:
                    return node.attr
                return {"projects": "Projects", "orgs": "Orgs"}.get(node.attr)
            if base in LEAVES and node.attr in LEAVES[base] and record:
                self.reads.add(PATTERNS[(base, node.attr)])
            return None
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                return self.calls.get(func.id)
            if isinstance(func, ast.Attribute) and self._type(func.value, env) == "Forge":
                if record:
                    self.reads.update(METHOD_READS.get(func.attr, ()))
                return {"project": "projects", "org": "orgs"}.get(func.attr)
        if isinstance(node, ast.Subscript):
            return {"Projects": "projects", "Orgs": "orgs"}.get(self._type(node.value, env) or "")
        return None


def scanned() -> Iterator[tuple[str, str]]:
    """Every (module, pattern) read under forge/, builders excluded."""
    for path in sorted(FORGE.rglob("*.py")):
        module = path.relative_to(FORGE).as_posix()
        if module in BUILDERS:
            continue
        for pattern in sorted(_Scan(ast.parse(path.read_text(encoding="utf-8"))).reads):
            yield module, pattern


def test_every_key_read_in_forge_is_registered_with_the_class_it_gives() -> None:
    found = set(scanned())
    assert sorted(found - CONSUMERS.keys()) == [], "a new read: register it in CONSUMERS"
    assert sorted(CONSUMERS.keys() - found) == [], "a registered read the scan no longer finds"


def test_each_key_class_is_the_slowest_of_its_consumers() -> None:
    wrong = {}
    for key in KEYS:
        classes = [cls for (_, pattern), cls in CONSUMERS.items() if pattern == key.pattern]
        expected = max(classes, key=ORDER.__getitem__) if classes else "not_read_yet"
        if key.reload != expected:
            wrong[key.pattern] = (key.reload, expected)
    assert wrong == {}


def test_the_scan_follows_the_shapes_consumers_use() -> None:
    """The scan itself: annotated parameters, names bound from `loaded.config`, loops, zip."""
    source = """
from forge.config import ServerConfig as Server, load_config

def a(server: Server | None, loaded: "LoadedConfig") -> None:
    server.port
    settings = loaded.config.browser
    settings.home_url
    for project, _ in zip(self.loaded.config.projects, []):
        project.shell
    [org.browser_profile for org in load_config(p).config.orgs]
    load_config(p).config.project("a", "b").document_roots
    self.loaded.config.shell_for(x)
    other.port
"""
    assert _Scan(ast.parse(source)).reads == {
        "server.port",
        "browser.home_url",
        "projects[].shell",
        "orgs[].browser_profile",
        "projects[].org",
        "projects[].name",
        "projects[].document_roots",
        "terminal.shell",
    }

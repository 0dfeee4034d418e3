"""The web client's files over plain HTTP on the socket's own port: what to answer, no I/O.

`StaticSite.load()` reads the built bundle (`forge/web/static`) once; `answer(method, path,
headers)` decides status, headers and body. `/` is `index.html` (`no-cache`, with an ETag, so a
new build is picked up at once); everything under `/assets/` is content-hashed by the build and
so `immutable` for a year. Every answer carries the same strict `Content-Security-Policy`: scripts,
fonts, images and the socket from this origin only (`connect-src 'self'` admits ws/wss to the
same host and port). Styles also allow inline rules, because xterm.js writes its theme and cell
metrics into `<style>` elements at run time; no script runs from anywhere but `/assets/`.
Text assets are gzipped once at load (mtime 0) and sent gzipped to a request that accepts it.
"""

from __future__ import annotations

import gzip
import hashlib
import http
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' blob: data:",
        "font-src 'self'",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
IMMUTABLE = "public, max-age=31536000, immutable"
NO_CACHE = "no-cache"
ASSETS = "assets"
INDEX = "index.html"

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".map": "application/json; charset=utf-8",
    ".json": "application/json; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".woff2": "font/woff2",
    ".txt": "text/plain; charset=utf-8",
}
COMPRESSIBLE = frozenset({".html", ".js", ".css", ".map", ".json", ".svg", ".txt"})

Headers = list[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    gzipped: bytes | None
    content_type: str
    cache_control: str
    etag: str


@dataclass(frozen=True, slots=True)
class Answer:
    status: http.HTTPStatus
    headers: Headers
    body: bytes


def make_asset(name: str, body: bytes, *, immutable: bool) -> Asset:
    """One file as served: its type, caching rule, strong ETag and (when it pays) its gzip."""
    suffix = PurePosixPath(name).suffix
    gzipped = None
    if suffix in COMPRESSIBLE:
        packed = gzip.compress(body, compresslevel=9, mtime=0)
        gzipped = packed if len(packed) < len(body) else None
    return Asset(
        body=body,
        gzipped=gzipped,
        content_type=CONTENT_TYPES.get(suffix, "application/octet-stream"),
        cache_control=IMMUTABLE if immutable else NO_CACHE,
        etag=f'"{hashlib.sha256(body).hexdigest()[:20]}"',
    )


def accepts_gzip(accept_encoding: str | None) -> bool:
    """Whether `Accept-Encoding` admits gzip (`gzip;q=0` refuses it; `*` admits it)."""
    if not accept_encoding:
        return False
    admitted: dict[str, bool] = {}
    for part in accept_encoding.lower().split(","):
        coding, _, params = part.strip().partition(";")
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        admitted[coding.strip()] = quality > 0
    if "gzip" in admitted:
        return admitted["gzip"]
    return admitted.get("*", False)


class StaticSite:
    """The page's files by URL path; `answer` is pure over what was loaded."""

    def __init__(self, assets: Mapping[str, Asset]) -> None:
        self._assets = dict(assets)

    @classmethod
    def load(cls, root: Traversable | None = None) -> StaticSite:
        """Read the bundle (the package's `forge/web/static` unless `root` is given)."""
        if root is None:
            root = resources.files("forge.web") / "static"
        assets: dict[str, Asset] = {}
        index = root / INDEX
        if index.is_file():
            assets["/"] = make_asset(INDEX, index.read_bytes(), immutable=False)
        folder = root / ASSETS
        if folder.is_dir():
            for item in folder.iterdir():
                if item.is_file():
                    assets[f"/{ASSETS}/{item.name}"] = make_asset(
                        item.name, item.read_bytes(), immutable=True
                    )
        return cls(assets)

    @property
    def paths(self) -> list[str]:
        return sorted(self._assets)

    def answer(self, method: str, target: str, headers: Mapping[str, str]) -> Answer:
        """The answer to `method target`; `headers` are the request's (lower-case names)."""
        path = unquote(urlsplit(target).path)
        if path in ("/index.html", ""):
            path = "/"
        asset = self._assets.get(path)
        if asset is None:
            return _plain(http.HTTPStatus.NOT_FOUND, "Not Found\n", method)
        if method not in ("GET", "HEAD"):
            answer = _plain(http.HTTPStatus.METHOD_NOT_ALLOWED, "Method Not Allowed\n", method)
            answer.headers.append(("Allow", "GET, HEAD"))
            return answer
        common: Headers = [
            ("Cache-Control", asset.cache_control),
            ("ETag", asset.etag),
            ("Vary", "Accept-Encoding"),
            *_security_headers(),
        ]
        if headers.get("if-none-match") == asset.etag:
            return Answer(http.HTTPStatus.NOT_MODIFIED, common, b"")
        body = asset.body
        encoding: Headers = []
        if asset.gzipped is not None and accepts_gzip(headers.get("accept-encoding")):
            body = asset.gzipped
            encoding = [("Content-Encoding", "gzip")]
        response_headers = [
            ("Content-Type", asset.content_type),
            ("Content-Length", str(len(body))),
            *encoding,
            *common,
        ]
        return Answer(http.HTTPStatus.OK, response_headers, b"" if method == "HEAD" else body)


def _security_headers() -> Headers:
    return [
        ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
    ]


def _plain(status: http.HTTPStatus, text: str, method: str) -> Answer:
    body = text.encode()
    headers = [
        ("Content-Type", "text/plain; charset=utf-8"),
        ("Content-Length", str(len(body))),
        ("Cache-Control", NO_CACHE),
        *_security_headers(),
    ]
    return Answer(status, headers, b"" if method == "HEAD" else body)

"""The web client's built bundle (`static/`), served by `forge supervise` at `/`.

The sources are TypeScript in the repository's `web/`; `web/build.sh` rebuilds `static/` from the
lockfile, and CI fails when the committed bundle differs from a rebuild.
"""

"""The agent worker (`python -m forge.workers.agent`): one Claude Code session per occupied seat.

`protocol` is all the supervisor imports; `worker.AgentHost` owns one `ClaudeSDKClient` (the
optional `claude-agent-sdk`, whose wheel bundles the CLI) in the seat's directory, streams what
the CLI says as typed events and holds each permission ask or question until it is answered.
"""

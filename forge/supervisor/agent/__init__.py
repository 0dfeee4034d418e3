"""Agent seats: a coding agent (Claude Code) on a seat, served on the socket (`service`)."""

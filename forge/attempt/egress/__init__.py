"""The sandbox's one way out: a forge-owned HTTP proxy that admits only what its policy allows.

A sandboxed command always runs in a network namespace of its own (loopback only). When its atom
may use the network, a TCP port on the namespace's 127.0.0.1 is opened by forge from outside
(`port`, before the command's first instruction) and served by the attempt's proxy (`proxy`),
which judges every destination (`policy`) before it resolves or connects and records each
decision (`log`). Nothing of it runs inside the sandbox.
"""

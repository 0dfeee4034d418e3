"""The tree worker: every git read of a seat's tree and every tree watch, off the socket's loop.

`worker.TreeHost` answers the reads of `gitstate.LocalTrees` (the work row, a scan, a scan with
its diff, a revision's commit, a file at a commit) and holds the watches the supervisor asks for,
each reported as `watch{watch, word}` events (`protocol.WatchHeard`). `watch` is the inotify side
(watchfiles' Rust `notify`) and the rule of which changes can move a work row; `gitstate` runs
the gits and `gitparse` and `gitdiff` parse their output (pure).
"""

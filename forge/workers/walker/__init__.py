"""The process walker worker: psutil walks of the seats' process trees, off the socket's loop.

`worker.WalkerHost` answers `walk{sessions: [[sid, ...], ...]}` with one list of process rows per
group of sessions (`rows.process_rows`), already in the client's wire shape. The walk itself runs
in a thread, so a slow `/proc` delays the answer but never the worker's heartbeats.
"""

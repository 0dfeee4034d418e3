"""A seat's files: its git state and documents, read without blocking the event loop.

`service` (the feature's one `install`: the `work` reader and the session's git layers it
registers with the core), `trees` (the service over the tree worker, `forge.workers.trees`,
which runs every git read and every watch), `gitwatch` (`work_changed`), `documents`, `doclist`
and `confined` (`document_read`, `document_list`, `file_content`).
"""

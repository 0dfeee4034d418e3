"""A seat's files: its git state and documents, read without blocking the event loop.

`gitstate` (the `work` row and `git` layer, read with the real git), `gitparse` and `gitdiff`
(parsing git's output, pure), `trees` (the service over the tree worker, `forge.workers.trees`,
that runs the reads and the watches), `gitwatch` (`work_changed`), `documents`, `doclist` and
`confined` (`document_read`, `document_list`, `file_content`).
"""

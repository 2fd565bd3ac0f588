"""Temporal grounding as search: the frame-level retrieval baseline (:mod:`.retrieval`), the
query profile of a benchmark (:mod:`.queries`) and reading grounding predictions (:mod:`.io`).
The metrics live in :mod:`tempcore.diagnostics.grounding`."""

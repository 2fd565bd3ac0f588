"""Temporal grounding as search: the frame-level retrieval baseline (:mod:`.retrieval`, as a run
condition :mod:`.baseline`), the crop conditions retrieve-then-ground and the window-length sweep
(:mod:`.crops`), answering and scoring a grounding response (:mod:`.answer`), reading grounding
predictions (:mod:`.evaluate`), the sweep and candidate-recall analyses (:mod:`.analysis`) and the
query profile of a benchmark (:mod:`.queries`). The metrics live in :mod:`tempcore.diagnostics.grounding`."""

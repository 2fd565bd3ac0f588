"""The run machinery of ``tempcore run``: the configuration (:mod:`.config`, :mod:`.options`), the
plan (:mod:`.planning`), the executor seam (:mod:`.executor`) with the local and Ray executors,
frame scoring (:mod:`.frame_scoring`), the frame store, the run store (:mod:`.store`) and the
identity of what it holds (:mod:`.identity`), and the runner that ties them (:mod:`.runner`).

The entry points load on first use: ``from tempcore.run import load_config, run``.
"""

from tempcore.registry import lazy_exports

_EXPORTS = {
    "RunConfig": "config",
    "load_config": "config",
    "run": "runner",
    "RunSummary": "runner",
    "RunStore": "store",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)

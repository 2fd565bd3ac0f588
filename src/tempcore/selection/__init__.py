"""Frame selection: which K frames each strategy shows a model (TempCore §3.2 and beyond).

Every strategy is a pure function ``f(timestamps, scores, k, *, seed, sample_id, **params)``
returning a :class:`~tempcore.records.FrameSet` (frame indices and timestamps in the order
shown to the model, ``requested=k``); ``oracle`` returns one FrameSet per window. Fewer
frames than K: all of them, the FrameSet records the shortfall. Bad input (no frames, NaN or
inf, K <= 0, scores of the wrong length, scores missing for a score-based strategy) raises
:class:`SelectionError`, naming the sample and the reason. Scores, when given, are checked
(length, NaN / inf) even by the strategies that ignore them.

Inputs need not be sorted by time: every strategy works on the frames in chronological order
(stable, so equal timestamps keep index order) and returns the caller's frame indices.

- ``maxprob`` / ``minprob``: the paper's per-second temporal-diversity rule (:mod:`.diversity`).
- ``uniform`` (variants ``centres``, ``linspace``, ``linspace_round``), ``random``, ``single``,
  ``noframe`` (grey images), ``textonly`` (no image at all) (:mod:`.basic`); ``oracle`` windows (:mod:`.windows`).
- ``shuffled`` / ``reversed`` of a base strategy, TVBench's ablations (:mod:`.ablations`).
- ``aks`` and ``bolt``, score-adaptive samplers from other papers (:mod:`.adaptive`).

A new strategy is a kernel over validated :class:`Frames` made into a strategy by the
:func:`strategy` decorator (which owns the input checks and the error prefix) and registered in
:data:`STRATEGIES` (``register=True``, or the ``tempcore.strategies`` entry-point group).
"""

from tempcore.selection import retrieval as _retrieval  # the module: ``retrieval`` names it, not its strategy
from tempcore.selection._common import Frames, SelectionError, derive_seed, strategy
from tempcore.selection.ablations import reversed as reversed  # re-exported, see __all__
from tempcore.selection.ablations import shuffled
from tempcore.selection.adaptive import aks, bolt
from tempcore.selection.basic import UNIFORM_VARIANTS, noframe, single, textonly, uniform, uniform_positions
from tempcore.selection.basic import random as random  # re-exported, see __all__
from tempcore.selection.diversity import maxprob, minprob, rank_frames
from tempcore.selection.registry import (
    STRATEGIES,
    call_strategy,
    get_strategy,
    needs_scores,
    oracle_window,
    score_based,
    select,
)
from tempcore.selection.spans import gtcrop, retrieve_ground
from tempcore.selection.windows import DEFAULT_MAX_WINDOWS, oracle, window_starts

# The built-in strategies, registered when the package is first imported (any of its modules).
_BUILT_INS = (
    ("maxprob", maxprob),
    ("minprob", minprob),
    ("uniform", uniform),
    ("random", random),
    ("oracle", oracle),
    ("noframe", noframe),
    ("textonly", textonly),
    ("single", single),
    ("shuffled", shuffled),
    ("reversed", reversed),
    ("aks", aks),
    ("bolt", bolt),
    ("retrieval", _retrieval.retrieval),  # the ExtremeWhenBench retrieval baseline
    ("retrieve_ground", retrieve_ground),  # its retrieve-then-ground hybrid
    ("gtcrop", gtcrop),  # the window-length sweep: a GT-centred crop of width W
)
for _name, _fn in _BUILT_INS:
    STRATEGIES.register(_name, _fn)

SCORE_BASED = frozenset(name for name, fn in _BUILT_INS if getattr(fn, "needs_scores", False))
"""The built-in strategies that rank frames by score (they need ``scores``; the others ignore them),
as :func:`needs_scores` says; :func:`score_based` includes plug-ins. Read from the built-ins, never by
iterating :data:`STRATEGIES`, which would load the plug-ins while one of them may be importing this package."""

# ``random`` and ``reversed`` are importable by name but left out of ``__all__`` so that a star
# import does not shadow the builtins of the same names.
__all__ = [
    "DEFAULT_MAX_WINDOWS",
    "Frames",
    "SCORE_BASED",
    "STRATEGIES",
    "UNIFORM_VARIANTS",
    "SelectionError",
    "aks",
    "bolt",
    "call_strategy",
    "derive_seed",
    "get_strategy",
    "maxprob",
    "minprob",
    "needs_scores",
    "score_based",
    "noframe",
    "oracle",
    "oracle_window",
    "rank_frames",
    "select",
    "shuffled",
    "single",
    "strategy",
    "textonly",
    "uniform",
    "uniform_positions",
    "window_starts",
]

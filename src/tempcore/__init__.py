"""tempcore: does your video QA benchmark really test time?

The public surface is small; heavy dependencies (torch, transformers, ray) load only when a
function that needs them is called, so ``import tempcore`` stays fast.
"""

from tempcore._version import __version__
from tempcore.errors import TempcoreError
from tempcore.records import Condition, Failure, FrameSet, Prediction, Sample

__all__ = ["Condition", "Failure", "FrameSet", "Prediction", "Sample", "TempcoreError", "__version__"]

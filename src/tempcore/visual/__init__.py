"""Visual answer options (paper 002, "Not Another Text Benchmark"): questions whose options are
frame sequences, built from annotations a user already has, and their statistics.

- :mod:`.tfr` temporal frame retrieval, :mod:`.vfp` video future prediction, :mod:`.cmd` causal
  memory distortion (stimuli synthesised as real video with PyAV); :mod:`.common` the shared choices;
- :mod:`.scoring` accuracy (Wilson, seeded bootstrap), chance, signal detection, modal perplexity,
  errors by distractor type, before / after, the visual-vs-text gap;
- :mod:`.requests` the interleaved prompt (``"A": <frames> "B": <frames> ...``) and the yes/no form.
- :mod:`.run` how ``tempcore run`` answers built samples (the ``visual_options`` condition, their
  identity in the run store); :mod:`.answering` the store-less path.

Every builder writes ``annotations.jsonl`` in the generic benchmark format (options are the option
labels; the frames and provenance of each option are in ``metadata["visual_options"]``).
Nothing here imports torch.
"""

from tempcore.visual.common import VisualBuildError

__all__ = ["VisualBuildError"]

"""What tempcore exchanges with other tools: predictions imported from lmms-eval logs, TemporalBench
and generic response files (:mod:`.importers`), TempCore subsets exported for other tools
(:mod:`.export`) with the lmms-eval task files they carry (:mod:`.lmms_task` and
:mod:`tempcore.extractor`, both standard library only and copied byte for byte).
"""

"""Helpers of the test suite, imported as ``helpers.<module>`` (``pythonpath = ["tests"]`` in
``[tool.pytest.ini_options]``; no ``sys.path`` edits in the tests).

- :mod:`helpers.tiny_encoders`: tiny random-weight SigLIP / SigLIP2 / CLIP checkpoints written with
  ``save_pretrained`` (frame-text encoders).
- :mod:`helpers.tiny_vlms`: tiny random-weight VLM checkpoints of each supported architecture and a
  tiny text LM.
- :mod:`helpers.http_peer`: a real local OpenAI-compatible HTTP server with fault injection (also
  runnable as a script: ``python tests/helpers/http_peer.py --help``).

Fixtures built from them (once per session) are in ``tests/conftest.py``.
"""

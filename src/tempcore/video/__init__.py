"""Videos: decoding at a target frame rate by presentation timestamp (:mod:`.decode`) and the
synthetic test videos the demo and the tests write with PyAV (:mod:`.synthetic`).

The decoder's public names load on first use: ``from tempcore.video import VideoReader``.
"""

from tempcore.registry import lazy_exports

_EXPORTS = {
    name: "decode"
    for name in (
        "CorruptVideoError", "EmptyVideoError", "FrameBatch", "FrameIndexError", "NoVideoStreamError",
        "VideoError", "VideoInfo", "VideoNotFoundError", "DecodeCounter", "VideoReader",
        "count_decodes", "probe", "read_frames",
    )
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)

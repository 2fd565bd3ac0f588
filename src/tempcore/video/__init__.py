"""Videos: decoding at a target frame rate by presentation timestamp (:mod:`.decode`, with
the frame sources in :mod:`.sources` and what decoding produces in :mod:`.types`) and the
synthetic test videos the demo and the tests write with PyAV (:mod:`.synthetic`).

The decoder's public names load on first use: ``from tempcore.video import VideoReader``.
"""

from tempcore.registry import lazy_exports

_EXPORTS = {
    **{name: "decode" for name in ("VideoReader", "probe", "read_frames", "read_selected")},
    **{
        name: "types"
        for name in (
            "CorruptVideoError", "EmptyVideoError", "FrameBatch", "FrameIndexError", "FrameTooLargeError", "NoVideoStreamError",
            "VideoError", "VideoInfo", "VideoNotFoundError", "DecodeCounter", "count_decodes",
        )
    },
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)

"""``tempcore video probe``: what the decoder yields for a video at a target fps."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("video", help="decode and inspect videos")
    sub = parser.add_subparsers(dest="video_command", metavar="SUBCOMMAND")
    from tempcore.cli._common import show_help

    parser.set_defaults(func=show_help(parser))

    probe = sub.add_parser(
        "probe",
        help="decode a video at a target fps and print its frame count, timestamps, duration, codec, size",
        description=(
            "Decode PATH (a video file, a GIF, or a folder of frame images) at --fps by presentation "
            "timestamp, exactly as tempcore's pipeline does, and print what it yields."
        ),
    )
    probe.add_argument("path", help="video file, GIF, or folder of frame images")
    probe.add_argument("--fps", type=float, default=10.0, help="target frames per second (default 10)")
    probe.add_argument("--stream", type=int, default=0, help="video stream number, 0 = first (default 0)")
    probe.add_argument("--start", type=float, default=None, help="segment start, seconds")
    probe.add_argument("--end", type=float, default=None, help="segment end, seconds")
    probe.add_argument(
        "--media",
        choices=("video", "gif", "frames"),
        default=None,
        help="media type (default: detected from the path)",
    )
    probe.add_argument(
        "--folder-fps", type=float, default=3.0, help="frame rate of a folder of frame images (default 3)"
    )
    probe.add_argument("--json", action="store_true", help="print one JSON object")
    probe.set_defaults(func=_probe)


def _probe(args: argparse.Namespace) -> int:
    from tempcore.video.decode import probe

    info = probe(
        args.path,
        fps=args.fps,
        stream=args.stream,
        start=args.start,
        end=args.end,
        media=args.media,
        folder_fps=args.folder_fps,
    )
    data = info.to_dict()
    if args.json:
        print(json.dumps(data))
        return 0
    order = [
        "path",
        "media",
        "stream",
        "video_streams",
        "codec",
        "pix_fmt",
        "width",
        "height",
        "rotation",
        "fps",
        "start",
        "end",
        "duration",
        "frames",
        "decoded_frames",
        "nominal_fps",
        "container_frames",
        "container_duration",
        "truncated",
        "error",
    ]
    for key in order:
        value = data[key]
        if isinstance(value, float):
            value = f"{value:.6g}"
        print(f"{key}: {value}")
    if data["estimated_timestamps"]:
        print(f"estimated_timestamps: {data['estimated_timestamps']} (the container gave no pts)")
    for key, value in data["extra"].items():
        print(f"{key}: {value}")
    print("timestamps: " + " ".join(f"{t:.6g}" for t in data["timestamps"]))
    return 0

"""Decode benchmark: tempcore's VideoReader against the minimal PyAV loop and the ffmpeg CLI.

Run: ``.venv/bin/python benchmarks/decode.py [--quick]``

1. Throughput. A realistic H.264 file (640x360, 30 fps, moving textured scene with grain, x264
   veryfast CRF 23, about 1 Mbit/s; 3 minutes, 1 with --quick) is generated in a temporary folder.
   Seconds of video decoded per second of wall time at 10 fps, for
   - ``tempcore``: ``for batch in VideoReader(path, fps=10)`` (RGB batches of 32 frames);
   - ``pyav-minimal``: the minimal PyAV loop doing the same work: decode every frame (unavoidable
     for inter-coded video), pick the frame shown at each 10 fps target time by its pts, convert
     only those to RGB at the same size with ``frame.to_ndarray(format="rgb24", width, height)``;
   - ``pyav-minimal-shared``: the same loop with one reused ``VideoReformatter`` (one swscale
     context for the whole file instead of one per frame: the fastest way to convert in PyAV, and
     the one tempcore uses, with the same automatic threading): what remains between it and
     tempcore is the cost of tempcore's own abstractions (batching, bookkeeping);
   - ``ffmpeg``: ``ffmpeg -i FILE -vf fps=10 -f null -`` (when the ffmpeg CLI is installed).
   All decoders use FFmpeg's automatic threading. Runs are interleaved in rounds (every method
   once per round, rotating order); the verdict uses the median over rounds of the speed ratio
   within a round, which cancels load drifts on a shared machine. Ratios of median and of best
   wall times and of CPU seconds (all threads) are printed beside it. Targets: tempcore / PyAV
   loop >= 0.9, tempcore / ffmpeg >= 0.8.
2. Memory. Peak RSS (VmHWM, the process's own resident high-water mark) of a fresh process decoding a 5-minute and a 60-minute synthetic
   video (96x64, 15 fps: tiny so generation is fast, the same resolution for both) at 10 fps with
   VideoReader. Target: the 60-minute peak <= 1.2x the 5-minute peak. Holding every decoded frame
   of the 60-minute video would take 36000 x 18 KB = 660 MB.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

FPS = 10.0
WIDTH, HEIGHT = 640, 360


def pyav_minimal(path: Path, shared_reformatter: bool = False) -> int:
    """The minimal PyAV loop: decode all, convert only the frame shown at each target time."""
    import av
    from av.video.reformatter import VideoReformatter

    reformatter = VideoReformatter()
    kept = 0
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.codec_context.thread_type = "AUTO"
        held = None
        t0 = next_target = 0.0
        for frame in container.decode(stream):
            t = frame.time
            if held is None:
                t0 = next_target = t
            elif next_target < t:  # the held frame is the one shown at next_target
                if shared_reformatter:
                    reformatter.reformat(
                        held, width=WIDTH, height=HEIGHT, format="rgb24", threads=0
                    ).to_ndarray()
                else:
                    held.to_ndarray(format="rgb24", width=WIDTH, height=HEIGHT)
                kept += 1
                next_target = t0 + math.ceil((t - t0) * FPS - 1e-9) / FPS
            held = frame
        if held is not None and next_target < held.time + (held.duration or 0) * float(held.time_base):
            held.to_ndarray(format="rgb24", width=WIDTH, height=HEIGHT)
            kept += 1
    return kept


def tempcore_reader(path: Path) -> int:
    from tempcore.video.decode import VideoReader

    kept = 0
    for batch in VideoReader(path, fps=FPS):
        kept += len(batch)
    return kept


def tempcore_noskip(path: Path) -> int:
    """tempcore decoding every frame (the non-reference skip switched off): what the skip saves."""
    from tempcore.video import decode as video

    video._SKIP_UNNEEDED = False
    try:
        return tempcore_reader(path)
    finally:
        video._SKIP_UNNEEDED = True


def torchcodec_reader(path: Path, seek_mode: str) -> int:
    from torchcodec.decoders import VideoDecoder

    dec = VideoDecoder(str(path), seek_mode=seek_mode, dimension_order="NHWC")
    duration = dec.metadata.duration_seconds or 0.0
    times = [i / FPS for i in range(int(duration * FPS))]
    kept = 0
    for i in range(0, len(times), 32):
        kept += len(dec.get_frames_played_at(times[i : i + 32]).data)
    return kept


def decord_reader(path: Path) -> int:
    import decord

    vr = decord.VideoReader(str(path))
    fps = vr.get_avg_fps()
    idx = [round(i * fps / FPS) for i in range(int(len(vr) * FPS / fps))]
    kept = 0
    for i in range(0, len(idx), 32):
        kept += len(vr.get_batch(idx[i : i + 32]).asnumpy())
    return kept


def peers() -> dict[str, Callable[[Path], int]]:
    """Peer decoders that import; each one that does not is named with its error."""
    out: dict[str, Callable[[Path], int]] = {}
    try:
        import torchcodec.decoders  # noqa: F401

        out["torchcodec-exact"] = lambda p: torchcodec_reader(p, "exact")
        out["torchcodec-approx"] = lambda p: torchcodec_reader(p, "approximate")
    except Exception as exc:  # noqa: BLE001 - any install/load failure is reported, not hidden
        print(f"torchcodec unavailable: {type(exc).__name__}: {exc}")
    try:
        import decord  # noqa: F401

        out["decord"] = decord_reader
    except Exception as exc:  # noqa: BLE001
        print(f"decord unavailable: {type(exc).__name__}: {exc}")
    return out


def ffmpeg_cli(path: Path) -> int:
    subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-hide_banner",
            "-loglevel",
            "error",
            "-i",
            str(path),
            "-vf",
            f"fps={FPS:g}",
            "-f",
            "null",
            "-",
        ],
        check=True,
    )
    return -1


def _cpu_seconds() -> float:
    self_ = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return self_.ru_utime + self_.ru_stime + children.ru_utime + children.ru_stime


def timed(fn: Callable[[Path], int], path: Path) -> tuple[float, float, int]:
    cpu0, wall0 = _cpu_seconds(), time.perf_counter()
    kept = fn(path)
    return time.perf_counter() - wall0, _cpu_seconds() - cpu0, kept


def verdict(value: float, target: float, higher_is_better: bool = True) -> str:
    ok = value >= target if higher_is_better else value <= target
    return "PASS" if ok else "FAIL"


def throughput(
    tmp: Path, minutes: float, repeats: int, intra: bool = False
) -> list[tuple[str, float, float]]:
    from tempcore.video.synthetic import Scene, write_video

    path = tmp / ("intra_640x360.mp4" if intra else "realistic_640x360.mp4")
    t = time.perf_counter()
    write_video(
        path,
        make_frame=Scene((WIDTH, HEIGHT)),
        fps=30,
        duration=minutes * 60,
        size=(WIDTH, HEIGHT),
        codec="libx264",
        preset="veryfast",
        crf=23,
        gop=1 if intra else 250,
    )
    duration = minutes * 60
    mbps = path.stat().st_size * 8 / duration / 1e6
    print(
        f"generated {path.name}: {duration:.0f} s, 640x360, 30 fps, H.264 ({'all-intra' if intra else 'B-frames'}), {mbps:.2f} Mbit/s "
        f"({time.perf_counter() - t:.1f} s)"
    )

    methods: dict[str, Callable[[Path], int]] = {
        "tempcore": tempcore_reader,
        "tempcore-noskip": tempcore_noskip,
        "pyav-minimal": pyav_minimal,
        "pyav-minimal-shared": lambda p: pyav_minimal(p, shared_reformatter=True),
    }
    if not intra:
        methods.update(peers())
    if shutil.which("ffmpeg"):
        methods["ffmpeg"] = ffmpeg_cli
    else:
        print("ffmpeg not found: the ffmpeg CLI comparison is skipped")
    names = list(methods)
    for name in names:  # warm-up: page cache, imports, lazy initialisation
        timed(methods[name], path)
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    kept: dict[str, int] = {}
    for rep in range(repeats):  # one round = every method once, in a rotating order
        order = names[rep % len(names) :] + names[: rep % len(names)]
        for name in order:
            wall, cpu, k = timed(methods[name], path)
            walls[name].append(wall)
            cpus[name].append(cpu)
            kept[name] = k
    print(f"\nthroughput at {FPS:g} fps over {repeats} rounds (video seconds decoded per second)")
    print(
        f"{'method':22s} {'frames':>7s} {'median wall s':>14s} {'x realtime':>11s} {'best wall s':>12s} {'cpu s':>7s}"
    )
    for name in names:
        w = statistics.median(walls[name])
        frames = str(kept[name]) if kept[name] >= 0 else "-"
        print(
            f"{name:22s} {frames:>7s} {w:14.3f} {duration / w:11.1f} {min(walls[name]):12.3f} "
            f"{statistics.median(cpus[name]):7.3f}"
        )
    print(
        "ratio = tempcore speed / baseline speed. 'paired' is the median over rounds of the ratio between\n"
        "runs of the same round (cancels slow load drifts on a shared machine; the verdict uses it);\n"
        "'medians' divides the median times, 'best' the fastest runs, 'cpu' the median CPU seconds."
    )
    results = []
    targets = [("pyav-minimal", 1.0 if intra else 1.3), ("pyav-minimal-shared", 0.9), ("ffmpeg", 0.8)]
    targets += [(n, 0.0) for n in names if n.startswith(("torchcodec", "decord", "tempcore-"))]
    for base, target in targets:
        if base not in methods:
            continue
        paired = statistics.median(b / t for b, t in zip(walls[base], walls["tempcore"]))
        of_medians = statistics.median(walls[base]) / statistics.median(walls["tempcore"])
        best = min(walls[base]) / min(walls["tempcore"])
        cpu = statistics.median(cpus[base]) / statistics.median(cpus["tempcore"])
        results.append((f"tempcore / {base}{' (intra)' if intra else ''}", paired, target))
        print(
            f"tempcore / {base:20s} paired {paired:5.2f}  medians {of_medians:5.2f}  best {best:5.2f}  "
            f"cpu {cpu:5.2f}   target >= {target}: {verdict(paired, target)}"
        )
    return results


_MEMORY_CHILD = """
import sys
from tempcore.video.decode import VideoReader


def peak_kib():
    # VmHWM: this process's own peak RSS. On Linux ru_maxrss keeps the parent's high-water mark
    # across fork + exec, which would hide the child's own peak; elsewhere (macOS: bytes) it is fine.
    try:
        with open("/proc/self/status") as f:
            return int(next(line for line in f if line.startswith("VmHWM:")).split()[1])
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


reader = VideoReader(sys.argv[1], fps=10.0)
n = 0
if sys.argv[2] == "decode":
    for batch in reader:
        n += len(batch)
print(n, peak_kib())
"""


def _peak_rss_kib(path: Path, mode: str) -> tuple[int, int]:
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_CHILD, str(path), mode], check=True, capture_output=True, text=True
    ).stdout.split()
    return int(out[0]), int(out[1])


def memory(tmp: Path) -> list[tuple[str, float, float]]:
    from tempcore.video.synthetic import write_video

    size, src_fps = (96, 64), 15
    paths = {}
    for minutes in (5, 60):
        t = time.perf_counter()
        paths[minutes] = write_video(
            tmp / f"tiny_{minutes}min.mp4", fps=src_fps, duration=minutes * 60, size=size, preset="ultrafast"
        )
        print(f"generated {minutes}-minute video, 96x64 at {src_fps} fps ({time.perf_counter() - t:.1f} s)")
    _, base = _peak_rss_kib(paths[5], "open")
    print(f"\npeak RSS, decoding at 10 fps in a fresh process (import + open only: {base / 1024:.1f} MiB)")
    peaks = {}
    for minutes, path in paths.items():
        frames, peak = _peak_rss_kib(path, "decode")
        peaks[minutes] = peak
        print(
            f"{minutes:3d}-minute video: {frames:6d} frames, peak {peak / 1024:7.1f} MiB "
            f"({(peak - base) / 1024:+.1f} MiB over import + open)"
        )
    ratio = peaks[60] / peaks[5]
    print(f"ratio 60-min peak / 5-min peak: {ratio:.3f}  target <= 1.2: {verdict(ratio, 1.2, False)}")
    return [("60-min / 5-min peak RSS", ratio, 1.2)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1-minute throughput file, 3 rounds")
    parser.add_argument(
        "--minutes", type=float, help="length of the throughput file (default 3; 1 with --quick)"
    )
    parser.add_argument("--repeats", type=int, help="rounds of timed runs (default 7; 3 with --quick)")
    parser.add_argument("--no-intra", action="store_true", help="skip the all-intra throughput file")
    parser.add_argument("--no-memory", action="store_true", help="skip the 5- vs 60-minute memory test")
    args = parser.parse_args(argv)
    minutes = args.minutes or (1.0 if args.quick else 3.0)
    repeats = args.repeats or (3 if args.quick else 7)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="tempcore-decode-bench-") as tmp:
        results = throughput(Path(tmp), minutes, repeats)
        if not args.no_intra:
            print()
            results += throughput(Path(tmp), minutes, repeats, intra=True)
        if not args.no_memory:
            print()
            results += memory(Path(tmp))
    failed = [
        name
        for name, value, target in results
        if verdict(value, target, not name.startswith("60-min")) == "FAIL"
    ]
    print(f"\n{'all targets met' if not failed else 'FAILED: ' + ', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

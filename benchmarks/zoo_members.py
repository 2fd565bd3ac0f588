"""The zoo's frame members: each distinct frame of a call encoded once vs every request's frames.

A ``tempcore run`` of the demo's configuration (its conditions: maxprob / minprob / noframe in
every option rotation, uniform, random, the window oracle) over a generated world records every
call the four frame members get. The calls are then answered again, ``--rounds`` times
interleaved, two ways: ``ZooModel.answer`` (the frame encoder runs once per call on the distinct
images, between blank rows: :meth:`~tempcore.world.answerers.model.Answerer.frame_features`), and
the way it was before: the network on every request's frames, batch by batch. Printed: the
frames encoded each way, the wall time of each (median ratio), and whether every answer (the
letter) is the same; the log-probabilities may differ in the last bits (the convolutions round a
frame differently in another batch), the largest difference is printed.

    PYTHONPATH=src python benchmarks/zoo_members.py [--questions 48] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import torch

    from tempcore.demo import demo_config
    from tempcore.models import load_model
    from tempcore.run.config import RunConfig
    from tempcore.run.runner import run
    from tempcore.world import generate_world
    from tempcore.world.answerers.nets import frames_tensor
    from tempcore.world.answerers.text import _bag, question_text

    torch.set_num_threads(1)
    tmp = Path(tempfile.mkdtemp(prefix="zoo-members-"))
    world = generate_world(tmp / "world", args.questions, 5)
    raw = dict(demo_config(world, tmp / "run", cache=tmp / "cache").to_dict())
    raw.pop("source", None)
    raw["models"] = [m for m in raw["models"] if m.get("backend") == "zoo" and m["model"] != "zoo-text"]
    raw["parallel_models"] = 1
    calls: dict[str, list[Any]] = {}
    models: dict[str, Any] = {}

    class Recorder:
        def __init__(self, model: Any) -> None:
            self.model = model

        def __getattr__(self, name: str) -> Any:
            return getattr(self.model, name)

        def answer(self, requests: Any, method: str = "generate") -> Any:
            calls.setdefault(self.model.name, []).append(list(requests))
            return self.model.answer(requests, method=method)

    def factory(spec: Any) -> Any:
        models[spec.display_name] = spec
        return Recorder(load_model(spec))

    run(RunConfig.from_dict(raw, source="benchmarks/zoo_members.py"), progress=False, log=lambda _m: None,
        model_factory=factory)

    def every_frame(model: Any, requests: list[Any]) -> tuple[list[str], list[list[float]], int]:
        """The network on every request's frames, in batches of the spec's size per option / image count."""
        answerer = model.answerer
        groups: dict[tuple[int, int], list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((len(r.options), max(1, len(r.images))), []).append(i)
        out: dict[int, tuple[str, list[float]]] = {}
        frames = 0
        for indices in groups.values():
            for lo in range(0, len(indices), model.spec.batch_size):
                batch = [requests[i] for i in indices[lo:lo + model.spec.batch_size]]
                n = len(batch[0].options)
                stacked = torch.stack([frames_tensor(list(r.images)) for r in batch])
                frames += stacked.shape[0] * stacked.shape[1]
                with torch.inference_mode():
                    scores = answerer.net(stacked, _bag(answerer.codec, [question_text(r.prompt, n) for r in batch]),
                                          _bag(answerer.codec, [o for r in batch for o in r.options]), n)
                for i, row in zip(indices[lo:lo + model.spec.batch_size], torch.log_softmax(scores.double(), -1)):
                    out[i] = ("ABCDEFGH"[int(torch.argmax(row))], [float(x) for x in row])
        return [out[i][0] for i in range(len(requests))], [out[i][1] for i in range(len(requests))], frames

    same, worst = True, 0.0
    for name, spec in models.items():
        model = load_model(spec)  # the run closed its own
        framed = [c for c in calls[name] if any(r.images for r in c)]
        distinct = sum(len({im.tobytes() for r in c for im in r.images}) for c in framed)
        shown = sum(len(r.images) for c in framed for r in c)
        ratios = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            new = [model.answer(c) for c in framed]
            t_new = time.perf_counter() - start
            start = time.perf_counter()
            old = [every_frame(model, c) for c in framed]
            t_old = time.perf_counter() - start
            ratios.append(t_old / t_new)
        for n_call, o_call in zip(new, old):
            same = same and [r.text for r in n_call] == o_call[0]
            worst = max([worst, *(abs(a - b) for r, lp in zip(n_call, o_call[1])
                                  for a, b in zip(r.option_logprobs, lp))])
        print(f"{name}: {len(framed)} calls with frames, {shown} frames shown, {distinct} distinct within their calls; "
              f"every frame {t_old:.2f} s, distinct frames once {t_new:.2f} s: median "
              f"{statistics.median(ratios):.2f}x; load {os.getloadavg()[0]:.2f}")
    print(f"every answer the same: {same}; largest log-probability difference: {worst:.2e}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())

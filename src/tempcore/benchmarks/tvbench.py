"""TVBench (Cores et al., 2024): the MVBench layout with its own ten tasks.

``json/{task}.json`` as in MVBench; every task's videos live in ``video/{task}/`` of the
release, and Action Sequence and Action Localization carry ``start`` / ``end`` segments:

====================  ====================  ====================  =====  =====
display name          task (JSON stem)      folder                media  bound
====================  ====================  ====================  =====  =====
Action Count          action_count          action_count          video  no
Object Count          object_count          object_count          video  no
Action Sequence       action_sequence       action_sequence       video  yes
Object Shuffle        object_shuffle        object_shuffle        video  no
Scene Transition      scene_transition      scene_transition      video  no
Action Localization   action_localization   action_localization   video  yes
Action Antonym        action_antonym        action_antonym        video  no
Unexpected Action     unexpected_action     unexpected_action     video  no
Egocentric Sequence   egocentric_sequence   egocentric_sequence   video  no
Moving Direction      moving_direction      moving_direction      video  no
====================  ====================  ====================  =====  =====

TVBench revised its annotations twice after the first release, so results depend on the
revision: pass ``revision=`` (e.g. the Hugging Face commit of ``FunAILab/TVBench`` you
downloaded). It is recorded in ``LoadResult.provenance`` and in every sample's metadata
(``"unspecified"`` when not given); ``annotations_hash`` pins the exact files either way.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tempcore.benchmarks.base import LoadContext
from tempcore.benchmarks.tasktable import TaskSpec, TaskTableLoader, table

TVBENCH_TASKS = table(
    ("Action Count", "action_count", "action_count", "video", False),
    ("Object Count", "object_count", "object_count", "video", False),
    ("Action Sequence", "action_sequence", "action_sequence", "video", True),
    ("Object Shuffle", "object_shuffle", "object_shuffle", "video", False),
    ("Scene Transition", "scene_transition", "scene_transition", "video", False),
    ("Action Localization", "action_localization", "action_localization", "video", True),
    ("Action Antonym", "action_antonym", "action_antonym", "video", False),
    ("Unexpected Action", "unexpected_action", "unexpected_action", "video", False),
    ("Egocentric Sequence", "egocentric_sequence", "egocentric_sequence", "video", False),
    ("Moving Direction", "moving_direction", "moving_direction", "video", False),
)


class TVBenchLoader(TaskTableLoader):
    name = "tvbench"
    description = "TVBench"
    default_table = TVBENCH_TASKS
    options: ClassVar[dict[str, str]] = {
        **TaskTableLoader.options,
        "revision": "annotation revision used (e.g. the HF commit); recorded in provenance and metadata",
    }

    def resolve_table(self, ctx: LoadContext) -> dict[str, TaskSpec]:
        ctx.provenance["revision"] = str(ctx.option("revision", "unspecified"))
        return super().resolve_table(ctx)

    def extra_metadata(self, ctx: LoadContext) -> dict[str, Any]:
        return {"revision": str(ctx.option("revision", "unspecified"))}

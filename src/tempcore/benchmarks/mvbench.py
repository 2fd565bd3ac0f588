"""MVBench (Li et al., 2024): ``json/{task}.json`` + the public task table below.

The default table is the one of the public release (the ``data_list`` of the authors'
evaluation notebook), folders relative to the release's ``video/`` folder:

==========================  ===========================  ===========================  =======  =====
display name                task (JSON stem)             folder                       media    bound
==========================  ===========================  ===========================  =======  =====
Action Sequence             action_sequence              star/Charades_v1_480         video    yes
Action Prediction           action_prediction            star/Charades_v1_480         video    yes
Action Antonym              action_antonym               ssv2_video                   video    no
Fine-grained Action         fine_grained_action          Moments_in_Time_Raw/videos   video    no
Unexpected Action           unexpected_action            FunQA_test/test              video    no
Object Existence            object_existence             clevrer/video_validation     video    no
Object Interaction          object_interaction           star/Charades_v1_480         video    yes
Object Shuffle              object_shuffle               perception/videos            video    no
Moving Direction            moving_direction             clevrer/video_validation     video    no
Action Localization         action_localization          sta/sta_video                video    yes
Scene Transition            scene_transition             scene_qa/video               video    no
Action Count                action_count                 perception/videos            video    no
Moving Count                moving_count                 clevrer/video_validation     video    no
Moving Attribute            moving_attribute             clevrer/video_validation     video    no
State Change                state_change                 perception/videos            video    no
Fine-grained Pose           fine_grained_pose            nturgbd                      video    no
Character Order             character_order              perception/videos            video    no
Egocentric Navigation       egocentric_navigation        vlnqa                        video    no
Episodic Reasoning          episodic_reasoning           tvqa/frames_fps3_hq          frames   yes (3 fps)
Counterfactual Inference    counterfactual_inference     clevrer/video_validation     video    no
==========================  ===========================  ===========================  =======  =====

Episodic Reasoning is the frame-folder task: each ``video`` is a folder of JPEG frames
extracted at 3 fps (``metadata["frames_fps"] = 3.0``). Animated GIFs are handled as media
``gif`` whenever a row's video ends in ``.gif`` (or a user table says ``gif``). Pass
``task_table=FILE`` when your copy is laid out differently (see :mod:`tasktable`).
"""

from __future__ import annotations

from tempcore.benchmarks.tasktable import TaskTableLoader, table

MVBENCH_TASKS = table(
    ("Action Sequence", "action_sequence", "star/Charades_v1_480", "video", True),
    ("Action Prediction", "action_prediction", "star/Charades_v1_480", "video", True),
    ("Action Antonym", "action_antonym", "ssv2_video", "video", False),
    ("Fine-grained Action", "fine_grained_action", "Moments_in_Time_Raw/videos", "video", False),
    ("Unexpected Action", "unexpected_action", "FunQA_test/test", "video", False),
    ("Object Existence", "object_existence", "clevrer/video_validation", "video", False),
    ("Object Interaction", "object_interaction", "star/Charades_v1_480", "video", True),
    ("Object Shuffle", "object_shuffle", "perception/videos", "video", False),
    ("Moving Direction", "moving_direction", "clevrer/video_validation", "video", False),
    ("Action Localization", "action_localization", "sta/sta_video", "video", True),
    ("Scene Transition", "scene_transition", "scene_qa/video", "video", False),
    ("Action Count", "action_count", "perception/videos", "video", False),
    ("Moving Count", "moving_count", "clevrer/video_validation", "video", False),
    ("Moving Attribute", "moving_attribute", "clevrer/video_validation", "video", False),
    ("State Change", "state_change", "perception/videos", "video", False),
    ("Fine-grained Pose", "fine_grained_pose", "nturgbd", "video", False),
    ("Character Order", "character_order", "perception/videos", "video", False),
    ("Egocentric Navigation", "egocentric_navigation", "vlnqa", "video", False),
    ("Episodic Reasoning", "episodic_reasoning", "tvqa/frames_fps3_hq", "frames", True, 3.0),
    ("Counterfactual Inference", "counterfactual_inference", "clevrer/video_validation", "video", False),
)


class MVBenchLoader(TaskTableLoader):
    name = "mvbench"
    description = "MVBench"
    default_table = MVBENCH_TASKS

"""Shared test setup: never reach a model hub; the real fixtures live in tests/data; the fixtures
several test files share live here.

Helpers are the package ``tests/helpers`` (``from helpers.tiny_vlms import build_tiny_vlm``;
``pythonpath = ["tests"]`` in ``[tool.pytest.ini_options]``). Tests that take more than about 10 s
on a 2-core machine carry ``@pytest.mark.slow``: ``pytest -m "not slow"`` is the quick loop.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

DATA = Path(__file__).parent / "data"


@pytest.fixture
def data_dir() -> Path:
    return DATA


def _single_torch_thread() -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture
def one_thread() -> Iterator[None]:
    """A single torch thread for one test: on a loaded 2-core machine two threads are many times slower."""
    yield from _single_torch_thread()


@pytest.fixture(scope="module")
def one_torch_thread_per_module() -> Iterator[None]:
    """A single torch thread for a whole module (tiny models run fastest on one thread and do not
    fight the other tests for the cores); a module uses it with an autouse fixture of its own."""
    yield from _single_torch_thread()


@pytest.fixture(scope="session")
def tiny_encoder_checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every tiny random-weight encoder checkpoint (:func:`helpers.tiny_encoders.tiny_checkpoints`),
    built once per session."""
    from helpers.tiny_encoders import tiny_checkpoints

    return tiny_checkpoints(tmp_path_factory.getbasetemp() / "tiny-encoders")


@pytest.fixture(scope="session")
def tiny_vlm_checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every tiny VLM checkpoint (one per family of :data:`helpers.tiny_vlms.FAMILIES`, seeded by its
    position), the tiny chat text LM (``text``) and one without a chat template (``text_base``),
    built once per session."""
    from helpers import tiny_vlms

    root = tmp_path_factory.mktemp("tiny_models")
    paths = {family: tiny_vlms.build_tiny_vlm(family, root / family, seed=i)
             for i, family in enumerate(tiny_vlms.FAMILIES)}
    paths["text"] = tiny_vlms.build_tiny_text_lm(root / "text")
    paths["text_base"] = tiny_vlms.build_tiny_text_lm(root / "text_base", chat_template=False, seed=1)
    return paths


# --- the `slow` marker ---------------------------------------------------------------------------
#: The slow tests, marked ``slow`` at collection: module -> test function names (``"*"``: the whole
#: module). One list, so that no test file needs an edit to be classified. Criterion: about 5 s or more
#: per test (its share of a heavy module fixture included) on the 2-core development machine, from
#: ``pytest --durations=40`` (seconds in the comments; load average 5-9 when measured, less on a quiet
#: machine). A name that is not a test of its module is an error, so the list cannot go stale silently.
SLOW: dict[str, tuple[str, ...]] = {
    "test_demo.py": ("*",),  # the demo end to end on a reduced world: 58 s, 40 s
    "test_lmms_eval_interop.py": ("*",),  # builds (or reuses) an lmms-eval venv and runs it: 272 s setup
    "test_real_server.py": ("*",),  # starts `transformers serve`: 13 s setup, 3 s per test
    "test_report_browser.py": ("*",),  # headless Chromium: 3.9 s setup, 2.7-5.4 s per test
    "test_gpu_bench.py": ("test_gpu_tiny",),  # 6.5 s
    "test_plugins.py": ("test_register_through_entry_points_of_an_installed_distribution",),  # 4.7-8.4 s
    "test_decode_once.py": ("test_demo_profile_prints_where_the_time_goes_and_changes_no_answer",),  # 25-80 s
    "test_ray.py": ("*",),  # a local Ray and a `ray start --head` cluster: 3.5-4 min in all (load 6-10)
    "test_ray_node_loss.py": ("*",),  # a two-node Ray cluster, nodes killed mid-run: 3 min in all (load 6-12)
    "test_oracle_early_stop.py": (  # world runs (about 20 s fixture) and the Ray executor (about 80 s)
        "test_same_oracle_correctness_and_uniform_vs_oracle_with_fewer_calls",
        "test_stored_windows_are_the_asking_order_up_to_the_first_correct",
        "test_a_run_stopped_mid_wave_resumes_to_the_same_rows",
        "test_table7_needs_every_window",
        "test_the_ray_executor_runs_the_same_waves",
    ),
    "test_runner.py": ("test_sigkill_during_run_then_resume_matches_uninterrupted",),  # 28.6-125 s
    "test_operator.py": ("test_a_stop_signal_commits_what_is_answered_writes_the_summary_and_the_table",),  # 2 x 12 s
    "test_store.py": ("test_sigkill_at_random_points_then_resume",),  # 6.1 s
    "test_tiny_checkpoints.py": ("test_command_writes_checkpoints_that_load_through_the_user_path",),  # 15-25 s
    "test_docs.py": ("*",),  # runs the README's and the site's examples, builds the site: see the module
    "test_trust_report.py": (  # headless Chromium: 11.8 s, 7.2 s, 6.5 s
        "test_fss_categories_filter_the_browser",
        "test_a_filter_link_scrolls_to_the_browser",
        "test_a_filter_that_matches_nothing_says_so",
    ),
    "test_world_encoder.py": (  # encoder training: 29.0 s; the shipped encoder on a world: 10.2 s
        "test_training_reduces_loss_and_is_reproducible",
        "test_shipped_encoder_finds_planted_windows",
    ),
    "test_world_answerers.py": (  # world answerer training (22-65 s module fixture; 20 s, 30 s) and evaluation (21-24 s)
        "test_frame_encoder_loss_falls",
        "test_member_loss_falls",
        "test_members_keep_the_frozen_encoder",
        "test_save_and_load_roundtrip",
        "test_training_is_deterministic_for_a_seed",
        "test_hf_answerer_loss_falls",
        "test_shipped_frame_members_learned_the_world",
        "test_shipped_text_member_knows_only_text",
        "test_shipped_hf_answerer_learned_the_text_priors",
    ),
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    checked: set[str] = set()
    for item in items:
        module = item.path.name
        names = SLOW.get(module)
        if not names:
            continue
        if module not in checked:
            checked.add(module)
            mod = getattr(item, "module", None)
            missing = [n for n in names if n != "*" and mod is not None and not hasattr(mod, n)]
            if missing:
                raise pytest.UsageError(f"tests/conftest.py SLOW names {missing} in {module}: no such test")
        if "*" in names or getattr(item, "originalname", item.name) in names:
            item.add_marker(pytest.mark.slow)

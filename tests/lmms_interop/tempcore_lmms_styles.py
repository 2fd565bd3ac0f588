"""An lmms-eval model class that answers in 28 styles, registered through lmms-eval's entry points.

Runs inside the lmms-eval virtual environment (not tempcore's): the interop test copies this file
and ``styles.py`` (as ``tempcore_lmms_style_table.py``) into a folder with a ``.dist-info`` whose
``entry_points.txt`` declares ``[lmms_eval.models] tempcore_styles = tempcore_lmms_styles:manifest``,
and puts that folder on ``PYTHONPATH``: lmms-eval's model registry finds it through
``importlib.metadata.entry_points(group="lmms_eval.models")``, as it finds any installed plugin.
"""

from lmms_eval.api.model import lmms
from lmms_eval.models.registry_v2 import ModelManifest
from tempcore_lmms_style_table import styled_response


class StyleModel(lmms):
    """Reads each request's doc (options, gold answer) and answers in style ``doc_id % 28``."""

    is_simple = True

    def __init__(self, **kwargs) -> None:
        super().__init__()

    def generate_until(self, requests) -> list:
        out = []
        for request in requests:
            _context, _gen_kwargs, _doc_to_visual, doc_id, task, split = request.args
            doc = self.task_dict[task][split][doc_id]
            out.append(styled_response(int(doc_id), list(doc["options"]), int(doc["answer"])))
        return out

    def loglikelihood(self, requests) -> list:
        raise NotImplementedError("tempcore_styles only generates")

    def generate_until_multi_round(self, requests) -> list:
        return self.generate_until(requests)


def manifest() -> ModelManifest:
    return ModelManifest(model_id="tempcore_styles", simple_class_path="tempcore_lmms_styles.StyleModel")

"""A generic transformers VLM adapter: ``AutoModelForImageTextToText`` + ``AutoProcessor``.

One adapter for every image-text-to-text checkpoint whose processor takes interleaved images
(tested on tiny random-weight Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Idefics3 / SmolVLM, SmolVLM2
and LLaVA-OneVision). For a request it builds one user turn with one image entry per frame, in
the order shown, followed by the rendered prompt text::

    [{"role": "user", "content": [{"type": "image"}, ..., {"type": "image"}, {"type": "text", "text": prompt}]}]

renders it with the checkpoint's own chat template (plus the generation prompt), and runs
batched greedy generation (``do_sample=False``, few new tokens) with left padding. Frames are
passed as images, not as a video, so every family sees exactly the frames tempcore selected
(no sampling inside the model's video processor); frame timestamps are not given to the model
(the prompt may state them).

Loading: only safetensors weights; ``trust_remote_code`` only with the spec's opt-in (refused
with :class:`RemoteCodeRefused` otherwise). Processors that declare a video processor cannot be
built without torchvision; when torchvision is missing the adapter builds the checkpoint's
processor class through a subclass that leaves the video processor out (images only).

Option scoring and letter ids: see :mod:`tempcore.models._hf_common`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tempcore.models._hf_common import (
    HFAdapterBase,
    check_remote_code,
    read_config_dict,
    require_torch_transformers,
    resize_max_side,
    resolve_device,
    resolve_dtype,
)
from tempcore.models.base import ModelConfigError, ModelError, ModelRequest, ModelSpec
from tempcore.models.specs import HFVLMSpec, expect_spec


def without_video_processor(processor_cls: type[Any]) -> type[Any]:
    """A subclass of ``processor_cls`` whose sub-processors exclude ``video_processor``.

    Its ``get_attributes()`` leaves ``video_processor`` out (so ``from_pretrained`` neither looks
    for nor builds one, and ``save_pretrained`` writes none), and ``from_pretrained`` passes
    ``None`` as the video processor to constructors that require the argument (in its position
    before transformers 5.25, as an entry of the processor's dict since).
    The ``__init__`` is the parent's, so every saved processor option reloads. Such a
    processor handles images and text only.
    """
    import inspect

    params = [p for p in inspect.signature(processor_cls.__init__).parameters if p != "self"]
    position = params.index("video_processor") if "video_processor" in params else None

    class ImagesOnlyProcessor(processor_cls):  # type: ignore[misc]
        @classmethod
        def get_attributes(cls) -> list[str]:
            return [name for name in processor_cls.get_attributes() if name != "video_processor"]

        @classmethod
        def _get_arguments_from_pretrained(cls, *args: Any, **kwargs: Any) -> list[Any]:
            # transformers < 5.25: the sub-processors are positional arguments
            arguments = list(super()._get_arguments_from_pretrained(*args, **kwargs))
            if position is not None and position <= len(arguments):
                arguments.insert(position, None)
            return arguments

        @classmethod
        def from_dict(cls, processor_dict: dict[str, Any], **kwargs: Any) -> Any:
            # transformers >= 5.25: the sub-processors are entries of the processor's dict
            if position is not None:
                processor_dict = {**processor_dict, "video_processor": None}
            return super().from_dict(processor_dict, **kwargs)

    ImagesOnlyProcessor.__name__ = processor_cls.__name__
    ImagesOnlyProcessor.__qualname__ = processor_cls.__qualname__
    ImagesOnlyProcessor.__module__ = processor_cls.__module__
    return ImagesOnlyProcessor


def processor_class_for(config: Any, config_dict: dict[str, Any]) -> type[Any] | None:
    """The processor class a checkpoint declares (``processor_class``) or its model type maps to."""
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING, processor_class_from_name

    declared = config_dict.get("processor_class")
    if declared:
        cls: type[Any] | None = processor_class_from_name(declared)
        if cls is not None:
            return cls
    try:
        # transformers types every auto mapping's value as the (slow, fast) tokenizer pair; this one is a class
        return PROCESSOR_MAPPING[type(config)]  # type: ignore[return-value, unused-ignore]
    except KeyError:
        return None


def load_processor(spec: HFVLMSpec, config: Any, config_dict: dict[str, Any]) -> Any:
    """``AutoProcessor`` for the checkpoint, images-only when torchvision is unavailable.

    Detection is generic: if the processor class declares a ``video_processor`` and torchvision
    cannot be imported, the images-only subclass is used; any other processor goes through
    ``AutoProcessor`` unchanged.
    """
    from transformers import AutoProcessor
    from transformers.utils.import_utils import is_torchvision_available

    kwargs = dict(revision=spec.revision, trust_remote_code=spec.trust_remote_code)
    cls = processor_class_for(config, config_dict)
    if cls is not None and "video_processor" in cls.get_attributes() and not is_torchvision_available():
        return without_video_processor(cls).from_pretrained(spec.model, **kwargs)
    return AutoProcessor.from_pretrained(spec.model, **kwargs)  # type: ignore[no-untyped-call, unused-ignore]  # transformers


class HFVisionLanguageModel(HFAdapterBase):
    """Any transformers image-text-to-text checkpoint behind the :class:`Model` interface."""

    spec_class: ClassVar[type[ModelSpec]] = HFVLMSpec
    spec: HFVLMSpec

    def __init__(self, spec: HFVLMSpec) -> None:
        expect_spec(spec, HFVLMSpec, "backend hf")
        super().__init__(spec)
        require_torch_transformers(f"model {spec.display_name} (backend hf)")
        from transformers import AutoConfig

        config_dict = read_config_dict(spec)
        check_remote_code(spec, config_dict)
        self.device = resolve_device(spec.device)
        self.dtype = resolve_dtype(spec.dtype, self.device)
        load = dict(revision=spec.revision, trust_remote_code=spec.trust_remote_code)
        try:
            config = AutoConfig.from_pretrained(spec.model, **load)
            self.processor = load_processor(spec, config, config_dict)
            model_kwargs: dict[str, Any] = dict(load, dtype=self.dtype, use_safetensors=True)
            for key in ("attn_implementation", "device_map"):
                if key in spec.extra:
                    model_kwargs[key] = spec.extra[key]
            model = self._auto_class().from_pretrained(spec.model, **model_kwargs)
        except (OSError, ValueError) as exc:
            raise ModelError(f"model {spec.display_name}: cannot load {spec.model!r}: {exc}") from exc
        self.model = (model if "device_map" in spec.extra else model.to(self.device)).eval()
        self.tokenizer = getattr(self.processor, "tokenizer", None)
        if self.tokenizer is None:
            raise ModelError(f"model {spec.display_name}: processor of {spec.model!r} has no tokenizer")
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.chat_template = getattr(self.processor, "chat_template", None) or getattr(
            self.tokenizer, "chat_template", None
        )
        if spec.extra.get("chat_template"):
            self.chat_template = str(spec.extra["chat_template"])
        if not self.chat_template:
            raise ModelConfigError(
                f"model {spec.display_name}: {spec.model!r} ships no chat template; give one as "
                "extra.chat_template in the model spec"
            )
        image_processor = getattr(self.processor, "image_processor", None)
        if spec.image_size and image_processor is not None:
            image_processor.size = {**dict(getattr(image_processor, "size", None) or {}), **spec.image_size}
        self._nested_images = True

    def _auto_class(self) -> Any:
        """``AutoModelForImageTextToText``, or the transformers class named by ``extra.model_class``."""
        import transformers

        name = str(self.spec.extra.get("model_class", "AutoModelForImageTextToText"))
        cls = getattr(transformers, name, None)
        if cls is None or not hasattr(cls, "from_pretrained"):
            raise ModelConfigError(
                f"model {self.spec.display_name}: extra.model_class {name!r} is not a transformers model class"
            )
        return cls

    def _validate(self, request: ModelRequest) -> str | None:
        if self.spec.max_frames is not None and len(request.images) > self.spec.max_frames:
            return (
                f"request {request.key!r}: {len(request.images)} images exceed this model's "
                f"max_frames={self.spec.max_frames}"
            )
        return None

    def _messages(self, request: ModelRequest) -> list[dict[str, Any]]:
        from tempcore.models.interleaved import hf_content  # interleaved layouts (visual answer options)

        return [{"role": "user", "content": hf_content(request)}]

    def _system_content(self) -> Any:
        return [{"type": "text", "text": self.spec.system_prompt}]

    def _encode(self, texts: list[str], requests: list[ModelRequest]) -> Any:
        kwargs: dict[str, Any] = dict(padding=True, return_tensors="pt", add_special_tokens=False)
        kwargs.update(self.spec.processor_kwargs)
        if any(r.images for r in requests):
            images = [[resize_max_side(im, self.spec.max_image_side) for im in r.images] for r in requests]
            return self.processor(text=texts, images=images, **kwargs)
        return self.processor(text=texts, **kwargs)


__all__ = ["HFVisionLanguageModel", "load_processor", "without_video_processor"]

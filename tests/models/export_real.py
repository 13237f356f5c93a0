#!/usr/bin/env python3
"""A corpus of ONNX models exported the way users export them today, with
ONNX Runtime reference outputs.

Run it through ``tests/models/export_real.sh``, which puts torch, torchvision,
transformers, onnx, onnxscript and onnxruntime (export_real_requirements.txt)
into a virtualenv of their own (default ``build/export-venv``).

Every model is built from a config with random weights (``torch.manual_seed``
fixed per model; nothing is downloaded) and exported twice:

- ``torchscript``: ``torch.onnx.export(..., dynamo=False, opset_version=17)``
  with ``dynamic_axes`` on the batch dimension;
- ``dynamo``: the default ``torch.onnx.export(model, args, path)`` (the
  torch.export-based exporter, its default opset, optimizer and external
  data), with ``dynamic_shapes`` on the batch dimension.

Each export lands in ``<out>/<name>__<exporter>/`` in the ONNX backend-test
layout: ``model.onnx`` (plus ``model.onnx.data`` exactly as the exporter wrote
it), ``test_data_set_0/`` (batch 1) and ``test_data_set_1/`` (batch 4, when the
batch dimension is dynamic) holding ``input_<i>.pb`` / ``output_<i>.pb``
TensorProtos named after the graph's inputs and outputs. The outputs are ONNX
Runtime's (CPUExecutionProvider, ``ORT_DISABLE_ALL``) on inputs drawn from a
numpy generator seeded per model and batch, so a rerun gives the same inputs.

``<out>/manifest.json`` records, per folder, where the model comes from, the
exporter and opset, external data, the op types (with domains), inputs and
outputs, sizes, the ONNX Runtime vs. torch difference, and every export that
failed (``export_failures``, the exception's first line). Its ``op_summary``
lists, per op type, which models use it and the attribute / input-count
signatures they use it with.

Besides the tiny corpus (default ``--out tests/models/real``), ``--full
--out DIR`` exports full-size resnet50, efficientnet_b0, vit_b_16 and
``BertModel(BertConfig())`` with the default exporter only (not committed).

    tests/models/export_real.sh                          # the corpus
    tests/models/export_real.sh --only bert_tiny,vit_tiny
    tests/models/export_real.sh --full --out /tmp/full_exports
    tests/models/export_real.sh --strip-paths   # only re-strip the corpus

Node metadata naming files of the exporting machine (torch.export's stack
traces) is dropped before a model is committed (strip_local_paths).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import re
import shutil
import sys
import time
import traceback
import warnings
import zlib
from pathlib import Path
from typing import Callable

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / "tests" / "models" / "real"

TORCHSCRIPT_OPSET = 17
EXPORT_BATCH = 2  # example batch for export: 0 and 1 get specialized by torch.export
TEST_BATCHES = (1, 4)  # test_data_set_0, test_data_set_1
SEQ = 16  # token sequence length of the text models

import torch  # noqa: E402  (after the docstring; the venv has it)
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402
import onnxruntime as ort  # noqa: E402


# ---------------------------------------------------------------------------
# model specs


@dataclasses.dataclass
class Built:
    module: torch.nn.Module
    input_names: list[str]
    output_names: list[str]
    # batch size, numpy Generator -> one array per input
    make_inputs: Callable[[int, np.random.Generator], list[np.ndarray]]
    notes: list[str] = dataclasses.field(default_factory=list)
    batch_dynamic: bool = True


@dataclasses.dataclass
class Spec:
    name: str
    source: str
    # attn_implementation (None for models without one) -> Built
    build: Callable[[str | None], Built]
    attn_impls: tuple[str | None, ...] = (None,)
    kind: str = "fp32"


def seed_of(name: str) -> int:
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def randomize_batchnorm(module: torch.nn.Module, gen: torch.Generator) -> None:
    """Fresh BatchNorm layers are the identity (mean 0, var 1, gamma 1, beta 0):
    give them running statistics and affine parameters that do something."""
    for m in module.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            n = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
                if m.affine:
                    m.weight.copy_(torch.rand(n, generator=gen) * 0.4 + 0.8)
                    m.bias.copy_(torch.randn(n, generator=gen) * 0.05)


HEAD_NOTE = ("classifier head re-initialized with nn.Linear.reset_parameters() (torchvision's own init "
             "{what}), so the logits are not ~0")


def reset_heads(*linears: torch.nn.Linear) -> None:
    for lin in linears:
        lin.reset_parameters()


def image_inputs(c: int, h: int, w: int):
    def make(batch: int, rng: np.random.Generator) -> list[np.ndarray]:
        return [rng.standard_normal((batch, c, h, w), dtype=np.float32)]

    return make


class FirstOutputs(torch.nn.Module):
    """Returns plain tensors: a dict output's chosen keys, in order."""

    def __init__(self, inner: torch.nn.Module, keys: list[str]):
        super().__init__()
        self.inner = inner
        self.keys = keys

    def forward(self, x):
        out = self.inner(x)
        res = tuple(out[k] for k in self.keys)
        return res[0] if len(res) == 1 else res


# --- torchvision classifiers -------------------------------------------------


def _scaled_resnet_class():
    from torchvision.models import resnet as tvr

    class ScaledResNet(tvr.ResNet):
        """torchvision's ResNet with the stage widths (64, 128, 256, 512)
        as a parameter: ResNet.__init__ hard-codes them. Same layers,
        _make_layer and forward as ResNet; only the channel counts change."""

        def __init__(self, block, layers, widths=(64, 128, 256, 512), num_classes=1000,
                     replace_stride_with_dilation=None):
            torch.nn.Module.__init__(self)
            self._norm_layer = torch.nn.BatchNorm2d
            self.inplanes = widths[0]
            self.dilation = 1
            if replace_stride_with_dilation is None:
                replace_stride_with_dilation = [False, False, False]
            self.groups = 1
            self.base_width = 64
            self.conv1 = torch.nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
            self.bn1 = self._norm_layer(self.inplanes)
            self.relu = torch.nn.ReLU(inplace=True)
            self.maxpool = torch.nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.layer1 = self._make_layer(block, widths[0], layers[0])
            self.layer2 = self._make_layer(block, widths[1], layers[1], stride=2,
                                           dilate=replace_stride_with_dilation[0])
            self.layer3 = self._make_layer(block, widths[2], layers[2], stride=2,
                                           dilate=replace_stride_with_dilation[1])
            self.layer4 = self._make_layer(block, widths[3], layers[3], stride=2,
                                           dilate=replace_stride_with_dilation[2])
            self.avgpool = torch.nn.AdaptiveAvgPool2d((1, 1))
            self.fc = torch.nn.Linear(widths[3] * block.expansion, num_classes)
            for m in self.modules():
                if isinstance(m, torch.nn.Conv2d):
                    torch.nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    return ScaledResNet


RESNET_NOTE = ("torchvision.models.resnet.ResNet subclassed (ScaledResNet) only to scale the "
               "hard-coded stage widths 64/128/256/512 down to 8/16/32/64; blocks, _make_layer "
               "and forward are torchvision's")


def build_resnet_basic(_attn) -> Built:
    from torchvision.models.resnet import BasicBlock
    m = _scaled_resnet_class()(BasicBlock, [2, 1, 1, 1], widths=(8, 16, 32, 64), num_classes=10)
    return Built(m, ["input"], ["logits"], image_inputs(3, 64, 64),
                 notes=[RESNET_NOTE, "BasicBlock, layers [2,1,1,1] (resnet18 is [2,2,2,2]), 64x64 input"])


def build_resnet_bottleneck(_attn) -> Built:
    from torchvision.models.resnet import Bottleneck
    m = _scaled_resnet_class()(Bottleneck, [1, 1, 1, 1], widths=(8, 16, 32, 64), num_classes=10)
    return Built(m, ["input"], ["logits"], image_inputs(3, 64, 64),
                 notes=[RESNET_NOTE, "Bottleneck (resnet50's block), layers [1,1,1,1], 64x64 input"])


def build_mobilenet_v3(_attn) -> Built:
    from torchvision.models import mobilenet_v3_small
    m = mobilenet_v3_small(weights=None, width_mult=0.25, num_classes=10)
    reset_heads(m.classifier[0], m.classifier[3])
    return Built(m, ["input"], ["logits"], image_inputs(3, 64, 64),
                 notes=[HEAD_NOTE.format(what="is normal std 0.01"), "torchvision.models.mobilenet_v3_small(weights=None, width_mult=0.25, num_classes=10), "
                        "full depth, 64x64 input"])


def build_efficientnet(_attn) -> Built:
    from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf
    setting, last_channel = _efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.5)
    m = EfficientNet(setting, dropout=0.2, stochastic_depth_prob=0.2, num_classes=10,
                     last_channel=last_channel)
    return Built(m, ["input"], ["logits"], image_inputs(3, 64, 64),
                 notes=["torchvision EfficientNet with _efficientnet_conf('efficientnet_b0', width_mult=0.25, "
                        "depth_mult=0.5) (B0's MBConv stages, SiLU, squeeze-excitation), 64x64 input"])


def build_convnext(_attn) -> Built:
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    cfg = [CNBlockConfig(8, 16, 1), CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 2),
           CNBlockConfig(64, None, 1)]
    m = ConvNeXt(cfg, stochastic_depth_prob=0.1, num_classes=10)
    return Built(m, ["input"], ["logits"], image_inputs(3, 64, 64),
                 notes=["torchvision ConvNeXt with CNBlockConfig widths 8/16/32/64, depths 1/1/2/1 "
                        "(convnext_tiny: 96..768, 3/3/9/3), 64x64 input"])


def build_regnet(_attn) -> Built:
    from torchvision.models.regnet import BlockParams, RegNet
    params = BlockParams.from_init_params(depth=5, w_0=8, w_a=8.0, w_m=2.0, group_width=8, se_ratio=0.25)
    m = RegNet(params, num_classes=10, stem_width=8)
    reset_heads(m.fc)
    return Built(m, ["input"], ["logits"], image_inputs(3, 64, 64),
                 notes=[HEAD_NOTE.format(what="is normal std 0.01"), "torchvision RegNet with BlockParams.from_init_params(depth=5, w_0=8, w_a=8, w_m=2, "
                        "group_width=8, se_ratio=0.25) (RegNetY-style: grouped conv + SE), stem_width 8, 64x64"])


def build_vit(_attn) -> Built:
    from torchvision.models.vision_transformer import VisionTransformer
    m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                          mlp_dim=64, num_classes=10)
    reset_heads(m.heads.head)
    with torch.no_grad():  # the class token starts at zero too
        m.class_token.normal_(0.0, 0.5)
    return Built(m, ["input"], ["logits"], image_inputs(3, 32, 32),
                 notes=[HEAD_NOTE.format(what="is all zeros") + "; class_token drawn from N(0, 0.5)", "torchvision VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, "
                        "hidden_dim=32, mlp_dim=64) (vit_b_16: 224, 16, 12, 12, 768, 3072)"])


def build_swin(_attn) -> Built:
    from torchvision.models.swin_transformer import SwinTransformer
    m = SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[1, 2],
                        window_size=[4, 4], stochastic_depth_prob=0.1, num_classes=10)
    reset_heads(m.head)
    return Built(m, ["input"], ["logits"], image_inputs(3, 32, 32),
                 notes=[HEAD_NOTE.format(what="is trunc_normal std 0.02"), "torchvision SwinTransformer v1, embed_dim 16, depths [2,2], heads [1,2], window 4x4, "
                        "32x32 input: stage 1 (8x8) has a shifted-window block; stage 2 (4x4) does not shift"])


def build_swin_v2(_attn) -> Built:
    from torchvision.models.swin_transformer import (PatchMergingV2, SwinTransformer,
                                                     SwinTransformerBlockV2)
    m = SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[1, 2],
                        window_size=[4, 4], stochastic_depth_prob=0.1, num_classes=10,
                        block=SwinTransformerBlockV2, downsample_layer=PatchMergingV2)
    reset_heads(m.head)
    return Built(m, ["input"], ["logits"], image_inputs(3, 32, 32),
                 notes=[HEAD_NOTE.format(what="is trunc_normal std 0.02"), "torchvision SwinTransformer v2 (SwinTransformerBlockV2, PatchMergingV2: cosine "
                        "attention, continuous position bias MLP), same sizes as swin_tiny_v1"])


def build_deeplabv3(_attn) -> Built:
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.resnet import Bottleneck
    from torchvision.models.segmentation.deeplabv3 import ASPP, DeepLabV3
    from torchvision.models.segmentation.fcn import FCNHead
    backbone = _scaled_resnet_class()(Bottleneck, [1, 1, 1, 1], widths=(4, 8, 16, 32), num_classes=10,
                                      replace_stride_with_dilation=[False, True, True])
    backbone = IntermediateLayerGetter(backbone, {"layer3": "aux", "layer4": "out"})
    # DeepLabHead(in, classes) is Sequential(ASPP(in, rates), Conv3x3 256, BN, ReLU, Conv1x1) with
    # ASPP's out_channels fixed at 256: the same layers at 32 channels.
    head = torch.nn.Sequential(
        ASPP(128, [12, 24, 36], out_channels=32),
        torch.nn.Conv2d(32, 32, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(32),
        torch.nn.ReLU(),
        torch.nn.Conv2d(32, 10, 1),
    )
    aux = FCNHead(64, 10)
    m = FirstOutputs(DeepLabV3(backbone, head, aux), ["out", "aux"])
    return Built(m, ["input"], ["out", "aux"], image_inputs(3, 64, 64),
                 notes=["torchvision.models.segmentation DeepLabV3 (as deeplabv3_resnet50(aux_loss=True) builds "
                        "it: dilated Bottleneck ResNet via IntermediateLayerGetter, ASPP head, FCNHead aux) on "
                        "ScaledResNet widths 4/8/16/32; DeepLabHead rebuilt with ASPP(out_channels=32) since "
                        "DeepLabHead hard-codes 256; 64x64 input, outputs bilinearly resized to 64x64"])


# --- transformers --------------------------------------------------------------


def text_inputs(names: list[str], vocab: int, pad_id: int, left_pad: bool = False,
                seq: int = SEQ, eos_id: int | None = None):
    """input_ids (pad_id where masked), attention_mask with padding in all rows
    but the first of a batch > 1 (batch 1: one padded row), token_type_ids 0/1."""

    def make(batch: int, rng: np.random.Generator) -> list[np.ndarray]:
        ids = rng.integers(3, vocab, size=(batch, seq), dtype=np.int64)
        if batch == 1:
            lengths = [seq - 5]
        else:
            lengths = [seq] + [int(rng.integers(2, seq)) for _ in range(batch - 1)]
        mask = np.zeros((batch, seq), dtype=np.int64)
        tt = np.zeros((batch, seq), dtype=np.int64)
        for r, n in enumerate(lengths):
            span = slice(seq - n, seq) if left_pad else slice(0, n)
            mask[r, span] = 1
            if eos_id is not None:
                ids[r, (seq - 1) if left_pad else (n - 1)] = eos_id
            cut = n // 2
            if left_pad:
                tt[r, seq - n + cut:] = 1
            else:
                tt[r, cut:n] = 1
        ids[mask == 0] = pad_id
        arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": tt}
        return [arrays[n] for n in names]

    return make


class HFWrap(torch.nn.Module):
    """A Hugging Face model as positional tensors in, plain tensors out."""

    def __init__(self, inner: torch.nn.Module, input_names: list[str], output_keys: list[str]):
        super().__init__()
        self.inner = inner
        self.input_names = list(input_names)
        self.output_keys = list(output_keys)

    def forward(self, *args):
        out = self.inner(**dict(zip(self.input_names, args)))
        res = tuple(getattr(out, k) for k in self.output_keys)
        return res[0] if len(res) == 1 else res


class HFWrap1(HFWrap):
    def forward(self, input_ids):  # noqa: D102 (named args give dynamo's dynamic_shapes keys)
        return HFWrap.forward(self, input_ids)


class HFWrap2(HFWrap):
    def forward(self, input_ids, attention_mask):  # noqa: D102
        return HFWrap.forward(self, input_ids, attention_mask)


class HFWrap3(HFWrap):
    def forward(self, input_ids, attention_mask, token_type_ids):  # noqa: D102
        return HFWrap.forward(self, input_ids, attention_mask, token_type_ids)


class HFWrapPixels(HFWrap):
    def forward(self, pixel_values):  # noqa: D102
        return HFWrap.forward(self, pixel_values)


class HFWrapFeatures(HFWrap):
    def forward(self, input_features):  # noqa: D102
        return HFWrap.forward(self, input_features)


def hf_text(model_cls, config, names, outputs, notes, pad_id=0, left_pad=False, eos_id=None) -> Built:
    inner = model_cls(config)
    wrap = {1: HFWrap1, 2: HFWrap2, 3: HFWrap3}[len(names)]
    m = wrap(inner, names, outputs)
    return Built(m, names, outputs, text_inputs(names, config.vocab_size, pad_id, left_pad, eos_id=eos_id),
                 notes=notes)


def build_bert(attn) -> Built:
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=1000, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, attn_implementation=attn)
    return hf_text(BertModel, cfg, ["input_ids", "attention_mask", "token_type_ids"],
                   ["last_hidden_state", "pooler_output"],
                   ["transformers BertModel(BertConfig(vocab 1000, hidden 32, 2 layers, 2 heads, ffn 64)), "
                    f"seq {SEQ}, right padding"])


def build_distilbert(attn) -> Built:
    from transformers import DistilBertConfig, DistilBertModel
    cfg = DistilBertConfig(vocab_size=1000, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                           max_position_embeddings=64, attn_implementation=attn)
    return hf_text(DistilBertModel, cfg, ["input_ids", "attention_mask"], ["last_hidden_state"],
                   ["transformers DistilBertModel(dim 32, 2 layers, 2 heads, ffn 64), right padding"])


def build_roberta(attn) -> Built:
    from transformers import RobertaConfig, RobertaModel
    cfg = RobertaConfig(vocab_size=1000, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, pad_token_id=1,
                        attn_implementation=attn)
    return hf_text(RobertaModel, cfg, ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"],
                   ["transformers RobertaModel(hidden 32, 2 layers, 2 heads, ffn 64), pad id 1: position ids "
                    "are computed from input_ids != pad (cumsum)"], pad_id=1)


def build_albert(attn) -> Built:
    from transformers import AlbertConfig, AlbertModel
    cfg = AlbertConfig(vocab_size=1000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                       num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                       attn_implementation=attn)
    return hf_text(AlbertModel, cfg, ["input_ids", "attention_mask", "token_type_ids"],
                   ["last_hidden_state", "pooler_output"],
                   ["transformers AlbertModel(embedding 16, hidden 32, 2 layers sharing weights, 2 heads, "
                    "ffn 64, gelu_new), right padding"])


def build_gpt2(attn) -> Built:
    from transformers import GPT2Config, GPT2Model
    cfg = GPT2Config(vocab_size=1000, n_positions=64, n_embd=32, n_layer=2, n_head=2, use_cache=False,
                     bos_token_id=0, eos_token_id=0, attn_implementation=attn)
    return hf_text(GPT2Model, cfg, ["input_ids", "attention_mask"], ["last_hidden_state"],
                   ["transformers GPT2Model(n_embd 32, 2 layers, 2 heads), use_cache=False, no past; "
                    "left padding (as for batched generation)"], left_pad=True)


def build_t5_encoder(attn) -> Built:
    from transformers import T5Config, T5EncoderModel
    cfg = T5Config(vocab_size=1000, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2,
                   relative_attention_num_buckets=8, relative_attention_max_distance=16,
                   attn_implementation=attn)
    return hf_text(T5EncoderModel, cfg, ["input_ids", "attention_mask"], ["last_hidden_state"],
                   ["transformers T5EncoderModel(d_model 32, d_kv 16, ffn 64, 2 layers, 2 heads, 8 relative "
                    "buckets), right padding"])


def build_clip_text(attn) -> Built:
    from transformers import CLIPTextConfig, CLIPTextModel
    cfg = CLIPTextConfig(vocab_size=1000, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, max_position_embeddings=SEQ, pad_token_id=0,
                         bos_token_id=1, eos_token_id=2,
                         attn_implementation=attn)
    return hf_text(CLIPTextModel, cfg, ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"],
                   ["transformers CLIPTextModel(hidden 32, 2 layers, 2 heads, 16 positions), eos_token_id 2: "
                    "the pooler takes the argmax of input_ids (the legacy path of the original CLIP "
                    "configs), so token 999, the largest id, ends each row; right padding"], pad_id=0, eos_id=999)


def build_clip_vision(attn) -> Built:
    from transformers import CLIPVisionConfig, CLIPVisionModel
    cfg = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                           image_size=32, patch_size=8, attn_implementation=attn)
    m = HFWrapPixels(CLIPVisionModel(cfg), ["pixel_values"], ["last_hidden_state", "pooler_output"])
    return Built(m, ["pixel_values"], ["last_hidden_state", "pooler_output"], image_inputs(3, 32, 32),
                 notes=["transformers CLIPVisionModel(hidden 32, 2 layers, 2 heads, image 32, patch 8)"])


def build_whisper_encoder(attn) -> Built:
    from transformers import WhisperConfig, WhisperModel
    cfg = WhisperConfig(num_mel_bins=16, d_model=32, encoder_layers=2,
                        encoder_attention_heads=2, decoder_layers=1, decoder_attention_heads=2,
                        encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=16,
                        max_target_positions=16, attn_implementation=attn)
    enc = WhisperModel(cfg).get_encoder()
    m = HFWrapFeatures(enc, ["input_features"], ["last_hidden_state"])
    frames = 2 * cfg.max_source_positions  # conv2 has stride 2; the encoder checks this length

    def make(batch: int, rng: np.random.Generator) -> list[np.ndarray]:
        return [rng.standard_normal((batch, cfg.num_mel_bins, frames), dtype=np.float32)]

    return Built(m, ["input_features"], ["last_hidden_state"], make,
                 notes=["transformers WhisperModel(WhisperConfig(num_mel_bins 16, d_model 32, 2 encoder layers, "
                        "2 heads, ffn 64, max_source_positions 16)).get_encoder(), input_features [B,16,32]"])


TV = "torchvision.models"
ATTN = ("sdpa", "eager")

SPECS: list[Spec] = [
    Spec("resnet_basic_tiny", f"{TV}.resnet (ResNet, BasicBlock)", build_resnet_basic),
    Spec("resnet_bottleneck_tiny", f"{TV}.resnet (ResNet, Bottleneck)", build_resnet_bottleneck),
    Spec("mobilenet_v3_small_tiny", f"{TV}.mobilenetv3.mobilenet_v3_small", build_mobilenet_v3),
    Spec("efficientnet_b0_tiny", f"{TV}.efficientnet (EfficientNet, _efficientnet_conf b0)", build_efficientnet),
    Spec("convnext_tiny", f"{TV}.convnext (ConvNeXt, CNBlockConfig)", build_convnext),
    Spec("regnet_tiny", f"{TV}.regnet (RegNet, BlockParams)", build_regnet),
    Spec("vit_tiny", f"{TV}.vision_transformer.VisionTransformer", build_vit),
    Spec("swin_tiny_v1", f"{TV}.swin_transformer.SwinTransformer", build_swin),
    Spec("swin_tiny_v2", f"{TV}.swin_transformer.SwinTransformer (V2 blocks)", build_swin_v2),
    Spec("deeplabv3_tiny", f"{TV}.segmentation.deeplabv3.DeepLabV3", build_deeplabv3),
    Spec("bert_tiny", "transformers.BertModel", build_bert, ATTN),
    Spec("distilbert_tiny", "transformers.DistilBertModel", build_distilbert, ATTN),
    Spec("roberta_tiny", "transformers.RobertaModel", build_roberta, ATTN),
    Spec("albert_tiny", "transformers.AlbertModel", build_albert, ATTN),
    Spec("gpt2_tiny", "transformers.GPT2Model", build_gpt2, ATTN),
    Spec("t5_encoder_tiny", "transformers.T5EncoderModel", build_t5_encoder, ATTN),
    Spec("clip_text_tiny", "transformers.CLIPTextModel", build_clip_text, ATTN),
    Spec("clip_vision_tiny", "transformers.CLIPVisionModel", build_clip_vision, ATTN),
    Spec("whisper_encoder_tiny", "transformers.WhisperModel.get_encoder()", build_whisper_encoder, ATTN),
]

# QDQ: (name, source torchscript folder) quantized with onnxruntime.quantization.quantize_static
QDQ_SPECS = [("resnet_basic_tiny_qdq", "resnet_basic_tiny__torchscript"),
             ("mobilenet_v3_small_tiny_qdq", "mobilenet_v3_small_tiny__torchscript")]


# --- full-size models (--full) ------------------------------------------------------


def build_full_resnet50(_attn) -> Built:
    from torchvision.models import resnet50
    return Built(resnet50(weights=None), ["input"], ["logits"], image_inputs(3, 224, 224),
                 notes=["torchvision.models.resnet50(weights=None)"])


def build_full_efficientnet_b0(_attn) -> Built:
    from torchvision.models import efficientnet_b0
    return Built(efficientnet_b0(weights=None), ["input"], ["logits"], image_inputs(3, 224, 224),
                 notes=["torchvision.models.efficientnet_b0(weights=None)"])


def build_full_vit_b_16(_attn) -> Built:
    from torchvision.models import vit_b_16
    m = vit_b_16(weights=None)
    reset_heads(m.heads.head)
    return Built(m, ["input"], ["logits"], image_inputs(3, 224, 224),
                 notes=["torchvision.models.vit_b_16(weights=None)", HEAD_NOTE.format(what="is all zeros")])


def build_full_bert(attn) -> Built:
    from transformers import BertConfig, BertModel
    cfg = BertConfig(attn_implementation=attn)
    inner = BertModel(cfg)
    names = ["input_ids", "attention_mask"]
    outputs = ["last_hidden_state", "pooler_output"]
    return Built(HFWrap2(inner, names, outputs), names, outputs,
                 text_inputs(names, cfg.vocab_size, 0, seq=128),
                 notes=["transformers BertModel(BertConfig()) (bert-base: 12 layers, hidden 768), seq 128"])


FULL_SPECS: list[Spec] = [
    Spec("resnet50", f"{TV}.resnet50", build_full_resnet50),
    Spec("efficientnet_b0", f"{TV}.efficientnet_b0", build_full_efficientnet_b0),
    Spec("vit_b_16", f"{TV}.vit_b_16", build_full_vit_b_16),
    Spec("bert_base", "transformers.BertModel(BertConfig())", build_full_bert, ATTN),
]


# ---------------------------------------------------------------------------
# export


def first_line(exc: BaseException) -> str:
    """The exception's first line; where it wraps another (torch.onnx's
    ConversionError does), also the first line of the innermost cause."""

    def line(e: BaseException) -> str:
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip().splitlines()
        return f"{type(e).__name__}: {text[0] if text else ''}"

    root, seen = exc, {id(exc)}
    while (nxt := root.__cause__ or root.__context__) is not None and id(nxt) not in seen:
        seen.add(id(nxt))
        root = nxt
    return line(exc) if root is exc else f"{line(exc)} [cause: {line(root)}]"


@contextlib.contextmanager
def quiet(log: io.StringIO):
    """The exporters print a lot (dynamo's progress report, warnings): keep it in a
    log, printed only when --verbose."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            yield


def export_torchscript(built: Built, args: tuple, path: Path) -> None:
    dyn = {n: {0: "batch"} for n in built.input_names + built.output_names} if built.batch_dynamic else None
    torch.onnx.export(built.module, args, str(path), dynamo=False, opset_version=TORCHSCRIPT_OPSET,
                      input_names=built.input_names, output_names=built.output_names,
                      dynamic_axes=dyn)


def export_dynamo(built: Built, args: tuple, path: Path) -> str | None:
    kwargs = {}
    if built.batch_dynamic:
        batch = torch.export.Dim("batch", min=1, max=4096)
        kwargs["dynamic_shapes"] = tuple({0: batch} for _ in args)
    torch.onnx.export(built.module, args, str(path), input_names=built.input_names,
                      output_names=built.output_names, **kwargs)
    if Path(str(path) + ".data").exists():
        return None
    # The exporter inlined the (small) weights: export again asking for external
    # data explicitly, so the corpus has the .data file real-size exports get.
    path.unlink()
    torch.onnx.export(built.module, args, str(path), input_names=built.input_names,
                      output_names=built.output_names, external_data=True, **kwargs)
    return ("the default export inlined the weights (small model); exported again with "
            "external_data=True")


EXPORTERS = {"torchscript": export_torchscript, "dynamo": export_dynamo}


def strip_local_paths(path: Path) -> int:
    """Drops the exporter's debugging metadata that names files of this
    machine (torch.export writes each node's Python stack trace into its
    metadata_props): the corpus is committed, and paths of the machine that
    exported it must not be. Nothing the model computes changes; external
    data stays where the exporter put it. Returns how many entries went."""
    model = onnx.load(str(path), load_external_data=False)
    dropped = 0

    def names_a_path(text: str) -> bool:
        return "/" in text and ("File \"" in text or text.startswith("/"))

    def strip(graph) -> None:
        nonlocal dropped
        for node in graph.node:
            keep = [p for p in node.metadata_props if not names_a_path(p.value)]
            dropped += len(node.metadata_props) - len(keep)
            del node.metadata_props[:]
            node.metadata_props.extend(keep)
            if names_a_path(node.doc_string):
                node.ClearField("doc_string")
                dropped += 1
            for attr in node.attribute:
                if attr.HasField("g"):
                    strip(attr.g)

    strip(model.graph)
    path.write_bytes(model.SerializeToString())
    return dropped


def torch_outputs(module: torch.nn.Module, arrays: list[np.ndarray]) -> list[np.ndarray]:
    with torch.no_grad():
        out = module(*[torch.from_numpy(a) for a in arrays])
    if isinstance(out, torch.Tensor):
        out = (out,)
    return [o.detach().numpy() for o in out]


def ort_session(path: Path) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def write_test_set(folder: Path, idx: int, in_names, arrays, out_names, outputs) -> None:
    d = folder / f"test_data_set_{idx}"
    d.mkdir(parents=True, exist_ok=True)
    for i, (n, a) in enumerate(zip(in_names, arrays)):
        (d / f"input_{i}.pb").write_bytes(numpy_helper.from_array(np.ascontiguousarray(a), n).SerializeToString())
    for i, (n, a) in enumerate(zip(out_names, outputs)):
        (d / f"output_{i}.pb").write_bytes(numpy_helper.from_array(np.ascontiguousarray(a), n).SerializeToString())


# ---------------------------------------------------------------------------
# describing a model


def dim_str(d) -> str | int:
    if d.HasField("dim_value"):
        return d.dim_value
    if d.HasField("dim_param"):
        return d.dim_param
    return "?"


def value_info(v) -> dict:
    t = v.type.tensor_type
    return {"name": v.name, "dtype": onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name,
            "shape": [dim_str(d) for d in t.shape.dim]}


def iter_nodes(graph):
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from iter_nodes(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    yield from iter_nodes(g)


def op_key(node) -> str:
    return f"{node.domain or 'ai.onnx'}::{node.op_type}"


def attr_repr(a) -> str:
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, bytes):
        v = v.decode(errors="replace")
    if isinstance(v, float):
        v = float(f"{v:.6g}")
    if isinstance(v, (list, tuple)):
        if len(v) > 8:
            return f"{a.name}=[{len(v)} values]"
        v = [float(f"{x:.6g}") if isinstance(x, float) else x for x in v]
        return f"{a.name}={list(v)}"
    if isinstance(v, (onnx.TensorProto,)):
        return f"{a.name}=<tensor {onnx.helper.tensor_dtype_to_np_dtype(v.data_type).name}{list(v.dims)}>"
    if isinstance(v, onnx.GraphProto):
        return f"{a.name}=<graph>"
    return f"{a.name}={v}"


def node_signature(node) -> str:
    n_in = sum(1 for i in node.input if i)
    attrs = ", ".join(attr_repr(a) for a in sorted(node.attribute, key=lambda a: a.name)
                      if node.op_type != "Constant" or a.name != "value")
    if node.op_type == "Constant":
        attrs = ", ".join(a.name for a in node.attribute)
    sig = f"inputs={n_in}"
    if len(node.input) != n_in:
        sig += f" (of {len(node.input)} slots)"
    return f"{sig}; {attrs}" if attrs else sig


def describe(model_path: Path) -> dict:
    m = onnx.load(str(model_path), load_external_data=False)
    ext_locations = sorted({e.value for t in m.graph.initializer for e in t.external_data if e.key == "location"})
    n_ext = sum(1 for t in m.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL)
    counts: dict[str, int] = {}
    sigs: dict[str, set[str]] = {}
    for n in iter_nodes(m.graph):
        k = op_key(n)
        counts[k] = counts.get(k, 0) + 1
        sigs.setdefault(k, set()).add(node_signature(n))
    opsets = {(o.domain or "ai.onnx"): o.version for o in m.opset_import}
    # int64 arithmetic: elementwise ops computing on int64 tensors (shape arithmetic)
    int64_arith: dict[str, int] = {}
    try:
        full = onnx.load(str(model_path))
        inferred = onnx.shape_inference.infer_shapes(full)
        types = {v.name: v.type.tensor_type.elem_type for v in
                 list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output)}
        types.update({t.name: t.data_type for t in inferred.graph.initializer})
        for n in inferred.graph.node:
            if n.op_type in {"Add", "Sub", "Mul", "Div", "Mod", "Neg", "Abs", "Min", "Max", "Equal", "Less",
                             "Greater", "LessOrEqual", "GreaterOrEqual", "Where", "CumSum", "Range"}:
                if any(types.get(o) == onnx.TensorProto.INT64 for o in n.output) or \
                        any(types.get(i) == onnx.TensorProto.INT64 for i in n.input if i):
                    int64_arith[n.op_type] = int64_arith.get(n.op_type, 0) + 1
    except Exception as exc:  # shape inference is best effort
        int64_arith = {"error": first_line(exc)}
    return {
        "ir_version": m.ir_version,
        "opset": opsets.get("ai.onnx"),
        "opset_imports": opsets,
        "producer": f"{m.producer_name} {m.producer_version}".strip(),
        "external_data": bool(ext_locations),
        "external_data_files": ext_locations,
        "external_initializers": n_ext,
        "initializers": len(m.graph.initializer),
        "nodes": sum(counts.values()),
        "op_types": sorted(counts),
        "op_counts": dict(sorted(counts.items())),
        "op_signatures": {k: sorted(v) for k, v in sorted(sigs.items())},
        "int64_arith_nodes": dict(sorted(int64_arith.items())) if isinstance(int64_arith, dict) else int64_arith,
        "inputs": [value_info(v) for v in m.graph.input],
        "outputs": [value_info(v) for v in m.graph.output],
        "control_flow": sorted({n.op_type for n in iter_nodes(m.graph) if n.op_type in ("If", "Loop", "Scan")}),
    }


def folder_bytes(folder: Path) -> tuple[int, int]:
    model = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return model, total


# ---------------------------------------------------------------------------
# driving


def run_reference(folder: Path, built: Built, spec_name: str, entry: dict) -> None:
    """ONNX Runtime outputs on seeded inputs, batch 1 and (dynamic batch) 4."""
    sess = ort_session(folder / "model.onnx")
    sess_in = [i.name for i in sess.get_inputs()]
    sess_out = [o.name for o in sess.get_outputs()]
    entry["test_sets"] = []
    batches = TEST_BATCHES if entry["batch_dynamic"] else (1,)
    for idx, batch in enumerate(batches):
        rng = np.random.default_rng(seed_of(spec_name) + batch)
        arrays = built.make_inputs(batch, rng)
        try:
            outs = sess.run(sess_out, dict(zip(sess_in, arrays)))
        except Exception as exc:
            entry.setdefault("reference_failures", []).append(f"batch {batch}: {first_line(exc)}")
            continue
        ref = torch_outputs(built.module, arrays)
        diffs = [float(np.max(np.abs(o.astype(np.float64) - r.astype(np.float64)))) if o.size else 0.0
                 for o, r in zip(outs, ref)]
        scale = [float(np.max(np.abs(r))) if r.size else 0.0 for r in ref]
        write_test_set(folder, idx, sess_in, arrays, sess_out, outs)
        ts = {"folder": f"test_data_set_{idx}", "batch": batch,
              "max_abs_diff_ort_vs_torch": diffs, "max_abs_torch_output": scale}
        if "attention_mask" in built.input_names:
            # Padded positions attend to nothing (GPT-2's left padding: every key masked),
            # where exporters and torch may legitimately differ: the diff on real tokens.
            mask = arrays[built.input_names.index("attention_mask")].astype(bool)
            ts["max_abs_diff_ort_vs_torch_unpadded"] = [
                float(np.max(np.abs(o - r)[mask])) if o.ndim == 3 and o.shape[:2] == mask.shape else d
                for o, r, d in zip(outs, ref, diffs)]
            note = ("ONNX Runtime and torch differ at padded positions only (max_abs_diff_ort_vs_torch vs "
                    "max_abs_diff_ort_vs_torch_unpadded): query positions whose every key is masked, "
                    "which the exported graph and torch evaluate differently; the reference there is ORT's")
            if any(d > 1e-4 * max(sc, 1e-6) and u <= 1e-4 * max(sc, 1e-6) for d, u, sc in
                   zip(diffs, ts["max_abs_diff_ort_vs_torch_unpadded"], scale)) and note not in entry["notes"]:
                entry["notes"].append(note)
        entry["test_sets"].append(ts)


def export_one(spec: Spec, exporter: str, out_root: Path, manifest: dict, verbose: bool) -> None:
    folder_name = f"{spec.name}__{exporter}"
    folder = out_root / folder_name
    failures: list[str] = []
    entry = None
    for attn in spec.attn_impls:
        for dynamic in (True, False):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            torch.manual_seed(seed_of(spec.name))
            what = f"attn_implementation={attn}, " if attn else ""
            what += "dynamic batch" if dynamic else "static batch 1"
            try:
                built = spec.build(attn)
            except Exception as exc:
                failures.append(f"{what}: building the model: {first_line(exc)}")
                if verbose:
                    traceback.print_exc()
                continue
            built.module.eval()
            gen = torch.Generator().manual_seed(seed_of(spec.name) + 1)
            randomize_batchnorm(built.module, gen)
            built.batch_dynamic = dynamic
            example_batch = EXPORT_BATCH if dynamic else 1
            args = tuple(torch.from_numpy(a) for a in
                         built.make_inputs(example_batch, np.random.default_rng(seed_of(spec.name))))
            log = io.StringIO()
            t0 = time.time()
            try:
                # No torch.no_grad() here, as in torch's export examples: under no_grad
                # nn.MultiheadAttention takes its fast path (torchvision's ViT), which
                # the torchscript exporter cannot export (aten::_native_multi_head_attention).
                with quiet(log):
                    export_note = EXPORTERS[exporter](built, args, folder / "model.onnx")
                strip_local_paths(folder / "model.onnx")
            except Exception as exc:
                failures.append(f"{what}: {first_line(exc)}")
                if verbose:
                    print(log.getvalue(), file=sys.stderr)
                    traceback.print_exc()
                continue
            finally:
                if verbose and log.getvalue():
                    print(log.getvalue()[-4000:], file=sys.stderr)
            seconds = time.time() - t0
            entry = {"source": spec.source, "exporter": exporter, "kind": spec.kind,
                     "torch": torch.__version__, "export_seconds": round(seconds, 2),
                     "attn_implementation": attn, "batch_dynamic": dynamic,
                     "export_call": ("torch.onnx.export(dynamo=False, opset_version=17, dynamic_axes batch)"
                                     if exporter == "torchscript" else
                                     "torch.onnx.export(model, args, path, dynamic_shapes batch Dim)"),
                     "notes": list(built.notes)}
            if export_note:
                entry["notes"].append(export_note)
            entry.update(describe(folder / "model.onnx"))
            try:
                run_reference(folder, built, spec.name, entry)
            except Exception as exc:
                entry.setdefault("reference_failures", []).append(first_line(exc))
            break
        if entry is not None:
            break
    if entry is None:
        shutil.rmtree(folder, ignore_errors=True)
        manifest["export_failures"][folder_name] = failures
        print(f"  {folder_name}: FAILED {failures}", flush=True)
        return
    if failures:
        entry["export_failures"] = failures
        manifest["export_failures"][folder_name] = failures
    entry["bytes_model_files"], entry["bytes_total"] = folder_bytes(folder)
    manifest["models"][folder_name] = entry
    print(f"  {folder_name}: opset {entry['opset']} ext={entry['external_data']} "
          f"{entry['bytes_model_files'] / 1024:.0f} KiB, {entry['nodes']} nodes, {entry['export_seconds']}s"
          + (f", earlier failures: {failures}" if failures else "")
          + (f", REFERENCE FAILURES {entry['reference_failures']}" if entry.get("reference_failures") else ""),
          flush=True)


class RandomCalibration:
    """quantize_static's CalibrationDataReader: seeded random images."""

    def __init__(self, input_name: str, shape: tuple[int, ...], count: int, seed: int):
        rng = np.random.default_rng(seed)
        self.batches = [{input_name: rng.standard_normal(shape, dtype=np.float32)} for _ in range(count)]
        self.it = iter(self.batches)

    def get_next(self):
        return next(self.it, None)

    def rewind(self):
        self.it = iter(self.batches)


def quantize_one(name: str, src_folder: str, out_root: Path, manifest: dict, specs_by_name: dict) -> None:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    folder_name = f"{name}__torchscript"
    src = out_root / src_folder
    if src_folder not in manifest["models"]:
        manifest["export_failures"][folder_name] = [f"source {src_folder} was not exported"]
        return
    spec = specs_by_name[src_folder.split("__")[0]]
    folder = out_root / folder_name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    src_entry = manifest["models"][src_folder]
    inp = src_entry["inputs"][0]
    shape = tuple(1 if isinstance(d, str) else d for d in inp["shape"])
    t0 = time.time()
    try:
        log = io.StringIO()
        with quiet(log):
            quantize_static(str(src / "model.onnx"), str(folder / "model.onnx"),
                            RandomCalibration(inp["name"], shape, 8, seed_of(name)),
                            quant_format=QuantFormat.QDQ, per_channel=True,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    except Exception as exc:
        shutil.rmtree(folder, ignore_errors=True)
        manifest["export_failures"][folder_name] = [first_line(exc)]
        print(f"  {folder_name}: FAILED {first_line(exc)}", flush=True)
        return
    torch.manual_seed(seed_of(spec.name))
    built = spec.build(None)
    built.module.eval()
    randomize_batchnorm(built.module, torch.Generator().manual_seed(seed_of(spec.name) + 1))
    entry = {"source": f"{spec.source}, quantized", "exporter": "torchscript", "kind": "qdq",
             "torch": torch.__version__, "export_seconds": round(time.time() - t0, 2),
             "attn_implementation": None, "batch_dynamic": True,
             "export_call": (f"onnxruntime.quantization.quantize_static({src_folder}/model.onnx, QDQ, "
                             "per_channel=True, activations QUInt8, weights QInt8, 8 seeded random "
                             "calibration images)"),
             "notes": list(built.notes) + [
                 "max_abs_diff_ort_vs_torch compares the quantized model to the float torch model"]}
    entry.update(describe(folder / "model.onnx"))
    run_reference(folder, built, spec.name, entry)
    entry["bytes_model_files"], entry["bytes_total"] = folder_bytes(folder)
    manifest["models"][folder_name] = entry
    print(f"  {folder_name}: opset {entry['opset']} {entry['bytes_model_files'] / 1024:.0f} KiB, "
          f"{entry['nodes']} nodes", flush=True)


def op_summary(models: dict) -> dict:
    summary: dict[str, dict] = {}
    for folder, e in models.items():
        for op, sigs in e["op_signatures"].items():
            s = summary.setdefault(op, {"models": [], "signatures": set(), "opsets": set()})
            s["models"].append(folder)
            s["signatures"].update(sigs)
            s["opsets"].add(e["opset"])
    return {op: {"models": sorted(s["models"]), "opsets": sorted(s["opsets"]),
                 "signatures": sorted(s["signatures"])} for op, s in sorted(summary.items())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help=f"output folder (default {DEFAULT_OUT}; required with --full)")
    ap.add_argument("--full", action="store_true", help="full-size models, default exporter only")
    ap.add_argument("--only", default="", help="comma-separated model names (keeps other manifest entries)")
    ap.add_argument("--exporters", default="torchscript,dynamo")
    ap.add_argument("--verbose", action="store_true", help="print the exporters' logs and tracebacks")
    ap.add_argument("--strip-paths", action="store_true",
                    help="only drop machine paths from the models already in --out")
    ns = ap.parse_args()
    if ns.strip_paths:
        for path in sorted((ns.out or DEFAULT_OUT).glob("*/model.onnx")):
            print(f"{path.parent.name}: {strip_local_paths(path)} entries dropped")
        return 0
    if ns.full and ns.out is None:
        ap.error("--full needs --out (full-size models are not committed)")
    out_root: Path = (ns.out or DEFAULT_OUT).resolve()
    out_root.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))

    specs = FULL_SPECS if ns.full else SPECS
    exporters = ["dynamo"] if ns.full else [e for e in ns.exporters.split(",") if e]
    only = {s for s in ns.only.split(",") if s}
    manifest_path = out_root / "manifest.json"
    manifest = {"models": {}, "export_failures": {}}
    if only and manifest_path.exists():
        old = json.loads(manifest_path.read_text())
        manifest["models"] = {k: v for k, v in old.get("models", {}).items() if k.split("__")[0] not in only}
        manifest["export_failures"] = {k: v for k, v in old.get("export_failures", {}).items()
                                       if k.split("__")[0] not in only}

    t_start = time.time()
    print(f"torch {torch.__version__}, onnx {onnx.__version__}, onnxruntime {ort.__version__}; out {out_root}",
          flush=True)
    for spec in specs:
        if only and spec.name not in only:
            continue
        print(spec.name, flush=True)
        for exporter in exporters:
            export_one(spec, exporter, out_root, manifest, ns.verbose)
    if not ns.full and "torchscript" in exporters:
        by_name = {s.name: s for s in SPECS}
        for name, src in QDQ_SPECS:
            if only and name not in only and src.split("__")[0] not in only:
                continue
            print(name, flush=True)
            quantize_one(name, src, out_root, manifest, by_name)

    import onnxscript
    import torchvision
    import transformers
    manifest["generated_by"] = "tests/models/export_real.py" + (" --full" if ns.full else "")
    manifest["versions"] = {"torch": torch.__version__, "torchvision": torchvision.__version__,
                            "transformers": transformers.__version__, "onnx": onnx.__version__,
                            "onnxscript": onnxscript.__version__, "onnxruntime": ort.__version__,
                            "numpy": np.__version__}
    manifest["reference"] = ("onnxruntime CPUExecutionProvider, ORT_DISABLE_ALL, 1 thread; inputs from "
                             "numpy default_rng(crc32(model name) + batch); test_data_set_0 batch 1, "
                             "test_data_set_1 batch 4 (dynamic batch only)")
    manifest["models"] = dict(sorted(manifest["models"].items()))
    manifest["export_failures"] = dict(sorted(manifest["export_failures"].items()))
    manifest["op_summary"] = op_summary(manifest["models"])
    manifest["op_union"] = sorted(manifest["op_summary"])
    manifest["total_bytes"] = sum(e["bytes_total"] for e in manifest["models"].values())
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n")
    print(f"{len(manifest['models'])} models, {len(manifest['export_failures'])} with export failures, "
          f"{manifest['total_bytes'] / 1e6:.1f} MB, {time.time() - t_start:.0f}s; {manifest_path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

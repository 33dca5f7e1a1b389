"""Tiny checkers built in the tests (nothing downloaded): a word-level tokenizer, an ONNX graph built node by
node whose logits follow marker words, and random-weight transformers classifiers saved with save_pretrained.

The ONNX checker averages the embeddings of a pair's tokens and reads three logits from them: the word
``agrees`` pushes entailment, ``denies`` contradiction, every other word leans a little to neutral. So a test
can place the word that decides in one chunk of a long source and see that chunk chosen.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

WORDS = (
    "the sky is blue grass green sun hot water wet snow cold fire ice city river bank bridge tower park "
    "agrees denies paris rome has a an of and in on . , was were big small old new claim"
).split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
VOCAB = {w: i for i, w in enumerate([*SPECIALS, *WORDS])}
MNLI = {0: "entailment", 1: "neutral", 2: "contradiction"}


def word_tokenizer():  # type: ignore[no-untyped-def]
    """A WordLevel tokenizer over ``VOCAB`` with BERT's pair template."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tok = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", VOCAB["[CLS]"]), ("[SEP]", VOCAB["[SEP]"])],
    )
    return tok


def marker_embeddings(outputs: int) -> np.ndarray:
    """Token embeddings in logit space: ``agrees`` -> entailment, ``denies`` -> contradiction (or not entailed)."""
    emb = np.zeros((len(VOCAB), outputs), dtype=np.float32)
    neutral = 1 if outputs == 3 else 0
    emb[:, neutral] = 0.2
    entail = 0 if outputs == 3 else 1
    emb[VOCAB["agrees"], entail] = 40.0
    if outputs == 3:
        emb[VOCAB["denies"], 2] = 40.0
    else:
        emb[VOCAB["denies"], 0] = 40.0
    return emb


def build_onnx(
    folder: Path,
    *,
    outputs: int = 3,
    id2label: dict[int, str] | None = MNLI,
    window: int = 24,
    token_types: bool = False,
) -> Path:
    """A checker folder: model.onnx (mean of token embeddings -> logits), tokenizer.json, config.json."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    folder.mkdir(parents=True, exist_ok=True)
    emb = marker_embeddings(outputs)
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["vectors"]),  # [B, T, K]
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["maskf", "axis2"], ["mask3"]),
        helper.make_node("Mul", ["vectors", "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axis1"], ["summed"], keepdims=0),  # [B, K]
        helper.make_node("ReduceSum", ["maskf", "axis1"], ["count"], keepdims=1),  # [B, 1]
        helper.make_node("Div", ["summed", "count"], ["logits"]),
    ]
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
    ]
    if token_types:  # taken and ignored, as BERT exports have it
        inputs.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "tokens"]))
    graph = helper.make_graph(
        nodes,
        "tiny_checker",
        inputs,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", outputs])],
        initializer=[
            numpy_helper.from_array(emb, "emb"),
            numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
            numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(folder / "model.onnx"))
    word_tokenizer().save(str(folder / "tokenizer.json"))
    config: dict[str, object] = {"max_position_embeddings": window, "model_type": "bert"}
    if id2label is not None:
        config["id2label"] = {str(k): v for k, v in id2label.items()}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def save_hf_tokenizer(folder: Path, max_length: int) -> None:
    """The word tokenizer as a transformers fast tokenizer, saved with save_pretrained."""
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(
        tokenizer_object=word_tokenizer(),
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        model_max_length=max_length,
    )
    fast.save_pretrained(str(folder))


def build_hf(folder: Path, kind: str = "bert", *, id2label: dict[int, str] | None = None, head: bool = True) -> Path:
    """A random-weight classifier saved with save_pretrained: ``bert`` (BERT-style) or ``deberta`` (DeBERTa-v2)."""
    import torch
    import transformers

    torch.manual_seed(0)
    labels = id2label or MNLI
    common = {
        "vocab_size": len(VOCAB),
        "hidden_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 32,
        "max_position_embeddings": 40,
        "pad_token_id": 0,
        "id2label": labels,
        "label2id": {v: k for k, v in labels.items()},
    }
    if kind == "bert":
        config = transformers.BertConfig(**common)
        cls = transformers.BertForSequenceClassification if head else transformers.BertModel
    else:
        config = transformers.DebertaV2Config(**common, pooler_hidden_size=16, type_vocab_size=0)
        cls = transformers.DebertaV2ForSequenceClassification if head else transformers.DebertaV2Model
    cls(config).eval().save_pretrained(str(folder))
    save_hf_tokenizer(folder, 40)
    return folder

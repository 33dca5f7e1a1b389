"""The reading code of LettuceDetect and RAGTruth, copied unchanged but for what is cut (noted), so that the
tests run it on our exports. Neither package installs here without torch and model downloads.

- LettuceDetect (github.com/KRLabsOrg/LettuceDetect, MIT License, Copyright (c) 2025 KR Labs), commit
  102f7f2: ``lettucedetect/datasets/hallucination_dataset.py`` (``HallucinationSample``, ``HallucinationData``;
  cut: the torch ``Dataset`` below them and docstrings), ``scripts/evaluate.py`` (``load_data``) and
  ``lettucedetect/preprocess/preprocess_ragtruth.py`` (``load_data``, ``create_sample``, ``main``; cut: the
  argument parser).
- RAGTruth (github.com/ParticleMedia/RAGTruth, MIT License, Copyright (c) 2023 Particle Media):
  ``baseline/prepare_dataset.py`` (``get_json_data``, ``read_ragtruth_split``; cut: ``get_data``, which
  reads the fixed ``../dataset`` folder and samples a dev split, and the ``print``).
"""
# ruff: noqa
# mypy: ignore-errors

import json
from dataclasses import dataclass, field
from os import path
from pathlib import Path
from typing import Literal

import pandas as pd


# --- LettuceDetect: lettucedetect/datasets/hallucination_dataset.py -----------------------------------------
@dataclass
class HallucinationSample:
    prompt: str
    answer: str
    labels: list[dict]
    split: Literal["train", "dev", "test"]
    task_type: str
    dataset: str
    language: Literal["en", "de", "fr", "es", "it", "pl", "cn", "hu"]
    # v2 fields (optional for backwards compatibility)
    context_modality: Literal["prose", "code", "markdown"] = "prose"
    category: str | None = None
    subcategory: str | None = None
    context: str | None = None
    question: str | None = None
    metadata: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "prompt": self.prompt,
            "answer": self.answer,
            "labels": self.labels,
            "split": self.split,
            "task_type": self.task_type,
            "dataset": self.dataset,
            "language": self.language,
            "context_modality": self.context_modality,
            "category": self.category,
            "subcategory": self.subcategory,
            "context": self.context,
            "question": self.question,
            "metadata": self.metadata,
        }

    @classmethod
    def from_json(cls, json_dict: dict) -> "HallucinationSample":
        return cls(
            prompt=json_dict["prompt"],
            answer=json_dict["answer"],
            labels=json_dict["labels"],
            split=json_dict["split"],
            task_type=json_dict["task_type"],
            dataset=json_dict.get("dataset", "unknown"),
            language=json_dict.get("language", "en"),
            context_modality=json_dict.get("context_modality", "prose"),
            category=json_dict.get("category"),
            subcategory=json_dict.get("subcategory"),
            context=json_dict.get("context"),
            question=json_dict.get("question"),
            metadata=json_dict.get("metadata", {}),
        )


@dataclass
class HallucinationData:
    samples: list[HallucinationSample]

    def to_json(self) -> list[dict]:
        return [sample.to_json() for sample in self.samples]

    @classmethod
    def from_json(cls, json_dict: list[dict]) -> "HallucinationData":
        return cls(
            samples=[HallucinationSample.from_json(sample) for sample in json_dict],
        )


# --- LettuceDetect: scripts/evaluate.py ---------------------------------------------------------------------
def load_data(data_path):
    data_path = Path(data_path)
    hallucination_data = HallucinationData.from_json(json.loads(data_path.read_text()))

    # Filter test samples from the data
    test_samples = [sample for sample in hallucination_data.samples if sample.split == "test"]

    # group samples by task type
    task_type_map = {}
    for sample in test_samples:
        if sample.task_type not in task_type_map:
            task_type_map[sample.task_type] = []
        task_type_map[sample.task_type].append(sample)
    return test_samples, task_type_map


# --- LettuceDetect: lettucedetect/preprocess/preprocess_ragtruth.py (load_data renamed load_ragtruth_data) ----
def load_ragtruth_data(input_dir: Path) -> tuple[list[dict], list[dict]]:
    responses = [json.loads(line) for line in (input_dir / "response.jsonl").read_text().splitlines()]
    sources = [json.loads(line) for line in (input_dir / "source_info.jsonl").read_text().splitlines()]

    return responses, sources


def create_sample(response: dict, source: dict) -> HallucinationSample:
    prompt = source["prompt"]

    answer = response["response"]
    split = response["split"]
    task_type = source["task_type"]
    labels = []

    for label in response["labels"]:
        start_char = label["start"]
        end_char = label["end"]
        labels.append(
            {
                "start": start_char,
                "end": end_char,
                "label": label["label_type"],
            }
        )

    return HallucinationSample(prompt, answer, labels, split, task_type, "ragtruth", "en")


def preprocess_ragtruth(input_dir: Path, output_dir: Path):
    input_dir = Path(input_dir)
    output_dir = Path(output_dir)

    responses, sources = load_ragtruth_data(input_dir)
    sources_by_id = {source["source_id"]: source for source in sources}

    hallucination_data = HallucinationData(samples=[])

    for response in responses:
        sample = create_sample(response, sources_by_id[response["source_id"]])
        hallucination_data.samples.append(sample)

    (output_dir / "ragtruth_data.json").write_text(json.dumps(hallucination_data.to_json(), indent=4))


# --- RAGTruth: baseline/prepare_dataset.py ------------------------------------------------------------------
def get_json_data(data):
    to_save = []
    for idx, row in data.iterrows():
        d = row.to_dict()
        d.pop("prompt")
        d["type"] = "response"
        label = sorted(d["labels"], key=lambda x: x["start"])
        format_label = {"baseless info": [], "conflict": []}
        for l in label:
            if l["label_type"].lower().find("baseless") >= 0:
                format_label["baseless info"].append(l["text"])
            else:
                format_label["conflict"].append(l["text"])
        d["format_label"] = format_label
        if row["task_type"] == "QA":
            d["reference"] = row["source_info"]["passages"]
            d["question"] = row["source_info"]["question"]
        elif row["task_type"] == "Summary":
            d["reference"] = row["source_info"]
        else:
            d["reference"] = f"{row['source_info']}"
        to_save.append(d)
    return to_save


def read_ragtruth_split(ragtruth_dir, split):
    resp = pd.read_json(path.join(ragtruth_dir, "response.jsonl"), lines=True)
    test = resp[(resp["split"] == split) & (resp["quality"] == "good")]
    oc = pd.read_json(path.join(ragtruth_dir, "source_info.jsonl"), lines=True)
    test = test.merge(oc, on="source_id")
    return test

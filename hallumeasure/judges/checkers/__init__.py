"""Checkers the user brings: trained entailment models and generative fact-checkers as claim judges.

- ``hf:<path or hub id>`` (hf.py): a sequence-classification model through ``transformers`` (MiniCheck's
  RoBERTa / DeBERTa / Flan-T5 checkers, HHEM with ``?trust_remote_code=true``, any NLI cross-encoder);
  extra ``hf``.
- ``onnx:<folder>`` (onnx.py): a model exported to ONNX with its ``tokenizer.json``, run by onnxruntime (no
  torch); extra ``onnx``.
- ``minicheck:<provider:model>`` (minicheck.py): a generative checker such as Bespoke-MiniCheck-7B served
  behind an OpenAI-compatible server, asked the MiniCheck question (``Document: ... Claim: ...``).

What the two trained families share lives here once: the model's labels read from its config
(heads.py), the source cut to the model's own window in overlapping chunks (chunks.py), the
threshold and unsure band calibrated on labelled data and passed in the spec (calibration.py), and the
judge that turns entailment probabilities into verdicts (judge.py). No weights ship and none are
downloaded by hallumeasure's tests; hallumeasure has not measured these models (docs/checkers.md).
"""

"""A small trained entailment model (all-MiniLM-L6-v2 fine-tuned on NLI pairs), run as int8 ONNX on CPU.

``--judge nli`` (judge.py), the cascade's first pass (``--first-pass nli``) and CoNLI's sentence
NLI (``--detector conli --judge nli``), and the offline judge's assistant where its own signals are unsure
(``--judge offline+nli``, assist.py). Needs the optional extra: ``pip install 'hallumeasure[nli]'`` (onnxruntime
and tokenizers; the weights ship in ``weights/``). Trained by scripts/train_nli.py, exported by
scripts/export_nli.py; measured in benchmarks/results/nli_quality.md.
"""

#: The spec of the NLI judge (registered in ``hallumeasure.registry.builtin``, like every judge).
NLI = "nli"
#: The offline judge, asking the entailment model where its own signals are unsure (assist.py).
OFFLINE_NLI = "offline+nli"

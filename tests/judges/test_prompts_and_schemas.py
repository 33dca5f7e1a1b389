"""Prompt files match prompts.lock and follow the format; schemas/ matches the pydantic models."""

import json

import pytest

from hallumeasure.core.errors import PromptError
from hallumeasure.core.text import RESERVED_TAGS
from hallumeasure.judges.llm import prompts
from hallumeasure.report import schemas

EXPECTED = {
    "extract": {"question_block", "response_block"},
    "classify_cot_one": {"question_block", "context_block", "claim_block"},
    "classify_nocot_one": {"question_block", "context_block", "claim_block"},
    "classify_cot_all": {"question_block", "context_block", "claims_block"},
    "classify_nocot_all": {"question_block", "context_block", "claims_block"},
    "rewrite": {"question_block", "context_block", "response_block", "issues_block"},
    "conli_sentence": {"context_block", "hypothesis_block", "focus_block"},
    "cascade_explain": {"question_block", "context_block", "claim_block", "flag_block"},
}


def test_every_prompt_matches_the_lock():
    lock = json.loads(prompts.LOCK_FILE.read_text())
    files = {p.key: p.sha256 for p in prompts.all_prompts()}
    assert files == lock, "run 'python -m hallumeasure.judges.llm.prompts' after a deliberate prompt change"


@pytest.mark.parametrize("prompt_id", sorted(EXPECTED))
def test_prompt_placeholders_and_cache_split(prompt_id):
    prompt = prompts.load_prompt(prompt_id)
    assert EXPECTED[prompt_id] <= prompt.placeholders
    if prompt_id.startswith(("classify", "conli", "cascade")):
        assert "{{context_block}}" in prompt.user_prefix and "{{context_block}}" not in prompt.user_suffix
        assert "claim" in prompt.user_suffix or "hypothesis" in prompt.user_suffix
    if prompt_id.startswith("classify"):
        assert "{{label_definitions}}" in prompt.system
    assert "data" in prompt.system.lower()  # the prompt says delimited text is data, not instructions


def test_render_fills_every_placeholder_once():
    prompt = prompts.load_prompt("classify_cot_one")
    system, message = prompt.render(
        question_block="",
        context_block="<context>\n{{claim_block}}\n</context>",
        claim_block='<claim id="c0">\nX\n</claim>',
    )
    text = system + message.text
    assert "{{" not in text.replace("{{claim_block}}", "")
    assert "{{claim_block}}" in message.content[0].text  # inserted text is never re-expanded
    assert "contradicted" in system and "false_concatenation" in system


@pytest.mark.parametrize(
    ("prompt_id", "words"),
    [
        ("extract", "in the language of the response"),
        ("classify_cot_one", "label_reason and subtype_reason in the language of the claim"),
        ("classify_cot_all", "label_reason and subtype_reason in the language of the claim"),
    ],
)
def test_llm_prompts_keep_the_response_language(prompt_id, words):
    """Claims and reasons stay in the response's language (issue #34 item 3); quotes stay as the source has them."""
    assert words in prompts.load_prompt(prompt_id).system


def test_render_refuses_missing_values():
    with pytest.raises(PromptError, match="needs values"):
        prompts.load_prompt("extract").render(question_block="")


def test_a_changed_prompt_is_refused(tmp_path, monkeypatch):
    src = prompts.PROMPT_DIR / "extract.v1.md"
    (tmp_path / "extract.v1.md").write_text(src.read_text() + "\nchanged\n")
    (tmp_path / "prompts.lock").write_text(prompts.LOCK_FILE.read_text())
    monkeypatch.setattr(prompts, "PROMPT_DIR", tmp_path)
    monkeypatch.setattr(prompts, "LOCK_FILE", tmp_path / "prompts.lock")
    prompts.load_prompt.cache_clear()
    try:
        with pytest.raises(PromptError, match=r"does not match prompts\.lock"):
            prompts.load_prompt("extract")
    finally:
        prompts.load_prompt.cache_clear()


def test_reserved_tags_cover_the_prompt_blocks():
    assert {"context", "question", "response", "claim", "claims"} <= set(RESERVED_TAGS)


@pytest.mark.parametrize("name", sorted(schemas.MODELS))
def test_schemas_are_current(name):
    path = schemas.SCHEMA_DIR / f"{name}.schema.json"
    assert path.exists(), "run 'python -m hallumeasure.report.schemas'"
    assert path.read_text() == schemas.render(schemas.MODELS[name]), "run 'python -m hallumeasure.report.schemas'"


def test_the_classify_prompts_can_leave_their_worked_examples_out():
    """A judge in a small window leaves the examples out (judges/llm/classify.py); the full text is the file's."""
    for prompt_id in ("classify_cot_one", "classify_cot_all", "classify_nocot_one", "classify_nocot_all"):
        prompt = prompts.load_prompt(prompt_id)
        values = {"question_block": "", "context_block": "", "claim_block": "", "claims_block": ""}
        full, _ = prompt.render(**values)
        short, _ = prompt.render(examples=False, **values)
        assert prompts.EXAMPLES_MARKER not in full and "Example" in full
        assert "Example" not in short and full.startswith(short.rstrip("\n")) and len(short) < len(full)

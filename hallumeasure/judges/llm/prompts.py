"""Prompt files: load, check against the lock file of hashes, render into a request.

A prompt file is ``<id>.v<N>.md`` with a ``## system`` part and a ``## user`` template.
Placeholders are ``{{name}}``. A line ``<!-- cache -->`` in the user template ends the
part that is shared by every call for one response (instructions and context), so it can
be cached by the provider; the rest (the claim) follows it. A line ``<!-- examples -->`` in the
system part starts its worked examples, which a judge whose model's window is too small for them
leaves out (``render(examples=False)``); with them, the text is the file's without that line.

Run ``python -m hallumeasure.judges.llm.prompts`` after a deliberate prompt change to rewrite the lock
file (and bump the version in the file name when the change alters answers).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from hallumeasure.core.errors import PromptError
from hallumeasure.core.labels import LABEL_DEFINITIONS, SUBTYPE_DEFINITIONS
from hallumeasure.models.base import Message, TextBlock

PROMPT_DIR = Path(__file__).parent / "templates"
LOCK_FILE = PROMPT_DIR / "prompts.lock"
CACHE_MARKER = "<!-- cache -->"
EXAMPLES_MARKER = "<!-- examples -->"
_NAME_RE = re.compile(r"^(?P<id>[a-z_]+)\.v(?P<version>\d+)\.md$")
_PLACEHOLDER_RE = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")

#: Filled in for every prompt that asks for them.
STANDARD_VALUES = {
    "label_definitions": "\n".join(f"- {label.value}: {text}" for label, text in LABEL_DEFINITIONS.items()),
    "subtype_definitions": "\n".join(f"- {sub.value}: {text}" for sub, text in SUBTYPE_DEFINITIONS.items()),
}


@dataclass(frozen=True)
class Prompt:
    id: str
    version: int
    system: str
    user_prefix: str
    user_suffix: str
    sha256: str
    #: The system part without its worked examples; None when the file marks none.
    system_without_examples: str | None = None

    @property
    def key(self) -> str:
        return f"{self.id}.v{self.version}"

    @property
    def placeholders(self) -> set[str]:
        return set(_PLACEHOLDER_RE.findall(self.system + self.user_prefix + self.user_suffix))

    def render(self, *, examples: bool = True, **values: str) -> tuple[str, Message]:
        """The system text and the user message; the message's first block is cacheable when split.

        ``examples=False`` leaves the system part's worked examples out, where the file marks them."""
        values = {**STANDARD_VALUES, **values}
        missing = self.placeholders - values.keys()
        if missing:
            raise PromptError(f"prompt {self.key} needs values for {sorted(missing)}")
        shown = self.system if examples or self.system_without_examples is None else self.system_without_examples
        system = _fill(shown, values)
        prefix = _fill(self.user_prefix, values)
        suffix = _fill(self.user_suffix, values)
        if suffix.strip():
            return system, Message.user(TextBlock(text=prefix, cache_after=True), TextBlock(text=suffix))
        return system, Message.user(prefix)


def _fill(template: str, values: dict[str, str]) -> str:
    # One pass, so that text inserted for one placeholder is never scanned for another.
    return _PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], template).strip("\n") + "\n"


def _parse(path: Path) -> Prompt:
    match = _NAME_RE.match(path.name)
    if not match:
        raise PromptError(f"{path.name}: prompt files are named <id>.v<N>.md")
    raw = path.read_bytes()
    text = raw.decode("utf-8")
    lines = text.splitlines()
    try:
        system_at = lines.index("## system")
        user_at = lines.index("## user")
    except ValueError as exc:
        raise PromptError(f"{path.name}: needs one '## system' and one '## user' line") from exc
    if user_at < system_at:
        raise PromptError(f"{path.name}: '## system' must come before '## user'")
    system_lines = lines[system_at + 1 : user_at]
    without_examples = None
    if EXAMPLES_MARKER in (line.strip() for line in system_lines):
        cut = [line.strip() for line in system_lines].index(EXAMPLES_MARKER)
        without_examples = "\n".join(system_lines[:cut]).strip()
        system_lines = system_lines[:cut] + system_lines[cut + 1 :]
    system = "\n".join(system_lines).strip()
    user_lines = lines[user_at + 1 :]
    if CACHE_MARKER in (line.strip() for line in user_lines):
        cut = [line.strip() for line in user_lines].index(CACHE_MARKER)
        prefix, suffix = "\n".join(user_lines[:cut]), "\n".join(user_lines[cut + 1 :])
    else:
        prefix, suffix = "\n".join(user_lines), ""
    return Prompt(
        id=match["id"],
        version=int(match["version"]),
        system=system,
        user_prefix=prefix.strip("\n"),
        user_suffix=suffix.strip("\n"),
        sha256=hashlib.sha256(raw).hexdigest(),
        system_without_examples=without_examples,
    )


def _read_lock() -> dict[str, str]:
    if not LOCK_FILE.exists():
        return {}
    lock: dict[str, str] = json.loads(LOCK_FILE.read_text(encoding="utf-8"))
    return lock


@cache
def load_prompt(prompt_id: str, version: int | None = None) -> Prompt:
    """The prompt ``prompt_id`` (newest version unless ``version``), verified against prompts.lock."""
    versions = sorted(
        (int(m["version"]), p)
        for p in PROMPT_DIR.glob(f"{prompt_id}.v*.md")
        if (m := _NAME_RE.match(p.name)) and m["id"] == prompt_id
    )
    if version is not None:
        versions = [(v, p) for v, p in versions if v == version]
    if not versions:
        raise PromptError(f"no prompt file {prompt_id}.v{version or '<N>'}.md in {PROMPT_DIR}")
    prompt = _parse(versions[-1][1])
    locked = _read_lock().get(prompt.key)
    if locked != prompt.sha256:
        raise PromptError(
            f"prompt {prompt.key} does not match prompts.lock (locked {locked}, file {prompt.sha256}). "
            "If the change is deliberate, bump the version when it changes answers and run "
            "'python -m hallumeasure.judges.llm.prompts' to update the lock."
        )
    return prompt


def all_prompts() -> list[Prompt]:
    return [_parse(p) for p in sorted(PROMPT_DIR.glob("*.md"))]


def write_lock() -> dict[str, str]:
    lock = {p.key: p.sha256 for p in all_prompts()}
    LOCK_FILE.write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    load_prompt.cache_clear()
    return lock


if __name__ == "__main__":
    for key, digest in write_lock().items():
        print(f"{key}  {digest}")
    sys.exit(0)

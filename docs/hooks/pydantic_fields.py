"""griffe extension (mkdocstrings): the fields of a pydantic model in the API reference.

mkdocstrings lists a class attribute only when it has a docstring, and a pydantic field rarely has one:
its words are in ``Field(description=...)`` or in the ``#:`` comment above it. For each pydantic model
that the reference renders, this gives every field a docstring from those words ("Required." added when
it has no default), so that every field is listed with its type and default.
"""

from __future__ import annotations

import ast
import importlib
from typing import Any

from griffe import Attribute, Class, Docstring, Extension, Inspector, ObjectNode, Visitor


def _model(path: str) -> Any:
    """The pydantic model at ``module.Class``, or None when the path is no pydantic model."""
    from pydantic import BaseModel

    module, _, name = path.rpartition(".")
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    return found if isinstance(found, type) and issubclass(found, BaseModel) else None


def _comment_above(lines: list[str], lineno: int) -> str:
    """The ``#:`` comment lines just above line ``lineno`` (1-based), joined; empty when there are none."""
    words: list[str] = []
    index = lineno - 2
    while index >= 0 and lines[index].strip().startswith("#:"):
        words.insert(0, lines[index].strip()[2:].strip())
        index -= 1
    return " ".join(words)


class PydanticFields(Extension):
    def on_class_members(
        self, *, node: ast.AST | ObjectNode, cls: Class, agent: Visitor | Inspector, **kwargs: Any
    ) -> None:
        model = _model(cls.path)
        if model is None:
            return
        lines = cls.lines_collection[cls.filepath] if not isinstance(cls.filepath, list) else []
        for name, field in model.model_fields.items():
            member = cls.members.get(name)
            if not isinstance(member, Attribute) or member.docstring is not None:
                continue
            words = field.description or (_comment_above(lines, member.lineno) if member.lineno else "")
            # the heading shows the type and the default; a field without one must be given
            text = " ".join(part for part in (words, "Required." if field.is_required() else "") if part)
            member.docstring = Docstring(text or "Optional.", parent=member)
            member.labels.add("pydantic-field")

"""Passage and Sample ids are stripped, and a blank one is refused with a message naming what it is."""

from collections.abc import Callable

import pytest
from pydantic import ValidationError

from hallumeasure.core.types import Passage, Sample


def test_ids_are_stripped() -> None:
    assert Passage(id=" p1 ", text="x").id == "p1"
    assert Sample(id=" s1 ", context="c", response="r").id == "s1"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Passage(id="   ", text="x"), "a passage id must not be blank"),
        (lambda: Sample(id=" \t", context="c", response="r"), "id must not be blank"),
    ],
)
def test_blank_ids_are_refused(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        make()

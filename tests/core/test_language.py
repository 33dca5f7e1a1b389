"""Language detection for the keyless judges: clear answers only, and scripts told without a model."""

from __future__ import annotations

from hallumeasure.core.language import detect, outside
from hallumeasure.core.text import split_sentences


def test_clear_languages_are_told_and_english_is_not_outside() -> None:
    assert outside("Die Bibliothek hat 4,2 Millionen Bücher und öffnet um 9 Uhr.").code == "de"  # type: ignore[union-attr]
    assert outside("Le conseil municipal a voté 7 contre 2 pour financer une nouvelle aile.").code == "fr"  # type: ignore[union-attr]
    assert outside("東京タワーは1958年に完成しました。").code == "ja"  # type: ignore[union-attr]
    assert outside("Москва — столица России.").code == "ru"  # type: ignore[union-attr]
    assert outside("The Harbour Bridge is 24 km long and was opened in 1932 by the premier.") is None


def test_a_few_words_give_no_answer_rather_than_a_wrong_one() -> None:
    assert detect("Hello!") is None and outside("Paris") is None
    assert outside("Shall I tell you more?") is None


def test_full_width_sentence_ends_split_without_a_space() -> None:
    text = "東京タワーは1958年に完成しました。高さは333メートルです！ It is tall."
    found = split_sentences(text)
    assert [s for s, _ in found] == ["東京タワーは1958年に完成しました。", "高さは333メートルです！", "It is tall."]
    assert all(text[span.start : span.end] == s for s, span in found)

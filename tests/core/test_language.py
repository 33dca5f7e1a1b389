"""Language detection for the keyless judges: clear answers only, and scripts told without a model."""

from __future__ import annotations

from hallumeasure.core.language import detect, outside, plainly_english
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


ENGLISH_NEWS = (
    "The council said on Tuesday that the new bridge would open in March. It has been under construction for "
    "three years, and the cost of the work has risen from 40 million to 52 million euros. Residents who live "
    "near the river have complained about the noise, which the builders say will end with the last stage."
)
OTHER_PROSE = {
    "de": "Der Stadtrat hat am Dienstag mitgeteilt, dass die neue Brücke im März eröffnet wird. Sie wird seit "
    "drei Jahren gebaut, und die Kosten sind von 40 auf 52 Millionen Euro gestiegen. Was die Anwohner am Fluss "
    "stört, ist der Lärm, der mit dem letzten Bauabschnitt enden soll.",
    "fr": "Le conseil municipal a annoncé mardi que le nouveau pont ouvrira en mars. Il est en construction "
    "depuis trois ans, et le coût des travaux est passé de 40 à 52 millions d'euros. Les riverains se plaignent "
    "du bruit, qui doit cesser avec la dernière phase.",
    "es": "El ayuntamiento anunció el martes que el nuevo puente abrirá en marzo. Lleva tres años en "
    "construcción y el coste de las obras ha pasado de 40 a 52 millones de euros. Los vecinos del río se quejan "
    "del ruido, que terminará con la última fase.",
    "nl": "De gemeenteraad heeft dinsdag gezegd dat de nieuwe brug in maart opengaat. Er wordt al drie jaar aan "
    "gebouwd en de kosten zijn gestegen van 40 naar 52 miljoen euro. Bewoners bij de rivier klagen over het "
    "lawaai, dat met de laatste fase moet ophouden.",
}


def test_plain_english_skips_the_model_and_other_languages_never_pass_for_it() -> None:
    assert plainly_english(ENGLISH_NEWS) and outside(ENGLISH_NEWS) is None
    for code, text in OTHER_PROSE.items():
        assert not plainly_english(text), code
        found = outside(text)
        assert found is not None and found.code == code
    # a German text opening with an English quote is still read by the model, not waved through
    assert not plainly_english("The end. " + OTHER_PROSE["de"])

"""Dev minimal pairs for the keyless triage (tuned on; the frozen suite in frozen/ never is).

Each pair is (kind, context, claim) with kind ``changed:<k>`` (one fact altered) or
``faithful:<k>`` (fully backed by the context). They add the semantic kinds that words and
numbers alone cannot check (a group split by the source, a plan told as done, hyperbole, a
superlative, a cause, a comparison) to the stories of stories.py. ``pairs()`` gives both sets in
the frozen suite's format.
"""

from __future__ import annotations

from typing import Any

_MARKET = (
    "The town council voted 7 to 2 to close Hill Street to cars on Saturdays. The two Green members voted "
    "against the plan. The first car-free Saturday is planned for 4 May. Shop owners on the street were split."
)
_BAKERY = (
    "Rosa's Bakery opened its second shop in Aldmoor in March. The owner, Rosa Lind, plans a third shop "
    "near the station next year. Its sourdough loaf is its best-selling bread, according to Lind."
)
_CLINIC = (
    "The Marsh Lane clinic treated 1,200 patients in 2023, about half of them children. Waiting times fell "
    "after the clinic hired two more nurses, the manager said. The clinic is open on weekdays only."
)
_RIVER = (
    "The Wend river rose by about 40 centimetres overnight after heavy rain. Officials warned that parts of "
    "the riverside path may flood. A smaller rise is expected on Thursday."
)
_SCHOOL = (
    "Greywater School will add a science wing with four laboratories. Work is expected to start in the autumn "
    "and take eighteen months. Some parents have asked for a larger sports hall instead."
)
_TEAM = (
    "The Calder Hawks beat the Leeford Lions 3-1 on Sunday. Striker Ama Osei scored twice. It was the Hawks' "
    "fifth win of the season, which leaves them second in the league behind Porthaven."
)

DEV_PAIRS: list[tuple[str, str, str]] = [
    ("changed:group_all", _MARKET, "Every council member voted for the plan."),
    ("changed:group_all", _MARKET, "All shop owners on the street backed the closure."),
    ("changed:group_all", _SCHOOL, "All parents support the new science wing."),
    ("changed:plan_vs_done", _MARKET, "The first car-free Saturday took place on 4 May."),
    ("changed:plan_vs_done", _BAKERY, "Rosa Lind has opened a third shop near the station."),
    ("changed:plan_vs_done", _SCHOOL, "Work on the science wing has already started."),
    ("changed:hyperbole", _BAKERY, "Rosa's Bakery has transformed bread-making in Aldmoor."),
    ("changed:hyperbole", _TEAM, "Ama Osei gave a record-breaking performance on Sunday."),
    ("changed:hyperbole", _RIVER, "The Wend river rose dramatically to unprecedented levels overnight."),
    ("changed:superlative", _TEAM, "The Calder Hawks are the best team in the league."),
    ("changed:superlative", _BAKERY, "Rosa's sourdough is the most popular bread in the region."),
    ("changed:superlative", _CLINIC, "The Marsh Lane clinic is the busiest clinic in the area."),
    ("changed:cause", _CLINIC, "Waiting times fell because the clinic treated fewer children."),
    ("changed:cause", _RIVER, "The Wend river rose because a dam was opened upstream."),
    ("changed:comparative", _RIVER, "A bigger rise is expected on Thursday."),
    ("changed:comparative", _CLINIC, "More than half of the patients were children."),
    ("changed:comparative", _TEAM, "The Hawks are ahead of Porthaven in the league."),
    ("changed:attribution", _BAKERY, "Aldmoor residents say the sourdough loaf is the bakery's best-selling bread."),
    ("changed:attribution", _CLINIC, "Waiting times fell after the clinic hired two more nurses, patients said."),
    ("changed:modality", _RIVER, "Parts of the riverside path will flood."),
    ("changed:modality", _SCHOOL, "Work will certainly finish within a year."),
    ("changed:negation", _CLINIC, "The clinic is not open on weekdays."),
    ("changed:invented", _BAKERY, "Rosa Lind trained as a baker in Paris."),
    ("changed:number", _TEAM, "Striker Ama Osei scored three times."),
    ("changed:name", _TEAM, "The Calder Hawks beat the Porthaven Lions 3-1 on Sunday."),
    ("faithful:split_group_kept", _MARKET, "Most council members voted to close Hill Street to cars on Saturdays."),
    ("faithful:split_group_kept", _MARKET, "The two Green members opposed the plan."),
    ("faithful:plan_kept", _BAKERY, "Rosa Lind plans a third shop near the station next year."),
    ("faithful:plan_kept", _MARKET, "The first car-free Saturday is planned for 4 May."),
    ("faithful:attribution_kept", _CLINIC, "The manager said waiting times fell after two more nurses were hired."),
    ("faithful:attribution_kept", _BAKERY, "According to Lind, the sourdough loaf is the bakery's best-selling bread."),
    ("faithful:modality_kept", _RIVER, "Parts of the riverside path may flood, officials warned."),
    ("faithful:copy", _TEAM, "Striker Ama Osei scored twice."),
    ("faithful:copy", _CLINIC, "The clinic is open on weekdays only."),
    ("faithful:number_format", _CLINIC, "The Marsh Lane clinic treated 1200 patients in 2023."),
    ("faithful:paraphrase", _TEAM, "The Calder Hawks defeated the Leeford Lions 3-1 on Sunday."),
    ("faithful:superlative_kept", _TEAM, "The Calder Hawks are second in the league, behind Porthaven."),
    ("faithful:comparative_kept", _RIVER, "A smaller rise is expected on Thursday."),
    ("faithful:summary", _SCHOOL, "Greywater School will add a science wing with four laboratories."),
    ("faithful:negation_equiv", _CLINIC, "The clinic is not open at weekends."),
]


def _pair(number: int, kind: str, context: str, claim: str) -> dict[str, Any]:
    return {"id": f"d{number}", "kind": kind, "expected": kind.split(":")[0], "context": context, "claim": claim}


def pairs() -> list[dict[str, Any]]:
    """The dev pairs of this file and every claim of stories.py, in the frozen suite's format."""
    from tests.judges.offline.contrast.stories import STORIES

    out = [_pair(i, kind, context, claim) for i, (kind, context, claim) in enumerate(DEV_PAIRS)]
    for story in STORIES:
        for kind, claim in story.faithful:
            out.append(_pair(len(out), f"faithful:{kind}", story.context, claim))
        for kind, _, claim in story.changed:
            out.append(_pair(len(out), f"changed:{kind}", story.context, claim))
    return out

"""The small hand-written dataset of the reliability tests (kept apart so that it imports fast)."""

from hallumeasure.core.types import Sample

#: Small, hand-written: two or three sentences each, so that each sample makes two or three claims.
SAMPLES = [
    Sample(
        id="bridge",
        model="m",
        context="The Kessel bridge is 24 km long. It opened in 2019 after six years of work.",
        response="The Kessel bridge is 42 km long. It opened in 2019.",
    ),
    Sample(
        id="harbour",
        model="m",
        context="Eastmere approved 4.2 million euros for the harbour wall. Work starts in March.",
        response="Eastmere approved 4.2 million euros for the harbour wall. Work starts in March.",
    ),
    Sample(
        id="battery",
        model="m",
        context="Voltra's cell stores 410 Wh/kg. It kept 90 percent capacity after 800 cycles.",
        response="Voltra's cell stores 410 Wh/kg. It kept 95 percent capacity after 800 cycles. It is cheap.",
    ),
    Sample(
        id="library",
        model="m",
        context="The library opens at 9 on weekdays. It closes at noon on Saturdays.",
        response="The library opens at 9 on weekdays. It is closed on Sundays.",
    ),
    Sample(
        id="comet",
        model="m",
        context="Comet Ilsa passes Earth every 76 years. It was last seen in 1986.",
        response="Comet Ilsa passes Earth every 67 years. It was last seen in 1986.",
    ),
    Sample(
        id="vote",
        model="m",
        context="The council voted 7 to 2 for the plan. Two members were absent.",
        response="The council voted 7 to 2 for the plan. Nobody was absent.",
    ),
    Sample(
        id="river",
        model="m",
        context="The Arn river floods in spring. Farmers plant rice after the flood.",
        response="The Arn river floods in spring. Farmers plant rice after the flood. It never floods.",
    ),
    Sample(
        id="museum",
        model="m",
        context="The museum holds 3,000 coins. Entry is free on Sundays.",
        response="The museum holds 3,000 coins. Entry is free every day.",
    ),
]

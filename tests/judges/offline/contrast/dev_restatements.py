"""Dev pairs of faithful restatements and their changed twins (tuned on; the frozen suite never is).

Each pair is (kind, context, claim), as in dev_pairs.py. The faithful claims say what the context
says in other words: a number in another format, a time or date written otherwise, a negation
told as its positive opposite, a sum, difference or span the context's values give for certain,
a paraphrase, a summary of two facts, a kept speaker or modal word. The changed claims alter one
fact of the same shapes (a value, a name, a negation, a plan told as done, a superlative, a split
group told as all). Contexts hold several numbers and names, so that a claim can pick the wrong one.
``pairs()`` gives them in the frozen suite's format.
"""

from __future__ import annotations

from typing import Any

_LIBRARY = (
    "The Northgate library lent 1,500 books in June, up from 1,200 in May. It has 9 staff, 3 of them part-time. "
    "Head librarian Priya Desai said the reading room will reopen on 2 September after repairs. "
    "The library was founded in 1962 and moved to Carter Street in 1988."
)
_FERRY = (
    "The Isle ferry carried 2.5 million passengers last year, 10% more than the year before. The crossing takes "
    "45 minutes and the first boat leaves at 6:30 a.m. Captain Owen Hale has worked on the route since 2004. "
    "The operator did not raise fares this year."
)
_FACTORY = (
    "The Brenner plant, which opened in 1990 and closed in 2000, employed 400 workers at its peak. Half of them "
    "lived in the nearby town of Asham. The owner, Kessel Metals, blamed falling steel prices for the closure. "
    "A museum on the site is planned for 2027."
)
_VOTE = (
    "The Ridgeford council approved the new bus lane by 6 votes to 3 on Tuesday. Councillor Maya Roth, who chairs "
    "the transport committee, voted in favour, while Councillor Tom Briggs voted against it. The lane will cost "
    "£250,000 and is expected to open in March."
)
_SURVEY = (
    "A survey of 2,000 adults by the Lumen Institute found that 25% cycle to work at least once a week. Among "
    "those under 30, the share was 40%. The institute said safer junctions could raise the figure. The survey "
    "was carried out in April 2024."
)
_MATCH = (
    "Harlow United drew 2-2 with Crestfield on Saturday in front of 18,000 fans. Defender Luis Ortega scored "
    "both of Harlow's goals. Crestfield's keeper, Sam Okafor, was sent off in the 80th minute. Harlow are "
    "fourth in the table, two points behind Crestfield."
)
_BRIDGE = (
    "The Tamsin bridge is 1.2 kilometres long and took four years to build, from 2015 to 2019. It cost "
    "$80 million, twice the first estimate. Engineer Clara Voss led the project. Trucks over 40 tonnes "
    "are not allowed on it."
)
_BAKERY = (
    "Mill Lane Bakery sells about 300 loaves a day and 120 cakes a week. It opens at 7 a.m. and closes at "
    "3 p.m., Monday to Saturday. Owner Jonas Berg started the bakery in 2011 with his sister Ida. The bakery "
    "has not yet decided whether to open a second shop."
)
_TRIAL = (
    "In a trial of 600 patients, the drug Zelmet cut the rate of second heart attacks by a quarter compared with "
    "a placebo. The trial ran for 18 months at 12 hospitals. Lead researcher Dr Anika Shah said larger trials "
    "are needed. The drug was not tested on children."
)
_ORCHESTRA = (
    "The Vell Orchestra will play 14 concerts this season, 5 of them outside the city. Its conductor, Marco Ruiz, "
    "joined in 2018 and replaced Elena Park. Tickets start at €15. The orchestra has 72 musicians."
)
_SCHOOL = (
    "Pinecrest School has 840 pupils and 56 teachers. Its new sports hall opened on 12 January 2025, three "
    "months late. Headteacher Rachel Moore said the delay was caused by a shortage of steel. Parents were "
    "divided over the school's plan to shorten lunch breaks."
)
_FARM = (
    "The Ellery farm grew 30 tonnes of apples and 12 tonnes of pears in 2023. Apples made up most of its income. "
    "Farmer Nora Quinn bought the farm in 1995 from her uncle. She did not use pesticides on the pear trees."
)
_MUSEUM = (
    "The City Museum drew 250,000 visitors in 2023, a record for the museum. Entry is free for children under 12; "
    "adults pay £8. Director Felix Grant said attendance rose after the dinosaur hall reopened in May. The "
    "museum closes at 5:30 p.m. every day except Monday, when it is shut."
)
_ELECTION = (
    "In the Dunmore mayoral election, Helen Achebe won with 52% of the vote, ahead of Paul Seng with 41%. "
    "Turnout was 38%, down from 45% four years earlier. Achebe, a former teacher, promised to build 500 "
    "new homes."
)

DEV_RESTATEMENTS: list[tuple[str, str, str]] = [
    # number formats
    ("faithful:number_format", _LIBRARY, "The Northgate library lent 1500 books in June."),
    ("faithful:number_format", _LIBRARY, "The library has nine staff."),
    ("faithful:number_format", _LIBRARY, "Three of the library's staff work part-time."),
    ("faithful:number_format", _FERRY, "The Isle ferry carried 2,500,000 passengers last year."),
    ("faithful:number_format", _FERRY, "The crossing takes three quarters of an hour."),
    ("faithful:number_format", _FACTORY, "The Brenner plant employed four hundred workers at its peak."),
    ("faithful:number_format", _VOTE, "The bus lane will cost a quarter of a million pounds."),
    ("faithful:number_format", _SURVEY, "The Lumen Institute surveyed two thousand adults."),
    ("faithful:number_format", _SURVEY, "A quarter of adults cycle to work at least once a week, the survey found."),
    ("faithful:number_format", _MATCH, "The match was watched by 18000 fans."),
    ("faithful:number_format", _BRIDGE, "The Tamsin bridge is 1,200 metres long."),
    ("faithful:number_format", _BRIDGE, "The Tamsin bridge cost 80 million dollars."),
    ("faithful:number_format", _TRIAL, "Zelmet cut the rate of second heart attacks by 25%."),
    ("faithful:number_format", _TRIAL, "The trial ran for a year and a half."),
    ("faithful:number_format", _ORCHESTRA, "The Vell Orchestra will play fourteen concerts this season."),
    ("faithful:number_format", _SCHOOL, "Pinecrest School has fifty-six teachers."),
    ("faithful:number_format", _MUSEUM, "The City Museum drew a quarter of a million visitors in 2023."),
    ("faithful:number_format", _FARM, "The Ellery farm grew thirty tonnes of apples in 2023."),
    ("faithful:number_format", _ELECTION, "Helen Achebe won with just over half of the vote."),
    ("faithful:number_format", _FACTORY, "Half of the plant's workers lived in Asham."),
    ("changed:number", _LIBRARY, "The Northgate library lent 1,800 books in June."),
    ("changed:number", _LIBRARY, "The library has 12 staff."),
    ("changed:number", _FERRY, "The Isle ferry carried 3.5 million passengers last year."),
    ("changed:number", _FERRY, "The crossing takes 55 minutes."),
    ("changed:number", _FACTORY, "The Brenner plant employed 600 workers at its peak."),
    ("changed:number", _VOTE, "The bus lane will cost £350,000."),
    ("changed:number", _SURVEY, "The Lumen Institute surveyed 3,000 adults."),
    ("changed:number", _MATCH, "The match was watched by 21,000 fans."),
    ("changed:number", _BRIDGE, "The Tamsin bridge is 2.4 kilometres long."),
    ("changed:number", _TRIAL, "The trial ran for 24 months."),
    ("changed:number", _ORCHESTRA, "The orchestra has 85 musicians."),
    ("changed:number", _SCHOOL, "Pinecrest School has 920 pupils."),
    ("changed:number", _MUSEUM, "Adults pay £12 to enter the City Museum."),
    ("changed:number", _FARM, "The Ellery farm grew 18 tonnes of pears in 2023."),
    ("changed:number", _ELECTION, "Helen Achebe won with 61% of the vote."),
    # times and dates
    ("faithful:time_date_format", _FERRY, "The first ferry leaves at half past six in the morning."),
    ("faithful:time_date_format", _FERRY, "The first boat departs at 06:30."),
    ("faithful:time_date_format", _BAKERY, "Mill Lane Bakery opens at 7:00 and closes at 15:00."),
    ("faithful:time_date_format", _BAKERY, "The bakery closes at three in the afternoon."),
    ("faithful:time_date_format", _LIBRARY, "The reading room will reopen on September 2."),
    ("faithful:time_date_format", _SCHOOL, "The new sports hall opened on January 12, 2025."),
    ("faithful:time_date_format", _MUSEUM, "The City Museum closes at 17:30."),
    ("faithful:time_date_format", _SURVEY, "The survey was done in spring 2024."),
    ("faithful:time_date_format", _MUSEUM, "The City Museum is closed on Mondays."),
    ("faithful:time_date_format", _BAKERY, "Mill Lane Bakery is open six days a week."),
    ("changed:time", _FERRY, "The first boat leaves at 7:30 a.m."),
    ("changed:time", _BAKERY, "Mill Lane Bakery closes at 5 p.m."),
    ("changed:time", _MUSEUM, "The City Museum closes at 6:30 p.m."),
    ("changed:date", _LIBRARY, "The reading room will reopen on 9 September."),
    ("changed:date", _SCHOOL, "The new sports hall opened on 12 March 2025."),
    ("changed:date", _SURVEY, "The survey was carried out in June 2024."),
    ("changed:date", _MUSEUM, "The City Museum is shut on Tuesdays."),
    ("faithful:time_date_format", _FERRY, "The first boat leaves at 6:30 am."),
    ("faithful:time_date_format", _BAKERY, "The bakery is open from 7am to 3pm."),
    ("faithful:time_date_format", _BAKERY, "Mill Lane Bakery is closed on Sundays."),
    ("faithful:time_date_format", _LIBRARY, "The reading room will reopen on the second of September."),
    ("faithful:time_date_format", _LIBRARY, "The library was founded in the early 1960s."),
    ("faithful:time_date_format", _SCHOOL, "The new sports hall opened on 12/01/2025."),
    ("faithful:time_date_format", _MUSEUM, "The City Museum shuts at half past five."),
    ("faithful:time_date_format", _MUSEUM, "The museum is open every day but Monday."),
    ("changed:date", _SCHOOL, "The new sports hall opened on 25/03/2025."),
    ("changed:date", _LIBRARY, "The library was founded in 1972."),
    ("changed:time", _BAKERY, "The bakery is open from 8am to 4pm."),
    ("changed:date", _MUSEUM, "The City Museum is shut on Sundays."),
    # negation equivalents
    ("faithful:negation_equiv", _FERRY, "The operator kept fares unchanged this year."),
    ("faithful:negation_equiv", _BRIDGE, "Trucks heavier than 40 tonnes are banned from the Tamsin bridge."),
    ("faithful:negation_equiv", _TRIAL, "Zelmet was tested only on adults, not on children."),
    ("faithful:negation_equiv", _FARM, "Nora Quinn grew her pears without pesticides."),
    ("faithful:negation_equiv", _BAKERY, "Mill Lane Bakery is undecided about opening a second shop."),
    ("faithful:negation_equiv", _MUSEUM, "The City Museum does not open on Mondays."),
    ("faithful:negation_equiv", _VOTE, "Tom Briggs did not vote for the bus lane."),
    ("faithful:negation_equiv", _MATCH, "Neither Harlow nor Crestfield won on Saturday."),
    ("changed:negation", _FERRY, "The operator raised fares this year."),
    ("changed:negation", _BRIDGE, "Trucks over 40 tonnes are allowed on the Tamsin bridge."),
    ("changed:negation", _TRIAL, "Zelmet was tested on children."),
    ("changed:negation", _FARM, "Nora Quinn used pesticides on the pear trees."),
    ("changed:negation", _VOTE, "Tom Briggs voted for the bus lane."),
    ("changed:negation", _BAKERY, "Mill Lane Bakery has decided to open a second shop."),
    # certain inferences: spans, sums, differences
    ("faithful:inference", _FACTORY, "The Brenner plant operated for about a decade."),
    ("faithful:inference", _FACTORY, "The Brenner plant was open for ten years."),
    ("faithful:inference", _LIBRARY, "The library lent 300 more books in June than in May."),
    ("faithful:inference", _LIBRARY, "Six of the library's 9 staff work full-time."),
    (
        "faithful:inference",
        _LIBRARY,
        "The library stayed at its first site for 26 years before moving to Carter Street.",
    ),
    ("faithful:inference", _VOTE, "Nine councillors voted on the bus lane."),
    ("faithful:inference", _VOTE, "The bus lane was approved by a majority of three votes."),
    ("faithful:inference", _MATCH, "Luis Ortega scored two goals for Harlow on Saturday."),
    ("faithful:inference", _MATCH, "Four goals were scored in the game between Harlow and Crestfield."),
    ("faithful:inference", _BRIDGE, "The Tamsin bridge was first estimated to cost $40 million."),
    ("faithful:inference", _BRIDGE, "The Tamsin bridge was completed in 2019."),
    ("faithful:inference", _BAKERY, "Mill Lane Bakery is open for eight hours a day."),
    ("faithful:inference", _SCHOOL, "Pinecrest School has 15 pupils for every teacher."),
    ("faithful:inference", _FARM, "The Ellery farm grew 42 tonnes of fruit in 2023."),
    ("faithful:inference", _FARM, "The farm grew 18 tonnes more apples than pears in 2023."),
    ("faithful:inference", _ELECTION, "Helen Achebe beat Paul Seng by 11 percentage points."),
    ("faithful:inference", _ELECTION, "Turnout fell by 7 points from the previous election."),
    ("faithful:inference", _SURVEY, "Around 500 of the 2,000 adults surveyed cycle to work weekly."),
    ("faithful:inference", _ORCHESTRA, "Nine of the orchestra's 14 concerts this season are in the city."),
    ("faithful:inference", _FERRY, "Owen Hale has worked on the ferry route for more than 20 years."),
    ("changed:number", _FACTORY, "The Brenner plant operated for about twenty years."),
    ("changed:number", _LIBRARY, "The library lent 500 more books in June than in May."),
    ("changed:number", _VOTE, "Eleven councillors voted on the bus lane."),
    ("changed:number", _MATCH, "Five goals were scored in the game between Harlow and Crestfield."),
    ("changed:number", _FARM, "The Ellery farm grew 50 tonnes of fruit in 2023."),
    ("changed:number", _ELECTION, "Helen Achebe beat Paul Seng by 20 percentage points."),
    ("changed:number", _SCHOOL, "Pinecrest School has 25 pupils for every teacher."),
    ("changed:date", _BRIDGE, "The Tamsin bridge was completed in 2021."),
    # paraphrases
    ("faithful:paraphrase", _VOTE, "The new bus lane was approved by the Ridgeford council on Tuesday."),
    ("faithful:paraphrase", _VOTE, "Maya Roth chairs the transport committee and voted in favour."),
    ("faithful:paraphrase", _MATCH, "Both Harlow goals were scored by defender Luis Ortega."),
    ("faithful:paraphrase", _MATCH, "Sam Okafor, Crestfield's goalkeeper, was sent off in the 80th minute."),
    ("faithful:paraphrase", _BRIDGE, "Clara Voss, an engineer, was in charge of the Tamsin bridge project."),
    ("faithful:paraphrase", _BAKERY, "Jonas Berg and his sister Ida founded Mill Lane Bakery in 2011."),
    ("faithful:paraphrase", _TRIAL, "Dr Anika Shah, who led the research, called for larger trials."),
    ("faithful:paraphrase", _ORCHESTRA, "Marco Ruiz took over from Elena Park as conductor in 2018."),
    ("faithful:paraphrase", _FARM, "Nora Quinn purchased the Ellery farm from her uncle in 1995."),
    ("faithful:paraphrase", _MUSEUM, "Children under 12 get into the City Museum for free."),
    ("faithful:paraphrase", _SCHOOL, "Rachel Moore blamed a steel shortage for the delay."),
    ("faithful:paraphrase", _FACTORY, "Kessel Metals said falling steel prices led to the closure of the plant."),
    ("faithful:paraphrase", _ELECTION, "Helen Achebe used to be a teacher."),
    ("faithful:paraphrase", _FERRY, "Owen Hale has been working on the route since 2004."),
    ("changed:name", _VOTE, "Councillor Tom Briggs chairs the transport committee."),
    ("changed:name", _MATCH, "Sam Okafor scored both of Harlow's goals."),
    ("changed:name", _BRIDGE, "Engineer Clara Park led the Tamsin bridge project."),
    ("changed:name", _BAKERY, "Jonas Berg started the bakery in 2011 with his brother Erik."),
    ("changed:name", _ORCHESTRA, "Elena Park replaced Marco Ruiz as conductor in 2018."),
    ("changed:name", _FARM, "Nora Quinn bought the farm in 1995 from her aunt."),
    ("changed:name", _FACTORY, "Half of the workers lived in the nearby town of Dunmore."),
    ("changed:name", _ELECTION, "Paul Seng won the Dunmore mayoral election."),
    # summaries of two facts
    ("faithful:summary", _LIBRARY, "Founded in 1962, the Northgate library moved to Carter Street in 1988."),
    ("faithful:summary", _FERRY, "The Isle ferry, whose crossing takes 45 minutes, carried 2.5 million passengers."),
    ("faithful:summary", _MATCH, "Luis Ortega scored twice as Harlow drew 2-2 with Crestfield."),
    ("faithful:summary", _BRIDGE, "Led by Clara Voss, the $80 million Tamsin bridge took four years to build."),
    ("faithful:summary", _SCHOOL, "Pinecrest School, with 840 pupils, opened its new sports hall in January 2025."),
    ("faithful:summary", _ORCHESTRA, "The 72-musician Vell Orchestra will play 14 concerts this season."),
    ("faithful:summary", _FARM, "Nora Quinn, who bought the farm in 1995, grew 30 tonnes of apples in 2023."),
    ("faithful:summary", _MUSEUM, "The City Museum had a record 250,000 visitors in 2023."),
    # kept attribution
    ("faithful:attribution_kept", _LIBRARY, "Priya Desai said the reading room will reopen on 2 September."),
    ("faithful:attribution_kept", _FACTORY, "Kessel Metals blamed falling steel prices for the plant's closure."),
    (
        "faithful:attribution_kept",
        _MUSEUM,
        "According to Felix Grant, attendance rose after the dinosaur hall reopened.",
    ),
    ("faithful:attribution_kept", _SCHOOL, "Rachel Moore said a steel shortage caused the delay."),
    ("faithful:attribution_kept", _TRIAL, "Anika Shah said that larger trials are needed."),
    ("changed:attribution", _MUSEUM, "Attendance rose because the dinosaur hall reopened."),
    ("changed:attribution", _SCHOOL, "The delay was caused by a shortage of steel, parents said."),
    ("changed:attribution", _TRIAL, "Zelmet's makers said larger trials are needed."),
    # kept modality
    ("faithful:modality_kept", _VOTE, "The bus lane is expected to open in March."),
    ("faithful:modality_kept", _SURVEY, "Safer junctions could raise the share of people cycling, the institute said."),
    ("faithful:modality_kept", _FACTORY, "A museum is planned on the site of the Brenner plant for 2027."),
    ("faithful:modality_kept", _LIBRARY, "The reading room is due to reopen on 2 September."),
    ("faithful:modality_kept", _ORCHESTRA, "The Vell Orchestra is set to play 14 concerts this season."),
    ("changed:plan_vs_done", _FACTORY, "A museum has opened on the site of the Brenner plant."),
    ("changed:plan_vs_done", _VOTE, "The new bus lane opened in March."),
    ("changed:plan_vs_done", _LIBRARY, "The reading room reopened on 2 September."),
    ("changed:modality", _SURVEY, "Safer junctions will raise the share of people cycling."),
    # superlatives and groups
    ("faithful:superlative_kept", _MUSEUM, "The City Museum had its highest attendance ever in 2023."),
    ("faithful:superlative_kept", _FARM, "Apples were the Ellery farm's main source of income."),
    ("changed:superlative", _MATCH, "Harlow United are top of the table."),
    ("changed:superlative", _BRIDGE, "The Tamsin bridge is the longest bridge in the country."),
    ("changed:superlative", _SURVEY, "Cycling is the most popular way to get to work, the survey found."),
    ("faithful:split_group_kept", _VOTE, "Most Ridgeford councillors backed the new bus lane."),
    ("faithful:split_group_kept", _SCHOOL, "Some parents backed the plan to shorten lunch breaks and some did not."),
    ("changed:group_all", _VOTE, "The Ridgeford council unanimously approved the new bus lane."),
    ("changed:group_all", _SCHOOL, "All parents supported the plan to shorten lunch breaks."),
    ("changed:group_all", _SURVEY, "All adults under 30 cycle to work at least once a week."),
]


def _pair(number: int, kind: str, context: str, claim: str) -> dict[str, Any]:
    return {"id": f"r{number}", "kind": kind, "expected": kind.split(":")[0], "context": context, "claim": claim}


def pairs() -> list[dict[str, Any]]:
    """The pairs of this file in the frozen suite's format."""
    return [_pair(i, kind, context, claim) for i, (kind, context, claim) in enumerate(DEV_RESTATEMENTS)]

# ruff: noqa: E501
"""Builds the RAGTruth-format test file from marked responses: [[TYPE|text]] marks a gold span."""

import json
import re
import sys
from pathlib import Path

TYPES = {"EC": "Evident Conflict", "SC": "Subtle Conflict", "EB": "Evident Baseless Info", "SB": "Subtle Baseless Info"}
SOURCES = {
    "s1": (
        "Summary",
        "The city council of Aldport voted 9 to 4 on Monday to build a new public library on the site of the old bus depot. The project will cost 18.5 million pounds and is expected to open in 2027. Councillor Meera Shah, who chairs the planning committee, said the library would hold about 120,000 books and offer free internet access. Opponents argued that the money should go to repairing roads instead.",
    ),
    "s2": (
        "Summary",
        "Researchers at the University of Tromso tracked 240 Arctic foxes for three years using GPS collars. They found that the foxes travelled an average of 12 kilometres a day in winter, twice as far as in summer. The study, published in the journal Polar Biology, suggests that shrinking sea ice may force the animals to cover even longer distances. The team plans to extend the study to Greenland next year.",
    ),
    "s3": (
        "QA",
        {
            "question": "When did the Halvorsen bridge open and how long is it?",
            "passages": "passage 1: The Halvorsen bridge, which links Nordby with the island of Vesterholm, opened to traffic in June 1998 after four years of construction. passage 2: At 6.8 kilometres, it is the longest road bridge in the region. It carries about 40,000 vehicles a day and was designed by the engineering firm Lund & Berg.",
        },
    ),
    "s4": (
        "Summary",
        "Greenleaf Coffee reported revenue of 412 million dollars for 2023, up 8 per cent from the year before. The company opened 35 new shops, mostly in Canada, and said it would not raise prices in 2024. Chief executive Daniel Okafor said the growth came from its breakfast menu, which was launched in March. Shares in the company fell 3 per cent after the announcement because profit margins narrowed.",
    ),
    "s5": (
        "QA",
        {
            "question": "What did the health ministry say about the measles outbreak?",
            "passages": "passage 1: The health ministry said on Friday that 57 cases of measles had been confirmed in the northern province since January, most of them in children under five. passage 2: Officials urged parents to check their children's vaccination records. The ministry has not recorded any deaths, and it said vaccination clinics would stay open on Saturdays until the end of May.",
        },
    ),
    "s6": (
        "Summary",
        "West Bromwich Albion beat Stoke City 2-0 at The Hawthorns on Saturday. Striker Jay Rodriguez scored both goals, the first from a penalty in the 23rd minute and the second with a header after the break. The win lifts the club to fourth place in the Championship table. Manager Carlos Corberan praised his defence, which has not conceded a goal in five matches.",
    ),
    "s7": (
        "Summary",
        "A survey of 2,000 adults by the charity Sleepwell found that 38 per cent sleep fewer than six hours a night, down from 45 per cent in 2019. Younger adults were the most likely to report poor sleep. The charity recommends keeping screens out of the bedroom and going to bed at the same time each night. It did not find a link between coffee drinking and sleep length.",
    ),
    "s8": (
        "QA",
        {
            "question": "What is known about the new species of beetle?",
            "passages": "passage 1: Dr Helen Park, a biologist at Lund University, found 37 new species of beetle in the forests of Borneo during a six-month expedition. passage 2: The smallest of them is just 1.2 millimetres long. Park said many of the species live only in the canopy and may be threatened by logging. The findings were published in the journal Zootaxa in April.",
        },
    ),
    "s9": (
        "Summary",
        "The Riverside hospital will close its maternity ward on 1 October, the health board announced. Expectant mothers will be referred to the General Hospital in Kenton, 20 miles away. The board said the decision was made because it could not recruit enough midwives. Local campaigners have collected 15,000 signatures on a petition against the closure and plan a protest next month.",
    ),
    "s10": (
        "Summary",
        "Italian cuisine was influenced by French cuisine during the 18th century, when wealthy families in Turin and Milan hired French cooks. Historians say the exchange went both ways only later. Tomatoes, now central to many Italian dishes, were not widely eaten in Italy until the late 1700s.",
    ),
}
RESPONSES = [
    (
        "s1",
        "The Aldport city council voted 9 to 4 to build a new public library on the old bus depot site. It will cost 18.5 million pounds and should open in 2027.",
    ),
    (
        "s1",
        "Aldport's council voted [[EC|11 to 2]] on Monday to build a new library on the site of the old bus depot. The project will cost 18.5 million pounds and is expected to open in [[EC|2025]].",
    ),
    (
        "s1",
        "The council of Aldport approved a new library by 9 votes to 4. Councillor Meera Shah said it would hold about 120,000 books and offer free internet access[[EB|, as well as a children's theatre]]. [[EB|The library will be named after the town's founder.]]",
    ),
    (
        "s1",
        "A new public library will be built in Aldport on the site of the old bus depot after a council vote on Monday. [[SC|All councillors supported the plan]], which will cost 18.5 million pounds. Opponents had wanted the money spent on road repairs.",
    ),
    (
        "s2",
        "Scientists from the University of Tromso followed 240 Arctic foxes for three years with GPS collars. In winter the foxes travelled an average of 12 kilometres a day, twice as far as in summer.",
    ),
    (
        "s2",
        "Researchers at the University of Tromso tracked [[EC|420]] Arctic foxes for three years. They found the foxes travelled an average of 12 kilometres a day in winter, [[EC|three times]] as far as in summer. The study [[SC|proves]] that shrinking sea ice forces the animals to cover longer distances.",
    ),
    (
        "s2",
        "A team from the University of Tromso used GPS collars to follow 240 Arctic foxes over three years. The study was published in [[EC|Nature]]. [[EB|The researchers received funding from the Norwegian government.]] The team plans to extend the study to Greenland next year.",
    ),
    (
        "s3",
        "The Halvorsen bridge opened to traffic in June 1998. At 6.8 kilometres, it is the longest road bridge in the region.",
    ),
    (
        "s3",
        "The Halvorsen bridge opened in [[EC|May 1998]] after four years of construction. It is [[EC|8.6 kilometres]] long and carries about 40,000 vehicles a day.",
    ),
    (
        "s3",
        "The bridge opened in June 1998 and is 6.8 kilometres long, [[SB|making it one of the longest bridges in Europe]]. It was designed by the engineering firm Lund & Berg.",
    ),
    (
        "s4",
        "Greenleaf Coffee reported revenue of 412 million dollars for 2023, up 8 per cent on the previous year. It opened 35 new shops, mostly in Canada.",
    ),
    (
        "s4",
        "Greenleaf Coffee's revenue [[EC|fell]] 8 per cent to 412 million dollars in 2023. The company opened 35 new shops, mostly in [[EC|the United States]], and said it [[EC|would raise]] prices in 2024.",
    ),
    (
        "s4",
        "Greenleaf Coffee's 2023 revenue was 412 million dollars, up 8 per cent. Chief executive Daniel Okafor credited the breakfast menu, launched in March. [[EB|He said the company plans to open 50 more shops in 2024.]] Shares fell 3 per cent after the announcement.",
    ),
    (
        "s4",
        "Revenue at Greenleaf Coffee rose 8 per cent to 412 million dollars in 2023. Shares in the company [[SC|rose]] 3 per cent after the announcement [[SB|as investors welcomed the strong results]].",
    ),
    (
        "s5",
        "The health ministry said 57 measles cases had been confirmed in the northern province since January, most of them in children under five. No deaths have been recorded.",
    ),
    (
        "s5",
        "The ministry confirmed [[EC|75]] cases of measles in the northern province since January, most of them in children under five. [[EC|Two children have died]], and vaccination clinics will stay open on Saturdays until the end of May.",
    ),
    (
        "s5",
        "According to the health ministry, 57 cases of measles have been confirmed in the northern province since January. Officials urged parents to check vaccination records [[SB|and to keep unvaccinated children at home]]. [[EB|The outbreak began at a primary school in the provincial capital.]]",
    ),
    (
        "s6",
        "West Brom beat Stoke City 2-0 at The Hawthorns on Saturday, with Jay Rodriguez scoring both goals. The win lifts the club to fourth place in the Championship.",
    ),
    (
        "s6",
        "West Bromwich Albion beat Stoke City [[EC|3-0]] at The Hawthorns on Saturday. Jay Rodriguez scored [[EC|twice in the first half]], the first from a penalty. The win lifts the club to [[EC|third]] place in the Championship table.",
    ),
    (
        "s6",
        "West Bromwich Albion won 2-0 against Stoke City on Saturday. [[EC|Stoke City]] manager Carlos Corberan praised his defence, which has not conceded in five matches. [[EB|It was the club's biggest home crowd of the season.]]",
    ),
    (
        "s7",
        "A Sleepwell survey of 2,000 adults found that 38 per cent sleep fewer than six hours a night, down from 45 per cent in 2019. Younger adults were the most likely to report poor sleep.",
    ),
    (
        "s7",
        "A survey of 2,000 adults by Sleepwell found that [[EC|45 per cent]] sleep fewer than six hours a night, [[EC|up from 38 per cent]] in 2019. [[EC|Older adults]] were the most likely to report poor sleep.",
    ),
    (
        "s7",
        "The charity Sleepwell surveyed 2,000 adults and found 38 per cent sleep under six hours a night. It recommends keeping screens out of the bedroom. [[EC|It found that people who drink coffee sleep less.]]",
    ),
    (
        "s8",
        "Dr Helen Park of Lund University found 37 new species of beetle in the forests of Borneo during a six-month expedition. The smallest is 1.2 millimetres long.",
    ),
    (
        "s8",
        "Dr Helen Park, a biologist at [[EC|Uppsala University]], found 37 new species of beetle in the forests of [[EC|Sumatra]]. The smallest of them is just 1.2 millimetres long. The findings were published in Zootaxa in April.",
    ),
    (
        "s8",
        "During a six-month expedition to Borneo, Dr Helen Park found 37 new species of beetle. She said many live only in the canopy and [[SC|are already endangered]] by logging. [[EB|Several were named after her students.]]",
    ),
    (
        "s9",
        "The Riverside hospital will close its maternity ward on 1 October because it cannot recruit enough midwives. Expectant mothers will be referred to the General Hospital in Kenton, 20 miles away.",
    ),
    (
        "s9",
        "The Riverside hospital will close its maternity ward on [[EC|1 November]], the health board said. Expectant mothers will be sent to the General Hospital in Kenton, [[EC|12 miles]] away. Campaigners have collected 15,000 signatures on a petition.",
    ),
    (
        "s9",
        "The health board announced that the Riverside maternity ward will close on 1 October [[SB|to save money]]. Local campaigners have gathered 15,000 signatures and plan a protest next month. [[EB|The board will hold a public meeting on the decision in September.]]",
    ),
    (
        "s10",
        "Italian cuisine was influenced by French cuisine in the 18th century, when wealthy families in Turin and Milan hired French cooks.",
    ),
    (
        "s10",
        "[[EC|French cuisine was influenced by Italian cuisine]] during the 18th century, when wealthy families in Turin and Milan hired French cooks. Tomatoes were not widely eaten in Italy until the late 1700s.",
    ),
    (
        "s10",
        "In the 18th century, wealthy families in [[EC|Rome and Naples]] hired French cooks, and Italian cuisine was influenced by French cuisine. Tomatoes [[SC|have always been]] central to Italian dishes.",
    ),
]
out = Path(sys.argv[1])
with (out / "source_info.jsonl").open("w") as f:
    for sid, (task, info) in SOURCES.items():
        f.write(
            json.dumps(
                {
                    "source_id": sid,
                    "task_type": task,
                    "source": "written for hallumeasure's span test",
                    "source_info": info,
                },
                ensure_ascii=False,
            )
            + "\n"
        )
with (out / "response.jsonl").open("w") as f:
    for n, (sid, marked) in enumerate(RESPONSES, start=1):
        text, labels, pos = "", [], 0
        for m in re.finditer(r"\[\[(EC|SC|EB|SB)\|(.*?)\]\]", marked):
            text += marked[pos : m.start()]
            start = len(text)
            text += m.group(2)
            labels.append({"start": start, "end": len(text), "text": m.group(2), "label_type": TYPES[m.group(1)]})
            pos = m.end()
        text += marked[pos:]
        f.write(
            json.dumps(
                {
                    "id": f"r{n}",
                    "source_id": sid,
                    "model": "written",
                    "temperature": None,
                    "labels": labels,
                    "split": "test",
                    "quality": "good",
                    "response": text,
                },
                ensure_ascii=False,
            )
            + "\n"
        )
print(len(RESPONSES), "responses")

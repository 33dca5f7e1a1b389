"""Hand-written minimal pairs for the offline judge (not taken from any data set).

Each story is a short source text, faithful restatements of its facts (``FAITHFUL``: a claim a
careful reader accepts), and claims that change exactly one fact (``CHANGED``: kind, the
subtype a judge should give, the claim). ``cases.py`` turns every claim into a one-sentence
response and into a longer response whose other sentences are faithful.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Story:
    context: str
    faithful: list[tuple[str, str]] = field(default_factory=list)
    changed: list[tuple[str, str, str]] = field(default_factory=list)


STORIES: list[Story] = [
    Story(
        "The Brandt Museum of Local History has 9 rooms and a small garden. It opens at 9 a.m. from Tuesday to "
        "Sunday and closes at 5 p.m. Entry costs 6 euros for adults. The museum was founded in 1994 by the "
        "teacher Anna Smith, who still leads its team of volunteers.",
        faithful=[
            ("number_format", "The Brandt Museum of Local History has nine rooms."),
            ("time_format", "The museum opens at 9:00 from Tuesday to Sunday."),
            ("time_format", "The museum opens at 09:00 from Tuesday to Sunday."),
            ("copy", "Entry costs 6 euros for adults."),
            ("reorder", "Anna Smith, a teacher, founded the museum in 1994."),
            ("synonym", "The museum charges adults 6 euros for admission."),
        ],
        changed=[
            ("number_small", "number", "The Brandt Museum of Local History has 10 rooms."),
            ("time", "temporal", "The museum opens at 10 a.m. from Tuesday to Sunday."),
            ("time", "temporal", "The museum opens at 10:00 from Tuesday to Sunday."),
            ("time", "temporal", "The museum closes at 6 p.m."),
            ("money", "number", "Entry costs 8 euros for adults."),
            ("year", "number", "The museum was founded in 1996 by the teacher Anna Smith."),
            ("first_name", "entity", "The museum was founded by the teacher Maria Smith."),
            ("surname", "entity", "The museum was founded by the teacher Anna Jones."),
            ("weekday", "temporal", "It opens at 9 a.m. from Monday to Sunday."),
        ],
    ),
    Story(
        "Harlow Engineering employs 450 people at its plant in Dresden. The company was set up in 2019 and "
        "makes parts for wind turbines. Its revenue rose by 12 percent last year to 84 million dollars. Chief "
        "executive Tomas Berger said the firm may open a second plant in 2027.",
        faithful=[
            ("copy", "Harlow Engineering employs 450 people at its plant in Dresden."),
            ("synonym", "Harlow Engineering has a workforce of 450 at its Dresden factory."),
            ("number_format", "Revenue grew 12% last year to $84 million."),
            ("attribution_kept", "Tomas Berger said Harlow may open a second plant in 2027."),
            ("inference", "Harlow Engineering is a manufacturer of wind turbine parts."),
            ("reorder", "In 2019 Harlow Engineering was set up."),
        ],
        changed=[
            ("number_large", "number", "Harlow Engineering employs 540 people at its plant in Dresden."),
            ("year", "number", "The company was set up in 2021 and makes parts for wind turbines."),
            ("percent", "number", "Its revenue rose by 21 percent last year to 84 million dollars."),
            ("money", "number", "Its revenue rose by 12 percent last year to 48 million dollars."),
            ("place", "entity", "Harlow Engineering employs 450 people at its plant in Leipzig."),
            ("modality", "temporal", "Chief executive Tomas Berger said the firm will open a second plant in 2027."),
            (
                "speaker",
                "attribution_failure",
                "Chief executive Jonas Weber said the firm may open a second plant in 2027.",
            ),
            ("antonym", "other", "Its revenue fell by 12 percent last year to 84 million dollars."),
            ("ordinal", "number", "Tomas Berger said the firm may open a third plant in 2027."),
        ],
    ),
    Story(
        "The Kessler Public Library will extend its opening hours from next Monday. On weekdays it will open at "
        "8 a.m. instead of 9 a.m. and close at 9 p.m. Weekend hours stay the same. The change is funded by a "
        "two-year grant from the Hartwell Foundation.",
        faithful=[
            ("negation_equiv", "Weekend hours do not change."),
            ("time_format", "On weekdays the library will open at 8:00."),
            ("time_format", "On weekdays the library will close at 21:00."),
            ("reorder", "A two-year grant from the Hartwell Foundation funds the change."),
            ("synonym", "The Kessler Public Library will lengthen its opening hours from next Monday."),
        ],
        changed=[
            ("time", "temporal", "On weekdays the library will open at 7 a.m."),
            ("time", "temporal", "On weekdays it will close at 8 p.m."),
            ("weekday", "temporal", "The library will extend its opening hours from next Wednesday."),
            ("organisation", "entity", "The change is funded by a two-year grant from the Carver Foundation."),
            ("negation", "other", "Weekend hours will change."),
            ("number_small", "number", "The change is funded by a three-year grant from the Hartwell Foundation."),
            ("scope", "overgeneralization", "The library will open at 8 a.m. every day, including weekends."),
        ],
    ),
    Story(
        "The Northgate Museum of Science reopened on Saturday after a renovation that lasted two years and cost "
        "35 million pounds. The new wing houses a planetarium with 150 seats. According to the museum, about "
        "6,000 people visited on the opening weekend.",
        faithful=[
            ("number_format", "Its new wing has a 150-seat planetarium."),
            ("number_format", "The renovation lasted 2 years and cost 35 million pounds."),
            ("attribution_kept", "The museum says about 6,000 people visited on the opening weekend."),
            ("summary", "The Northgate Museum of Science reopened after a two-year renovation."),
            ("copy", "The new wing houses a planetarium with 150 seats."),
        ],
        changed=[
            ("number_small", "number", "The new wing houses a planetarium with 120 seats."),
            ("money", "number", "The renovation lasted two years and cost 53 million pounds."),
            ("number_large", "number", "According to the museum, about 9,000 people visited on the opening weekend."),
            ("weekday", "temporal", "The Northgate Museum of Science reopened on Sunday after a renovation."),
            ("number_small", "number", "The renovation lasted three years and cost 35 million pounds."),
            (
                "attribution",
                "attribution_failure",
                "About 6,000 people visited on the opening weekend, according to the city council.",
            ),
            ("invented", "entity", "The new wing houses a planetarium with 150 seats designed by Ivan Petrov."),
        ],
    ),
    Story(
        "In a clinical trial of 240 adults with mild asthma, the inhaler Breathex reduced severe attacks by 31 "
        "percent compared with a placebo over twelve weeks. Headaches were the most common side effect. The "
        "authors cautioned that the trial was too short to judge long-term safety.",
        faithful=[
            ("number_format", "Breathex cut severe attacks by 31% over 12 weeks."),
            ("synonym", "The trial enrolled 240 adults who had mild asthma."),
            ("copy", "Headaches were the most common side effect."),
            ("attribution_kept", "The authors said the trial was too short to judge long-term safety."),
            ("inference", "Breathex was tested against a placebo."),
        ],
        changed=[
            ("number_large", "number", "In a trial of 420 adults with mild asthma, Breathex reduced severe attacks."),
            ("percent", "number", "Breathex reduced severe attacks by 13 percent compared with a placebo."),
            ("number_small", "number", "Breathex reduced severe attacks over eight weeks."),
            ("antonym", "other", "In a trial of 240 adults with severe asthma, Breathex reduced attacks."),
            ("negation", "other", "Headaches were not the most common side effect."),
            ("antonym", "other", "The authors said the trial was long enough to judge long-term safety."),
            ("invented", "entity", "The trial of 240 adults with mild asthma was run in Norway."),
        ],
    ),
    Story(
        "The Alder River flooded parts of Millbrook after three days of heavy rain. About 120 residents were "
        "evacuated to the community school, and no injuries were reported. Officials expect the water to recede "
        "by Friday. The weather service warned that more rain may arrive next week.",
        faithful=[
            ("summary", "Heavy rain made the Alder River flood parts of Millbrook."),
            ("negation_equiv", "About 120 residents were evacuated and nobody was injured."),
            ("copy", "Officials expect the water to recede by Friday."),
            ("attribution_kept", "The weather service warned that more rain could arrive next week."),
            ("number_format", "The Alder River flooded parts of Millbrook after 3 days of heavy rain."),
        ],
        changed=[
            ("number_small", "number", "The Alder River flooded parts of Millbrook after five days of heavy rain."),
            ("number_large", "number", "About 210 residents were evacuated to the community school."),
            ("weekday", "temporal", "Officials expect the water to recede by Monday."),
            ("modality", "temporal", "The weather service warned that more rain will arrive next week."),
            ("negation", "other", "About 120 residents were evacuated, and several injuries were reported."),
            ("place", "entity", "The Alder River flooded parts of Ashford after three days of heavy rain."),
            ("quantifier", "overgeneralization", "All residents of Millbrook were evacuated to the community school."),
        ],
    ),
    Story(
        "Greenleaf Coffee reported revenue of 58 million dollars for the third quarter, up 12 percent from a year "
        "earlier. Chief executive Paula Okafor credited the growth to the new cold-brew line. The firm opened 14 "
        "new stores during the quarter, bringing its total to 212.",
        faithful=[
            ("synonym", "Greenleaf Coffee's third-quarter revenue was 58 million dollars."),
            ("number_format", "Revenue was up 12% on the year."),
            ("attribution_kept", "Paula Okafor credited the growth to the new cold-brew line."),
            ("inference", "Greenleaf Coffee grew its revenue in the third quarter."),
            ("number_format", "The firm opened fourteen new stores during the quarter."),
        ],
        changed=[
            ("money", "number", "Greenleaf Coffee reported revenue of 85 million dollars for the third quarter."),
            ("percent", "number", "Revenue was up 15 percent from a year earlier."),
            ("number_small", "number", "The firm opened 16 new stores during the quarter."),
            ("number_large", "number", "The firm now has 226 stores."),
            ("ordinal", "number", "Greenleaf Coffee reported revenue of 58 million dollars for the second quarter."),
            ("first_name", "entity", "Chief executive Grace Okafor credited the growth to the new cold-brew line."),
            ("antonym", "other", "Greenleaf Coffee's revenue was down 12 percent from a year earlier."),
        ],
    ),
    Story(
        "The Riverside Marathon will start at 7:30 a.m. on Sunday, 14 April 2024. Around 8,500 runners have "
        "registered, a record for the event. The route passes the old harbour and ends in Victoria Park. Roads "
        "in the city centre will be closed until 2 p.m.",
        faithful=[
            ("time_format", "The Riverside Marathon starts at 07:30 on 14 April 2024."),
            ("time_format", "The marathon starts at 7:30 in the morning."),
            ("number_format", "About 8500 runners have registered."),
            ("synonym", "The course goes past the old harbour and finishes in Victoria Park."),
            ("time_format", "City-centre roads will be closed until 14:00."),
        ],
        changed=[
            ("time", "temporal", "The Riverside Marathon will start at 8:30 a.m. on Sunday."),
            ("date", "temporal", "The Riverside Marathon will take place on 16 April 2024."),
            ("date", "temporal", "The Riverside Marathon will take place on 14 May 2024."),
            ("weekday", "temporal", "The Riverside Marathon will start at 7:30 a.m. on Saturday."),
            ("number_large", "number", "Around 5,800 runners have registered."),
            ("place", "entity", "The route passes the old harbour and ends in Albert Park."),
            ("time", "temporal", "Roads in the city centre will be closed until 4 p.m."),
            ("negation", "other", "Around 8,500 runners have registered, which is not a record for the event."),
        ],
    ),
    Story(
        "Dr Helen Park, a biologist at Lund University, found 37 new species of beetle in the forests of Borneo. "
        "Her team spent eleven months in the field. The findings were published in March 2023 in the journal "
        "Insect Systematics. Park said more species probably remain undiscovered.",
        faithful=[
            ("copy", "Her team spent eleven months in the field."),
            ("number_format", "Her team spent 11 months in the field."),
            ("reorder", "In the forests of Borneo, Helen Park found 37 new beetle species."),
            ("attribution_kept", "Park said more species probably remain undiscovered."),
            ("synonym", "The results appeared in March 2023 in Insect Systematics."),
        ],
        changed=[
            ("number_small", "number", "Dr Helen Park found 34 new species of beetle in the forests of Borneo."),
            ("date", "temporal", "The findings were published in May 2023 in the journal Insect Systematics."),
            ("year", "number", "The findings were published in March 2021 in the journal Insect Systematics."),
            ("organisation", "entity", "Dr Helen Park, a biologist at Uppsala University, found new beetles."),
            ("place", "entity", "Dr Helen Park found 37 new species of beetle in the forests of Sumatra."),
            ("modality", "temporal", "Park said more species remain undiscovered."),
            ("first_name", "entity", "Dr Laura Park found 37 new species of beetle in Borneo."),
            ("number_small", "number", "Her team spent nine months in the field."),
        ],
    ),
    Story(
        "Version 5.0 of the TaskPilot app adds an offline mode and a dark theme. Users on the free plan can create "
        "up to three projects, while the paid plan costs 4 dollars a month and removes this limit. The update is "
        "available for Android now and will reach iOS later this month.",
        faithful=[
            ("synonym", "TaskPilot 5.0 brings an offline mode and a dark theme."),
            ("number_format", "Free users can create up to 3 projects."),
            ("number_format", "The paid plan costs $4 a month."),
            ("inference", "TaskPilot has a free plan and a paid plan."),
            ("copy", "The update is available for Android now and will reach iOS later this month."),
        ],
        changed=[
            ("number_small", "number", "Users on the free plan can create up to five projects."),
            ("money", "number", "The paid plan costs 6 dollars a month."),
            ("number_small", "number", "Version 6.0 of the TaskPilot app adds an offline mode and a dark theme."),
            ("negation", "other", "The update is not available for Android yet."),
            ("quantifier", "other", "Users on the free plan can create no projects."),
            ("invented", "number", "The update, which is 40 megabytes, is available for Android now."),
        ],
    ),
    Story(
        "Mayor Ingrid Solberg opened the new Eastmere bridge on Thursday. The bridge is 340 metres long and took "
        "four years to build. It carries about 20,000 vehicles a day. Some residents complained about noise "
        "during the works.",
        faithful=[
            ("synonym", "Mayor Ingrid Solberg inaugurated the new Eastmere bridge on Thursday."),
            ("number_format", "The bridge is 340 m long and took 4 years to build."),
            ("number_format", "It carries about 20000 vehicles a day."),
            ("copy", "Some residents complained about noise during the works."),
            ("reorder", "On Thursday, the new Eastmere bridge was opened by Mayor Ingrid Solberg."),
        ],
        changed=[
            ("number_large", "number", "The bridge is 430 metres long."),
            ("number_small", "number", "The bridge took six years to build."),
            ("number_large", "number", "It carries about 200,000 vehicles a day."),
            ("weekday", "temporal", "Mayor Ingrid Solberg opened the new Eastmere bridge on Tuesday."),
            ("quantifier", "overgeneralization", "All residents complained about noise during the works."),
            ("surname", "entity", "Mayor Ingrid Larsen opened the new Eastmere bridge on Thursday."),
            ("comparative", "other", "Some residents complained about the lack of noise during the works."),
        ],
    ),
    Story(
        "The Orion Chamber Choir will give a concert at St Mary's Church on 3 June at 8 p.m. Tickets cost 15 "
        "pounds, and children under 12 enter free. The programme includes works by Bach and Brahms. The "
        "conductor, Elena Vasquez, joined the choir in 2018.",
        faithful=[
            ("time_format", "The concert at St Mary's Church starts at 20:00 on 3 June."),
            ("time_format", "The Orion Chamber Choir sings at St Mary's Church on June 3 at 8 pm."),
            ("number_format", "Tickets cost £15, and children under twelve enter free."),
            ("synonym", "The programme features works by Bach and Brahms."),
            ("reorder", "Elena Vasquez, the conductor, has been with the choir since 2018."),
        ],
        changed=[
            ("time", "temporal", "The concert at St Mary's Church starts at 7 p.m. on 3 June."),
            ("date", "temporal", "The Orion Chamber Choir will give a concert at St Mary's Church on 5 June."),
            ("money", "number", "Tickets cost 12 pounds."),
            ("number_small", "number", "Children under 10 enter free."),
            ("surname", "entity", "The programme includes works by Bach and Mozart."),
            ("year", "number", "The conductor, Elena Vasquez, joined the choir in 2016."),
            ("place", "entity", "The Orion Chamber Choir will give a concert at St Paul's Church on 3 June."),
            ("first_name", "entity", "The conductor, Sofia Vasquez, joined the choir in 2018."),
        ],
    ),
    Story(
        "A survey by the Pellman Institute found that 64 percent of teachers in the region feel overworked. The "
        "survey questioned 1,200 teachers in October. Most respondents said paperwork takes more time than "
        "lesson planning. The institute recommended hiring more administrative staff.",
        faithful=[
            ("number_format", "The Pellman Institute found that 64% of teachers in the region feel overworked."),
            ("synonym", "The survey polled 1,200 teachers in October."),
            ("attribution_kept", "According to the Pellman Institute, 64 percent of teachers feel overworked."),
            ("copy", "The institute recommended hiring more administrative staff."),
            ("inference", "The Pellman Institute surveyed teachers in the region."),
        ],
        changed=[
            ("percent", "number", "A survey found that 46 percent of teachers in the region feel overworked."),
            ("number_large", "number", "The survey questioned 2,100 teachers in October."),
            ("date", "temporal", "The survey questioned 1,200 teachers in November."),
            (
                "quantifier",
                "overgeneralization",
                "All respondents said paperwork takes more time than lesson planning.",
            ),
            ("comparative", "other", "Most respondents said paperwork takes less time than lesson planning."),
            (
                "attribution",
                "attribution_failure",
                "The survey found that 64 percent of teachers feel overworked, the education ministry said.",
            ),
            (
                "organisation",
                "entity",
                "A survey by the Brookfield Institute found that 64 percent of teachers feel overworked.",
            ),
            ("antonym", "other", "The institute recommended hiring fewer administrative staff."),
        ],
    ),
    Story(
        "Lena Fischer won the women's 10,000 metres at the national championships in a time of 31 minutes and "
        "12 seconds. It was her second national title. She finished ahead of Marta Kowalski and Jade Owens. "
        "Fischer said she hopes to compete at the world championships in August.",
        faithful=[
            ("synonym", "Lena Fischer took the women's 10,000 metres title at the national championships."),
            ("number_format", "Fischer won in 31 minutes 12 seconds."),
            ("inference", "Marta Kowalski did not win the women's 10,000 metres."),
            ("attribution_kept", "Fischer said she hopes to compete at the world championships in August."),
            ("copy", "It was her second national title."),
        ],
        changed=[
            (
                "number_small",
                "number",
                "Lena Fischer won the women's 10,000 metres in a time of 32 minutes and 12 seconds.",
            ),
            ("ordinal", "number", "It was her third national title."),
            ("first_name", "entity", "Anna Fischer won the women's 10,000 metres at the national championships."),
            ("surname", "entity", "She finished ahead of Marta Nowak and Jade Owens."),
            ("antonym", "other", "Lena Fischer lost the women's 10,000 metres at the national championships."),
            ("date", "temporal", "Fischer said she hopes to compete at the world championships in July."),
            ("modality", "temporal", "Fischer will compete at the world championships in August."),
        ],
    ),
    Story(
        "The city of Vellmar plans to plant 5,000 trees by the end of 2026. The project is paid for by the "
        "regional government and will cost 2.3 million euros. Volunteers will help with the planting every "
        "Saturday from 10 a.m. Critics say the money would be better spent on bus lanes.",
        faithful=[
            ("synonym", "Vellmar intends to plant 5,000 trees by the end of 2026."),
            ("number_format", "The project will cost 2.3 million euros, or 2,300,000 euros."),
            ("time_format", "Volunteers will help with the planting every Saturday from 10:00."),
            ("attribution_kept", "Critics say the money would be better spent on bus lanes."),
            ("inference", "The city of Vellmar is not paying for the tree project itself."),
        ],
        changed=[
            ("number_large", "number", "The city of Vellmar plans to plant 50,000 trees by the end of 2026."),
            ("year", "number", "The city of Vellmar plans to plant 5,000 trees by the end of 2028."),
            ("money", "number", "The project will cost 3.2 million euros."),
            ("time", "temporal", "Volunteers will help with the planting every Saturday from 9 a.m."),
            ("weekday", "temporal", "Volunteers will help with the planting every Sunday from 10 a.m."),
            ("attribution", "attribution_failure", "The money would be better spent on bus lanes."),
            ("organisation", "other", "The project is paid for by the national government."),
        ],
    ),
    Story(
        "The Tidewater ferry leaves Port Alva at 6:45 every morning and reaches Kerris Island 50 minutes later. "
        "A return ticket costs 18 dollars. The service does not run on public holidays. Captain Rui Santos has "
        "worked on the route for 22 years.",
        faithful=[
            ("time_format", "The ferry leaves Port Alva at 6:45 a.m. every day."),
            ("number_format", "The crossing to Kerris Island takes fifty minutes."),
            ("number_format", "A return ticket costs $18."),
            ("negation_equiv", "There is no ferry service on public holidays."),
            ("synonym", "Captain Rui Santos has sailed the route for 22 years."),
        ],
        changed=[
            ("time", "temporal", "The Tidewater ferry leaves Port Alva at 7:45 every morning."),
            ("number_small", "number", "The ferry reaches Kerris Island 40 minutes after leaving Port Alva."),
            ("money", "number", "A return ticket costs 28 dollars."),
            ("negation", "other", "The service also runs on public holidays."),
            ("place", "entity", "The Tidewater ferry leaves Port Alva every morning and reaches Mirren Island."),
            ("first_name", "entity", "Captain Luis Santos has worked on the route for 22 years."),
            ("number_small", "number", "Captain Rui Santos has worked on the route for 12 years."),
        ],
    ),
    Story(
        "Nordvik Airlines cancelled 36 flights on Monday because of a strike by baggage handlers. About 4,000 "
        "passengers were affected. The union said the strike would last two days. The airline expects normal "
        "service to resume on Wednesday.",
        faithful=[
            ("synonym", "A strike by baggage handlers forced Nordvik Airlines to cancel 36 flights on Monday."),
            ("number_format", "About four thousand passengers were affected."),
            ("attribution_kept", "The union said the strike would last two days."),
            ("copy", "The airline expects normal service to resume on Wednesday."),
            ("inference", "Baggage handlers went on strike."),
        ],
        changed=[
            ("number_small", "number", "Nordvik Airlines cancelled 63 flights on Monday."),
            ("weekday", "temporal", "Nordvik Airlines cancelled 36 flights on Tuesday."),
            ("number_large", "number", "About 14,000 passengers were affected."),
            ("speaker", "attribution_failure", "The airline said the strike would last two days."),
            ("number_small", "number", "The union said the strike would last three days."),
            ("modality", "temporal", "Normal service will certainly resume on Wednesday."),
            ("organisation", "other", "Nordvik Airlines cancelled 36 flights because of a strike by pilots."),
        ],
    ),
    Story(
        "Professor Amara Osei of Keller College said the new vaccine reduced infections by 70 percent in a study "
        "of 3,000 volunteers. The study ran from January to June 2022. She said the results may not apply to "
        "children, who were not included.",
        faithful=[
            ("attribution_kept", "Amara Osei said the vaccine reduced infections by 70 percent."),
            ("number_format", "The study of 3000 volunteers ran from January to June 2022."),
            ("negation_equiv", "Children were excluded from the study."),
            ("synonym", "Professor Amara Osei of Keller College said the new vaccine cut infections by 70%."),
        ],
        changed=[
            ("percent", "number", "Professor Amara Osei said the new vaccine reduced infections by 90 percent."),
            ("number_large", "number", "The vaccine was tested in a study of 30,000 volunteers."),
            ("date", "temporal", "The study ran from January to August 2022."),
            ("attribution", "attribution_failure", "The new vaccine reduces infections by 70 percent."),
            ("modality", "temporal", "She said the results do not apply to children."),
            ("organisation", "entity", "Professor Amara Osei of Brennan College said the vaccine reduced infections."),
            ("negation", "other", "Children were included in the study."),
            (
                "speaker",
                "attribution_failure",
                "Professor David Mensah said the new vaccine reduced infections by 70 percent.",
            ),
        ],
    ),
    Story(
        "The Halden Zoo welcomed a baby giraffe on 2 May. The calf weighed 60 kilograms at birth and is already "
        "1.8 metres tall. Keepers named her Tala. The zoo said visitors will be able to see her from next week.",
        faithful=[
            ("number_format", "The calf weighed 60 kg at birth."),
            ("synonym", "A giraffe calf was born at Halden Zoo on May 2."),
            ("copy", "Keepers named her Tala."),
            ("attribution_kept", "According to the zoo, visitors will be able to see the calf from next week."),
        ],
        changed=[
            ("number_small", "number", "The calf weighed 80 kilograms at birth."),
            ("number_small", "number", "The calf is already 2.1 metres tall."),
            ("date", "temporal", "The Halden Zoo welcomed a baby giraffe on 12 May."),
            ("first_name", "entity", "Keepers named her Nala."),
            ("antonym", "other", "The zoo said visitors will be able to see her from last week."),
            ("invented", "other", "The Halden Zoo welcomed a baby giraffe, its first in twenty years, on 2 May."),
        ],
    ),
    Story(
        "Westbrook Council approved a plan to build 800 new homes on the former airfield. Thirty percent of the "
        "homes will be affordable housing. Construction is expected to begin in 2025 and finish in 2030. The "
        "Liberal group voted against the plan.",
        faithful=[
            ("number_format", "Westbrook Council approved 800 new homes on the old airfield."),
            ("number_format", "30% of the homes will be affordable housing."),
            ("modality", "Construction should begin in 2025."),
            ("inference", "Not every group on the council supported the plan."),
            ("copy", "The Liberal group voted against the plan."),
        ],
        changed=[
            ("number_large", "number", "Westbrook Council approved a plan to build 1,800 new homes."),
            ("percent", "number", "Forty percent of the homes will be affordable housing."),
            ("year", "number", "Construction is expected to begin in 2025 and finish in 2032."),
            ("antonym", "other", "The Liberal group voted for the plan."),
            ("quantifier", "overgeneralization", "Every group on the council supported the plan."),
            ("organisation", "entity", "The Green group voted against the plan."),
            ("modality", "temporal", "Construction will begin in 2025."),
        ],
    ),
    Story(
        "Chef Marco Bellini opened his third restaurant, Olivo, in Turin last Friday. The restaurant has 45 seats "
        "and serves dinner from 6 p.m. to 11 p.m. A tasting menu costs 90 euros. Bellini trained in Paris for "
        "six years.",
        faithful=[
            ("reorder", "Last Friday, Marco Bellini opened Olivo, his third restaurant, in Turin."),
            ("time_format", "Olivo serves dinner from 18:00 to 23:00."),
            ("number_format", "Olivo has forty-five seats."),
            ("synonym", "The tasting menu is priced at 90 euros."),
        ],
        changed=[
            ("ordinal", "number", "Chef Marco Bellini opened his second restaurant, Olivo, in Turin."),
            ("place", "entity", "Chef Marco Bellini opened his third restaurant, Olivo, in Milan."),
            ("number_small", "number", "The restaurant has 54 seats."),
            ("time", "temporal", "Olivo serves dinner from 7 p.m. to 11 p.m."),
            ("money", "number", "A tasting menu costs 110 euros."),
            ("number_small", "number", "Bellini trained in Paris for four years."),
            ("weekday", "temporal", "Chef Marco Bellini opened Olivo in Turin last Thursday."),
        ],
    ),
    Story(
        "The Sandell Bakery sells about 1,500 loaves a day. It was founded in 1952 by Oskar Sandell, whose "
        "granddaughter Mia now runs it. The bakery opens at 6 a.m. and closes at 2 p.m. It does not sell cakes.",
        faithful=[
            ("number_format", "The Sandell Bakery sells around 1500 loaves daily."),
            ("reorder", "Oskar Sandell founded the bakery in 1952."),
            ("time_format", "The bakery opens at 6:00 and closes at 14:00."),
            ("negation_equiv", "Cakes are not sold at the bakery."),
            ("synonym", "Mia, the granddaughter of Oskar Sandell, now manages the bakery."),
        ],
        changed=[
            ("number_large", "number", "The Sandell Bakery sells about 5,100 loaves a day."),
            ("year", "number", "It was founded in 1925 by Oskar Sandell."),
            ("first_name", "entity", "It was founded in 1952 by Erik Sandell."),
            ("time", "temporal", "The bakery opens at 5 a.m."),
            ("negation", "other", "The bakery also sells cakes."),
            (
                "invented",
                "entity",
                "The Sandell Bakery, which also has a shop in Bergen, sells about 1,500 loaves a day.",
            ),
        ],
    ),
]

"""The long-horizon set's notes that come back: facts that change during the year (each
version dated; only the newest answers), series of like notes told apart by their dates (a
call from the sister every month, the team's retrospectives, the allotment through the
seasons), and the everyday entries around them, in which the same people and places recur.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.retrieval.year_events import P, Q, W


@dataclass(frozen=True)
class Changed:
    subject: str
    versions: tuple[tuple[str, str], ...]  # (YYYY-MM-DD, text), oldest first
    questions: tuple[tuple[str, str], ...]  # answered by the newest version only


def changed(subject: str, *versions: tuple[str, str], qs: tuple[tuple[str, str], ...]) -> Changed:
    return Changed(subject, tuple(versions), qs)


CHANGED = [
    changed(
        "anna-city",
        ("2025-12-06", "Anna lives in Porto now with the kids, flat near the Bolhão market."),
        (
            "2026-09-12",
            "Anna moved to Lisbon last week; new flat in Alfama, the kids start "
            "at a new school there.",
        ),
        qs=((Q, "where does Anna live"), (P, "which city is my sister's home")),
    ),
    changed(
        "phone",
        ("2026-01-10", "My new mobile number is 0151 2233 4455 (switched to Telekom)."),
        ("2026-06-02", "Changed my phone number again: 0176 9911 2288, now with Fraenk."),
        qs=((Q, "what is my phone number"), (P, "how can people ring my cell")),
    ),
    changed(
        "manager",
        ("2025-12-15", "1:1 with my manager Priya: she wants me to lead the sync redesign."),
        ("2026-05-20", "Priya goes on parental leave; Jonas Becker is my manager from June."),
        qs=((Q, "who is my manager"), (P, "who is my boss at Nordlicht these days")),
    ),
    changed(
        "wifi",
        ("2025-12-20", "Wifi password is Kiwi-Falke-17."),
        ("2026-04-03", "Changed the wifi password to Mango-Storch-42."),
        ("2026-10-08", "New wifi password after the router swap: Birne-Adler-09."),
        qs=((Q, "what is the wifi password"), (P, "the key for our wireless internet")),
    ),
    changed(
        "5k",
        ("2026-01-18", "Ran a 5k personal best along the canal: 26:40."),
        ("2026-05-09", "New 5k PB at the parkrun in Hasenheide: 25:12."),
        ("2026-10-17", "5k in 24:38 at Tempelhof, a new best! Sub-25 finally."),
        qs=((Q, "what is my 5k personal best"), (P, "my fastest time over five kilometres")),
    ),
    changed(
        "car",
        ("2025-12-10", "Car: grey Škoda Fabia, plate B-MK 2291, TÜV due next spring."),
        ("2026-07-15", "Sold the Škoda and bought a used VW ID.3 from 2021, plate B-TK 4481."),
        qs=((Q, "what car do we have"), (P, "which automobile do we own")),
    ),
    changed(
        "gym",
        ("2026-01-05", "Joined McFit on Schönhauser Allee, 24.90 EUR a month."),
        (
            "2026-06-20",
            "Quit McFit; the Berta Block climbing membership covers the gym too, 59 EUR a month.",
        ),
        qs=((Q, "which gym am I a member of"), (P, "where do I go to exercise")),
    ),
    changed(
        "tom-school",
        ("2025-12-03", "Tom teaches physics at the Humboldt-Gymnasium, tenth grade this year."),
        ("2026-08-24", "Tom started at the Lessing-Gymnasium in Wedding; much shorter commute."),
        qs=((Q, "which school does Tom teach at"), (P, "where is my partner employed")),
    ),
    changed(
        "rent",
        ("2025-12-28", "Rent is 1,150 EUR warm, paid on the first by standing order."),
        ("2026-07-01", "Rent goes up to 1,210 EUR from this month (index lease)."),
        qs=((Q, "how much is our rent"), (P, "what do we pay monthly for the apartment")),
    ),
    changed(
        "gp",
        ("2026-01-22", "GP is Dr. Hoffmann at Arkonaplatz, phone 030 4471 2290."),
        (
            "2026-03-30",
            "Dr. Hoffmann retired; new GP is Dr. Aydin, Praxis am "
            "Zionskirchplatz, phone 030 4408 1122.",
        ),
        qs=((Q, "who is my GP"), (P, "which family doctor do I see")),
    ),
    changed(
        "dog-food",
        ("2026-02-11", "Biscuit now eats Josera Light, two cups a day."),
        ("2026-08-19", "Switched Biscuit to Wolfsblut Green Valley because of his itchy skin."),
        qs=((Q, "what food does Biscuit eat"), (P, "what do we feed the dog")),
    ),
    changed(
        "project",
        ("2025-12-08", "I'm on Project Falcon, the offline sync engine, since spring."),
        ("2026-09-01", "Moved from Falcon to Project Heron (search infrastructure) as tech lead."),
        qs=((Q, "which project am I on"), (P, "what team do I belong to at my job")),
    ),
    changed(
        "dentist",
        ("2026-01-27", "Dentist Dr. Weber: cleaning, and one small filling on the left."),
        ("2026-07-28", "Dentist Dr. Weber: cleaning, all fine, next check in six months."),
        qs=((W, "when did I last see the dentist"), (P, "my most recent teeth checkup")),
    ),
    changed(
        "bike-lock",
        ("2026-02-25", "Bike lock code is 4812."),
        ("2026-09-20", "New bike lock after the old one was cut at the station: code 7305."),
        qs=((Q, "what is the bike lock code"), (P, "the combination for the bicycle chain")),
    ),
    changed(
        "mum-home",
        ("2026-01-14", "Mum still lives in her flat in Hannover-List, third floor."),
        (
            "2026-10-03",
            "Mum moved into the assisted living flat in Hannover-Kleefeld, Kirchröder Str. 44.",
        ),
        qs=((Q, "where does Mum live"), (P, "what is my mother's address")),
    ),
    changed(
        "coffee",
        ("2025-12-12", "Coffee: flat white with oat milk, never after 3 pm."),
        ("2026-04-18", "Giving up oat milk, too sweet; now a cortado with regular milk."),
        qs=((Q, "how do I take my coffee"), (P, "my usual espresso drink")),
    ),
    changed(
        "home-office",
        ("2026-01-07", "Work from home on Mondays and Fridays, office the other days."),
        ("2026-08-03", "New office rule at Nordlicht: home office only on Fridays."),
        qs=((Q, "which days do I work from home"), (P, "when may I skip commuting")),
    ),
]

# Notes told apart by their dates: (YYYY-MM-DD, text, [(question with a date, kind)]).
SERIES = [
    (
        "2025-12-09",
        "Anna called: Leo wants a telescope for Christmas.",
        [(Q, "what did Anna tell me on the phone in December")],
    ),
    (
        "2026-01-13",
        "Anna called: Mila started ballet lessons on Saturdays.",
        [(Q, "what did Anna tell me on the phone in January")],
    ),
    (
        "2026-02-10",
        "Anna called: she is thinking about a new job in Lisbon.",
        [(Q, "what did Anna tell me on the phone in February")],
    ),
    (
        "2026-03-11",
        "Anna called: the kids had chickenpox, all better now.",
        [(Q, "what did Anna tell me on the phone in March")],
    ),
    (
        "2026-04-14",
        "Anna called: she ran her first 10k race in Porto.",
        [(Q, "what did Anna tell me on the phone in April")],
    ),
    (
        "2026-05-12",
        "Anna called: they adopted a kitten called Pastel.",
        [(Q, "what did Anna tell me on the phone in May")],
    ),
    (
        "2026-06-09",
        "Anna called: Leo broke his arm falling off the trampoline.",
        [(Q, "what did Anna tell me on the phone in June")],
    ),
    (
        "2026-07-14",
        "Anna called: she got the Lisbon job, starts in September.",
        [(Q, "what did Anna tell me on the phone in July")],
    ),
    (
        "2026-08-11",
        "Anna called: the movers are booked for the end of August.",
        [(Q, "what did Anna tell me on the phone in August")],
    ),
    (
        "2026-10-13",
        "Anna called: Mila's new teacher in Lisbon is very kind.",
        [(Q, "what did Anna say on the phone last month")],
    ),
    (
        "2026-11-10",
        "Anna called: she wants to come to Berlin for New Year.",
        [(Q, "what did Anna tell me on the phone three weeks ago")],
    ),
    (
        "2026-01-16",
        "Sprint retro: too many meetings; we cut the Wednesday sync.",
        [(Q, "what came up in the sprint retro in January")],
    ),
    (
        "2026-03-13",
        "Sprint retro: the flaky CI tests cost us two days; Felix owns the fix.",
        [(Q, "what came up in the sprint retro in March")],
    ),
    (
        "2026-05-15",
        "Sprint retro: on-call was rough, pager went off eleven times.",
        [(Q, "what came up in the sprint retro in May")],
    ),
    (
        "2026-07-17",
        "Sprint retro: shipping 2.0 went well, people want fewer hotfixes.",
        [(Q, "what came up in the sprint retro in July")],
    ),
    (
        "2026-08-14",
        "Sprint retro: the design reviews are too late in the sprint.",
        [(Q, "what came up in the sprint retro three months ago")],
    ),
    (
        "2026-10-16",
        "Sprint retro: Heron's kickoff was chaotic; need clearer owners.",
        [(Q, "what came up in the sprint retro last month")],
    ),
    (
        "2026-01-20",
        "Allotment: ordered seeds for tomatoes, runner beans and nasturtiums.",
        [(Q, "what did I order for the allotment last winter")],
    ),
    (
        "2026-04-19",
        "Allotment: planted potatoes, onions and the strawberry runners.",
        [(Q, "what did I plant at the allotment in spring")],
    ),
    (
        "2026-07-26",
        "Allotment: huge courgette harvest, gave a bag to Frau Okafor.",
        [(Q, "what did the allotment give us last summer")],
    ),
    (
        "2026-10-25",
        "Allotment: covered the beds with leaves and cut back the raspberries.",
        [(Q, "what did I do at the allotment in October")],
    ),
    (
        "2026-11-16",
        "Allotment: the shed roof leaks, bought roofing felt for it.",
        [(Q, "what did I note about the allotment two weeks ago")],
    ),
    (
        "2026-02-21",
        "Mum visited for the weekend: we went to the Pergamon panorama.",
        [(Q, "what did we do when Mum visited in February")],
    ),
    (
        "2026-06-13",
        "Mum visited: boat trip on the Spree and dinner at Tom's favourite Thai.",
        [(Q, "what did we do when Mum visited in June")],
    ),
]

# Everyday entries: the same people and places over and over.
FILLER = [
    "Walked Biscuit in Volkspark Weinbergsweg, {k} km, met the poodle from the corner.",
    "Biscuit's evening walk along the Mauerpark, he chased crows again.",
    "Easy {k}k run along the canal, {m}:{s:02d} min/km. Legs heavy.",
    "Skipped the run, it was pouring.",
    "Lunch at the canteen: {dish}. Too salty.",
    "Cooked {dish} for dinner; Tom did the dishes.",
    "Groceries at the Bio Company: {item}, {item2}, coffee beans.",
    "Standup: reviewed {n} PRs, nothing blocking.",
    "Long meeting about the Q{q} roadmap with Priya and Jonas. Nothing decided.",
    "Focus day, wrote tests for the {module} module.",
    "Pairing with Lena on a flaky CI job in the {module} pipeline.",
    "Coffee with Marco at Café Liebling, talked about climbing and his band.",
    "Anna sent photos of the kids, Mila with a new haircut.",
    "Short call with Mum, she's fine, the knee still hurts.",
    "Watched {film} with Tom. {verdict}.",
    "Read {pages} pages of {book} before bed.",
    "Tired today, slept badly.",
    "Good day overall, lots of energy.",
    "Laundry, vacuumed, watered the plants on the balcony.",
    "Climbing at Berta Block with Marco, tried the blue problems.",
    "Allotment: watered everything, nothing new.",
    "Tom graded papers all evening; ordered pizza.",
    "Paid the electricity bill, {eur} EUR.",
    "Spanish practice on Duolingo, {n}0 minutes.",
    "Kenji sent a voice message from Tokyo, mostly about work.",
    "Took the bike to work, headwind both ways.",
    "One-on-one at Nordlicht, mostly about the roadmap.",
    "Dinner at home, early night.",
]
WORDS = {
    "dish": [
        "lentil curry",
        "pasta with pesto",
        "shakshuka",
        "mushroom risotto",
        "falafel bowl",
        "vegetable soup",
        "tofu stir fry",
    ],
    "item": ["oat milk", "eggs", "spinach", "tofu", "apples", "rye bread", "feta", "tomatoes"],
    "module": ["auth", "export", "billing", "search", "notifications"],
    "film": ["Past Lives", "Dune Part Two", "Perfect Days", "an old Columbo episode"],
    "verdict": ["Loved it", "Fell asleep halfway", "Tom liked it more than I did"],
    "book": ["The Overstory", "Piranesi", "a Spanish graded reader", "Klara and the Sun"],
}

"""The retrieval set's memorable entries: one person's notes from late August to November 2026,
each with the queries that should find it, by class.

Classes: ``keyword`` (an exact token: a code, a name, a number), ``paraphrase`` (the meaning,
with no content word of the entry), ``latest`` (a fact that changed over time: only the newest
entry counts), ``crosslang`` (query and entry in different languages). Queries with nothing
relevant in memory are in NOTHING. An entry's day is "MM-DD" of 2026, or "" for MEMORY.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Fact:
    day: str
    time: str
    lines: tuple[str, ...]
    queries: tuple[tuple[str, str], ...] = field(default=())


def fact(day: str, time: str, text: str, *queries: tuple[str, str]) -> Fact:
    return Fact(day, time, tuple(text.strip().splitlines()), tuple(queries))


K, P, T, X = "keyword", "paraphrase", "latest", "crosslang"

# MEMORY.md: the curated long-term notes (sections, not timed entries).
LONG_TERM = [
    fact(
        "",
        "People",
        """
- Anna: my younger sister, graphic designer, two kids (Leo 6, Mila 3).
- Tom: my partner, teaches physics at the Humboldt-Gymnasium.
- Priya Raman: my manager at Nordlicht since March 2025.
- Li Wei (李伟): backend lead in the Shanghai office, we pair on the sync service.
- Claire Dubois: product designer in Lyon, writes to me in French.
- Kenji Sato: old university friend, lives in Tokyo, works at a game studio.
""",
        (K, "Priya Raman"),
        (P, "who is my boss"),
        (K, "Kenji Sato"),
    ),
    fact(
        "",
        "Health",
        """
- Allergic to penicillin (rash in 2019). Amoxicillin is also out.
- Blood type A negative.
- Dentist: Dr. Weber, Kastanienallee 12, cleaning every six months.
- GP: Dr. Hoffmann, Praxis am Arkonaplatz, phone 030 4471 2290.
""",
        (P, "which antibiotics must I avoid"),
        (K, "Dr. Hoffmann phone"),
        (X, "¿a qué medicamento soy alérgica?"),
    ),
    fact(
        "",
        "Home and admin",
        """
- Flat: Zionskirchstraße 31, 3rd floor left; landlord Herr Schulz (Hausverwaltung Schulz & Partner).
- Car: grey Škoda Fabia, plate B-MK 2291, TÜV due in April 2027.
- Health insurance: TK, member number X482 117 903.
- Tax adviser: Frau Lindqvist, deadline for the 2025 return is 31 July 2026 (done).
""",
        (K, "B-MK 2291"),
        (P, "who owns the apartment we rent"),
        (K, "TK member number"),
    ),
    fact(
        "",
        "Preferences",
        """
- Coffee: flat white, oat milk. No coffee after 3 pm or I don't sleep.
- Vegetarian since 2021, but eat fish when travelling.
- Window seat on flights, never the last row.
- Running: 5k three times a week, goal is a sub-25 minute 5k.
""",
        (P, "what do I drink in the morning and how"),
        (P, "am I ok with steak or chicken"),
        (X, "quel siège je préfère dans l'avion"),
    ),
    fact(
        "",
        "Work",
        """
- Nordlicht GmbH, senior engineer on Project Falcon (the offline sync engine).
- On-call rotation: one week in six, handover on Mondays at 10:00.
- Laptop asset tag NL-00871; VPN profile "nordlicht-eu".
""",
        (K, "NL-00871"),
        (P, "how often do I carry the pager"),
    ),
]

LOGS = [
    fact(
        "08-24",
        "09:10",
        """
Sprint planning for Falcon: we commit to conflict resolution for offline edits by 18 Sep.
Priya wants a design doc first; I own it, Li Wei reviews the storage part.
""",
        (K, "Falcon conflict resolution design doc"),
    ),
    fact(
        "08-25",
        "19:30",
        """
Anna called: she got the job offer in Porto, starts in October. Kids will go to the
international school there. Mum is sad but proud.
""",
    ),
    fact(
        "08-27",
        "08:05",
        """
Booked flight LH1172 Berlin to Lisbon for 9 Oct, 07:15, seat 14A. Booking code QXT7RZ.
""",
        (K, "LH1172"),
        (K, "QXT7RZ"),
    ),
    fact(
        "08-28",
        "21:40",
        """
Biscuit ate half a bar of dark chocolate from Tom's bag. Called the emergency vet on
Schönhauser Allee, they made him vomit. He is fine now, sleeping on the sofa.
""",
        (P, "the time our pet got poisoned by a sweet"),
        (K, "Biscuit chocolate vet"),
    ),
    fact(
        "08-30",
        "11:00",
        """
Ordered the standing desk from Ergotopia, order #A-58213, delivery in 3–4 weeks. 489 EUR.
""",
        (K, "A-58213"),
        (P, "when will the furniture for working upright arrive"),
    ),
    fact(
        "09-01",
        "10:20",
        """
Incident OPS-4411: the sync queue in eu-central stalled for 40 minutes after the Kafka
broker upgrade. Root cause was a consumer group rebalance loop; rolled back to 3.6.
""",
        (K, "OPS-4411"),
        (P, "why did the message pipeline stop early in September"),
    ),
    fact(
        "09-02",
        "18:15",
        """
Spanish class with Lucía: practised the subjunctive. Homework: write 10 sentences with
"ojalá". Next class Thursday 18:00, her flat in Kreuzberg.
""",
        (K, "ojalá homework"),
    ),
    fact(
        "09-03",
        "13:00",
        """
Li Wei 说存储层的迁移脚本周五之前可以完成，他需要我们提供测试数据。
我答应明天把匿名化的数据集发给他。
""",
        (X, "when will the storage migration script be ready"),
        (K, "迁移脚本"),
    ),
    fact(
        "09-05",
        "08:30",
        """
Ran 5k in 26:40 along the canal. Left knee slightly sore at the end.
""",
    ),
    fact(
        "09-06",
        "20:00",
        """
Dinner at Zur Letzten Instanz with Tom for our 6th anniversary. Had the vegetarian
Königsberger Klopse, surprisingly good. Tom gave me a fountain pen (Lamy 2000).
""",
        (K, "Zur Letzten Instanz"),
        (P, "what gift did my boyfriend give me when we celebrated six years together"),
    ),
    fact(
        "09-08",
        "09:45",
        """
Passport expires 02/2027 — renewal needs an appointment at the Bürgeramt. Booked
Bürgeramt Pankow for 14 Oct, 08:40. Bring biometric photo and old passport.
""",
        (K, "Bürgeramt Pankow"),
        (P, "when do I get a replacement travel document sorted"),
    ),
    fact(
        "09-09",
        "17:20",
        """
Claire m'a envoyé les nouvelles maquettes pour l'écran de synchronisation. Elle veut
un retour avant vendredi, surtout sur les messages d'erreur hors ligne.
""",
        (X, "Claire's new mockups for the sync screen"),
        (K, "maquettes synchronisation"),
    ),
    fact(
        "09-10",
        "07:50",
        """
Knee still hurts on stairs. Physio appointment with Herr Brandt on 16 Sep, 17:00.
""",
        (P, "who is treating my leg joint"),
    ),
    fact(
        "09-12",
        "15:30",
        """
Design doc for Falcon conflict resolution: going with per-field last-writer-wins plus
vector clocks for lists. Rejected CRDT text merging for v1 (too heavy for the mobile client).
""",
        (P, "which strategy did we choose to reconcile changes made while disconnected"),
        (K, "vector clocks"),
    ),
    fact(
        "09-14",
        "10:00",
        """
Wifi at home changed: network "Zion31-5G", password in the password manager under "router".
""",
        (K, "Zion31-5G"),
    ),
    fact(
        "09-15",
        "19:10",
        """
Mum's 65th birthday is on 3 November. Idea: a weekend in the Spreewald with everyone,
booking the Landhotel Burg. Anna might not make it because of the move.
""",
        (P, "plans to celebrate my mother turning sixty-five"),
    ),
    fact(
        "09-16",
        "18:20",
        """
Physio: patellar tendon irritation, no running for two weeks, cycling is fine.
Exercises: eccentric squats 3x15 daily.
""",
        (P, "what did the therapist say about my leg"),
    ),
    fact(
        "09-18",
        "16:45",
        """
Falcon milestone missed: conflict resolution slips to 2 Oct because the mobile team needs
the schema change first. Told Priya; she is OK if the demo still happens on 10 Oct.
""",
        (K, "Falcon milestone 2 Oct"),
    ),
    fact(
        "09-19",
        "12:30",
        """
Kenji から連絡：11月に東京でゲームショーの展示がある。泊まるなら彼の家の近くの
ホテルを紹介してくれるそうだ。
""",
        (X, "Kenji invited me to a game show in Tokyo"),
        (K, "東京 ゲームショー"),
    ),
    fact(
        "09-21",
        "09:00",
        """
Standing desk delivery moved: Ergotopia says 2 Oct now, courier DHL, tracking 00340434161094027.
""",
        (K, "00340434161094027"),
    ),
    fact(
        "09-22",
        "20:30",
        """
Anna: the Porto job fell through — the company froze hiring. She is now talking to a studio
in Lisbon instead. Interview next week.
""",
    ),
    fact(
        "09-24",
        "14:10",
        """
1:1 with Priya: she wants me to present Falcon at the all-hands on 20 Nov and suggests I
apply for staff engineer in the spring cycle.
""",
        (P, "my manager hinted at a promotion"),
        (K, "all-hands 20 Nov"),
    ),
    fact(
        "09-26",
        "11:30",
        """
Recibí la nota del examen DELE B1: aprobado con 78 puntos. ¡Lucía está contentísima!
""",
        (X, "did I pass the Spanish exam"),
        (K, "DELE B1"),
    ),
    fact(
        "09-28",
        "16:00",
        """
Car inspection: the Škoda needs new front brake pads, 210 EUR at Autohaus Grün, booked
for 7 Oct.
""",
        (K, "Autohaus Grün"),
        (P, "what was wrong with the vehicle"),
    ),
    fact(
        "09-30",
        "19:45",
        """
Anna signed with the Lisbon studio (Estúdio Maré). She moves on 15 Oct, flat in Alfama.
""",
        (K, "Estúdio Maré"),
    ),
    fact(
        "10-02",
        "10:15",
        """
Standing desk arrived and is assembled. Set the sitting preset to 72 cm, standing to 112 cm.
""",
        (T, "has the standing desk arrived yet"),
    ),
    fact(
        "10-03",
        "09:30",
        """
Falcon conflict resolution merged behind the flag falcon.merge.v1. Li Wei's migration ran
on staging without errors; production rollout plan for 8 Oct.
""",
        (T, "what is the current status of Falcon conflict resolution"),
        (K, "falcon.merge.v1"),
    ),
    fact(
        "10-05",
        "18:00",
        """
Heute mit Herrn Schulz gesprochen: die Heizung im Bad wird am Donnerstag repariert,
der Handwerker kommt zwischen 8 und 12 Uhr.
""",
        (X, "when is the bathroom heating being fixed"),
        (K, "Heizung Handwerker"),
    ),
    fact(
        "10-06",
        "07:40",
        """
Back to running: easy 3k, knee fine. Physio says build up 10% a week.
""",
        (P, "did my leg recover enough to jog again"),
    ),
    fact(
        "10-07",
        "17:30",
        """
Brake pads done at Autohaus Grün, paid 226 EUR (extra for the wiper blades).
""",
    ),
    fact(
        "10-08",
        "22:10",
        """
Falcon rollout to production: 30% of users. Error rate flat, p95 sync latency went from
1.8 s to 2.1 s; Li Wei is looking into the extra index lookups.
""",
        (P, "how did releasing the offline merge to customers go"),
    ),
    fact(
        "10-09",
        "21:00",
        """
Lisbon: helped Anna with the flat in Alfama all day. Kids love the tram. Dinner at
Taberna da Rua das Flores, best bacalhau I ever had.
""",
        (K, "Taberna da Rua das Flores"),
        (P, "where did we eat the salted cod"),
    ),
    fact(
        "10-12",
        "18:30",
        """
Flight back TP 542 was cancelled; rebooked on easyJet U2 5264 via Lisbon–Berlin 19:50.
TAP promised a refund of 187 EUR, claim number TP-RF-99312.
""",
        (K, "TP-RF-99312"),
        (P, "was my return trip disrupted"),
    ),
    fact(
        "10-14",
        "09:20",
        """
Bürgeramt: passport application done, new one ready in about 4 weeks. Fee 70 EUR.
Collection with the PIN letter.
""",
        (T, "where am I with the passport renewal"),
    ),
    fact(
        "10-15",
        "12:00",
        """
Anna moved into the Alfama flat today. New address: Rua de São Miguel 22, 2º Esq,
1100-544 Lisboa.
""",
        (T, "what is Anna's current address"),
        (K, "Rua de São Miguel 22"),
    ),
    fact(
        "10-16",
        "15:40",
        """
Claire propose de décaler la revue de design à mardi prochain, 14h, parce que
l'équipe mobile n'a pas fini l'intégration.
""",
        (X, "when was the design review moved to"),
    ),
    fact(
        "10-18",
        "10:30",
        """
Spanish: moved up to the B2 group, Saturdays 10:00 at the Instituto Cervantes now,
teacher is Javier. Lucía keeps me for conversation once a month.
""",
        (T, "who teaches my Spanish class now"),
    ),
    fact(
        "10-20",
        "14:00",
        """
Falcon: fixed the latency regression (missing composite index on changes(device_id, seq)).
p95 back to 1.7 s. Rollout to 100% approved by Priya.
""",
        (T, "latest Falcon sync latency"),
        (K, "composite index device_id seq"),
    ),
    fact(
        "10-21",
        "19:00",
        """
Tom got the offer to lead the physics department from January. Extra 450 EUR a month,
but more meetings. He says yes.
""",
        (P, "my partner's new role at school"),
    ),
    fact(
        "10-23",
        "08:15",
        """
Ran 5k in 25:52 — best time this year. Knee fine.
""",
    ),
    fact(
        "10-24",
        "20:00",
        """
Spreewald weekend booked for Mum's birthday: Landhotel Burg, 31 Oct to 2 Nov, three
rooms, 640 EUR total deposit paid. Anna will fly in from Lisbon.
""",
        (T, "final plan for mum's birthday weekend"),
        (K, "Landhotel Burg"),
    ),
    fact(
        "10-27",
        "11:10",
        """
Incident OPS-4520: the mobile app showed duplicate notes after a merge on flaky networks.
Hotfix 4.12.1 dedupes by client id; postmortem on Thursday.
""",
        (K, "OPS-4520"),
        (P, "bug where the phone displayed an item twice"),
    ),
    fact(
        "10-29",
        "16:30",
        """
李伟下个月来柏林出差，11月12日到，住在Alexanderplatz附近。我们计划一起做Falcon的
性能测试。
""",
        (X, "when is Li Wei coming to Berlin"),
        (K, "李伟 柏林"),
    ),
    fact(
        "11-01",
        "21:30",
        """
Spreewald: Mum loved it. Boat tour through Lübbenau in the fog, pickles tasting, Leo fell
asleep in the boat. Everyone came, even Anna with the kids.
""",
        (P, "how did the family weekend for my mother go"),
    ),
    fact(
        "11-03",
        "09:00",
        """
Passport ready for collection at Bürgeramt Pankow; picked it up. New number C4J7 0K2L9,
valid until 11/2036.
""",
        (T, "is the new passport ready"),
        (K, "C4J7 0K2L9"),
    ),
    fact(
        "11-04",
        "13:45",
        """
Kenji: 展示会は11月21日から23日まで、幕張メッセ。チケットを2枚取ってくれた。
""",
        (X, "dates of the game show in Tokyo"),
        (K, "幕張メッセ"),
    ),
    fact(
        "11-05",
        "10:00",
        """
Decided: going to Tokyo 19–26 Nov. Flight NH 224 Frankfurt–Haneda, 19 Nov 13:20.
Hotel Gracery Shinjuku, 6 nights, confirmation 8837201.
""",
        (K, "NH 224"),
        (K, "Hotel Gracery"),
        (P, "where am I staying in Japan"),
    ),
    fact(
        "11-06",
        "18:40",
        """
Tom found Biscuit limping; vet says it's a sprained paw, no walks longer than 15 min for
a week. Anti-inflammatory: Metacam drops once a day with food.
""",
        (P, "what medicine does the dog get"),
        (K, "Metacam"),
    ),
    fact(
        "11-08",
        "12:20",
        """
Priya confirmed: I present Falcon at the all-hands on 20 Nov — but I'm in Tokyo then.
Moved my slot to 27 Nov. Slides due 25 Nov.
""",
        (T, "when is my Falcon all-hands presentation"),
    ),
    fact(
        "11-10",
        "17:00",
        """
Standing desk motor makes a clicking noise. Ergotopia support ticket ERG-22817, they'll
send a technician on 17 Nov.
""",
        (K, "ERG-22817"),
        (P, "problem with the height-adjustable table"),
    ),
    fact(
        "11-12",
        "19:30",
        """
Li Wei is in Berlin. Dinner at Lon Men's Noodle House on Kantstraße. Benchmarked Falcon
sync with 50k devices in the afternoon: 2,300 merges/s, CPU bound in the diff step.
""",
        (P, "throughput of the reconciliation engine in the load test"),
        (K, "Lon Men's Noodle House"),
    ),
    fact(
        "11-13",
        "08:50",
        """
TAP refund arrived: 187 EUR on the Visa card.
""",
        (T, "did I get my money back from TAP"),
    ),
    fact(
        "11-14",
        "15:15",
        """
Claire a validé les messages d'erreur hors ligne. Dernière version des maquettes dans
Figma, page « Sync v2 ». On livre avec la 4.13.
""",
        (X, "which app version ships the new offline error messages"),
    ),
    fact(
        "11-15",
        "10:40",
        """
Tokyo trip change: Kenji's studio moved the exhibition booth setup, so I fly a day earlier,
NH 224 on 18 Nov instead. Hotel extended to 7 nights, same confirmation 8837201.
""",
        (T, "when do I fly to Tokyo"),
    ),
    fact(
        "11-17",
        "11:30",
        """
Ergotopia technician replaced the desk motor. No more clicking.
""",
        (T, "is the standing desk fixed"),
    ),
    fact(
        "11-18",
        "23:10",
        """
東京に着いた。ホテルのチェックインは問題なし。明日はケンジと秋葉原で会う。
""",
        (X, "did I arrive safely in Tokyo"),
    ),
    fact(
        "11-20",
        "20:15",
        """
Akihabara and the studio tour with Kenji. Bought a Famicom for Tom's classroom demo on
signal processing. Ramen at Fuunji in Shinjuku, 40 min queue, worth it.
""",
        (K, "Fuunji"),
        (P, "gift I found for my partner's teaching"),
    ),
    fact(
        "11-21",
        "18:00",
        """
Game show day 1 at Makuhari Messe. Kenji's game "Lantern Drift" had a 2-hour queue.
Anna texted: Leo lost his first tooth.
""",
        (K, "Lantern Drift"),
        (P, "my nephew's baby teeth"),
    ),
]

# Older entries that a "latest" query must not prefer: the same subjects, earlier states,
# are already among LOGS (Anna in Porto, the desk delivery dates, Falcon slips, the flight).

NOTHING = [
    "what is my brother's phone number",
    "when is my dentist appointment for a root canal",
    "which gym membership did I cancel",
    "how much did the new washing machine cost",
    "what's the name of my cat",
    "when did I last visit Rome",
    "my daughter's school report",
    "what mortgage rate did the bank offer",
    "password for the work GitHub account",
    "which wine did we serve at the wedding",
    "what did I plant in the garden this spring",
    "the guitar lesson schedule",
    "Wann war ich zuletzt beim Augenarzt?",
    "¿Cuándo renové el seguro del coche?",
    "quel est le code de la porte du garage",
    "我的护照号码是多少年前换的",
    "how many vacation days are left for 2027",
    "the recipe for grandma's apple strudel",
    "when is the next parent-teacher meeting",
    "which bitcoin wallet did I use",
    "what size are my ski boots",
    "the result of my cholesterol test",
    "who won the office chess tournament",
    "when does the swimming pool open on Sundays",
    "my electricity meter reading",
]

# More queries on the entries above, by day ("MM-DD") or MEMORY.md section.
MORE: dict[str, list[tuple[str, str]]] = {
    "10-15": [(T, "which city does Anna live in now"), (X, "Wo wohnt Anna jetzt?")],
    "11-17": [(T, "standing desk status")],
    "11-15": [(T, "latest Tokyo travel dates"), (X, "東京へのフライトはいつ？")],
    "10-20": [(T, "how many users have the Falcon merge now"), (X, "性能问题是怎么修复的")],
    "10-23": [
        (T, "what is my best 5k time"),
        (T, "how is my knee now"),
        (P, "personal record for the short race"),
    ],
    "10-18": [(T, "what level is my Spanish group at now")],
    "11-03": [(T, "my current passport number")],
    "11-06": [(T, "how is Biscuit doing lately"), (X, "¿qué medicina toma el perro?")],
    "10-21": [(T, "what will Tom's job be from January")],
    "11-12": [(T, "is Li Wei in Berlin yet")],
    "11-14": [
        (T, "latest version of Claire's mockups"),
        (X, "¿qué versión incluye los nuevos mensajes de error?"),
    ],
    "11-13": [(P, "money returned by the airline")],
    "10-07": [(T, "did the car brakes get done"), (P, "how much the mechanic charged in the end")],
    "08-28": [(X, "le chien a mangé du chocolat")],
    "11-05": [(X, "東京のホテルはどこ？")],
    "09-01": [(X, "九月的同步队列事故原因是什么")],
    "10-24": [(X, "Wo feiern wir Mamas Geburtstag?")],
    "09-06": [(X, "¿dónde cenamos en nuestro aniversario?")],
    "10-05": [(X, "quand vient le réparateur pour le chauffage")],
    "09-26": [(X, "Wie viele Punkte hatte ich in der Spanischprüfung?")],
    "10-29": [(X, "李伟さんはいつベルリンに来ますか")],
    "11-18": [(X, "Bin ich gut in Tokio angekommen?")],
    "09-19": [(X, "Kenji m'invite à un salon du jeu vidéo")],
    "Health": [(X, "我对什么药过敏")],
    "People": [(X, "Wer ist meine Chefin?")],
    "10-12": [(X, "mon vol retour a été annulé ?")],
    "09-14": [(P, "name of our internet connection at the apartment")],
    "09-02": [(P, "what assignment did my tutor give me")],
    "09-21": [(P, "which parcel service brings the furniture")],
}

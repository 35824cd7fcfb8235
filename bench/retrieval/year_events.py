"""The long-horizon set's one-off notes: what one person told the assistant once in a year and
may ask about months later, each with the questions that should find it.

Kinds: ``keyword`` (an exact token of the note: a code, a name, a number), ``paraphrase`` (the
meaning, sharing no content word with the note), ``plain`` (a question in the person's own
words, sharing some with the note), ``when`` (asks when it happened: the hit's date is the
answer). The notes are placed evenly over the year by ``year.py``; a note with a fixed day
("MM-DD") keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Event:
    text: str
    questions: tuple[tuple[str, str], ...]
    day: str = ""  # "MM-DD" when the note belongs to a season; "" to be placed evenly
    key: str = field(default="")


K, P, Q, W = "keyword", "paraphrase", "plain", "when"


def ev(text: str, *questions: tuple[str, str], day: str = "") -> Event:
    return Event(" ".join(text.split()), tuple(questions), day)


EVENTS = [
    ev(
        "Lent Marco my cordless drill for his new shelves; he promised it back in two weeks.",
        (P, "who has my power tool at the moment"),
        (W, "when did I lend Marco the drill"),
    ),
    ev(
        "Lent Jana the camping stove and two gas cartridges for her trip to the Harz.",
        (P, "who borrowed our portable cooker"),
        (Q, "who did I lend the camping stove to"),
    ),
    ev(
        "Gave Kenji the folding ladder to paint his hallway, he'll return it after Easter.",
        (P, "where are the steps for reaching the ceiling"),
        day="03-18",
    ),
    ev(
        "The neighbour Frau Okafor has our spare key while we are away; she waters the plants.",
        (P, "which person next door can open our flat"),
        (Q, "who has the spare key"),
    ),
    ev(
        "Bought a Brompton folding bike at Velophil for 1,450 EUR, second hand, 2019 model.",
        (K, "Velophil"),
        (P, "how much did the bicycle that collapses cost"),
        (W, "when did I buy the Brompton"),
    ),
    ev(
        "Bought noise-cancelling headphones, Sony WH-1000XM5, at MediaMarkt for 299 EUR.",
        (K, "WH-1000XM5"),
        (P, "what did I pay for the earphones that block sound"),
    ),
    ev(
        "New winter boots from Zalando, Timberland, size 39. Order number ZL-44170923.",
        (K, "ZL-44170923"),
        (P, "which brand of cold weather footwear did I get"),
    ),
    ev(
        "Ordered a Moccamaster coffee machine from Otto, delivery Thursday, order 7731-55-2.",
        (K, "Moccamaster"),
        (K, "7731-55-2"),
        (W, "when did I order the coffee machine"),
    ),
    ev(
        "Bought a used Fujifilm X-T3 camera from Kleinanzeigen for 620 EUR, with a 35 mm lens.",
        (K, "Fujifilm X-T3"),
        (P, "what photography gear did I get second hand"),
    ),
    ev(
        "Dinner at Ristorante Masaniello with Tom: pizza with friarielli, best in Berlin.",
        (K, "Masaniello"),
        (P, "where did we find great Neapolitan flatbread"),
    ),
    ev(
        "Lunch at Khao Lak Thai on Kastanienallee with Lena; green curry too spicy for me.",
        (K, "Khao Lak"),
        (P, "which Asian place was overly hot in flavour"),
    ),
    ev(
        "Brunch at Café Kuchenrausch with Anna's friend Sofia, good pancakes, slow service.",
        (K, "Kuchenrausch"),
        (P, "where was breakfast nice but the waiters took forever"),
    ),
    ev(
        "Tried the Georgian restaurant Tbilisi Garden: khachapuri and wine, 68 EUR for two.",
        (K, "Tbilisi Garden"),
        (P, "the Caucasus cuisine place and what it cost"),
    ),
    ev(
        "Marco recommended the novel 'The Ministry of Time' by Kaliane Bradley, about time travel.",
        (K, "Ministry of Time"),
        (P, "what book did a friend suggest to me"),
        (W, "when did Marco recommend that novel"),
    ),
    ev(
        "Lena recommended the podcast 'Acquired' for the long train rides, episodes on Nvidia.",
        (K, "Acquired podcast"),
        (P, "which audio show about companies did a coworker suggest"),
    ),
    ev(
        "Kenji told me to watch 'Shōgun' on Disney+, he says episode 4 is the best.",
        (K, "Shōgun"),
        (P, "what series set in feudal Japan was suggested"),
    ),
    ev(
        "Priya suggested a reading group on 'Designing Data-Intensive Applications', Thursdays.",
        (K, "Data-Intensive"),
        (P, "which study circle did my boss propose"),
    ),
    ev(
        "Gym locker code at Berta Block is 2-7-1-9, locker 44 in the women's changing room.",
        (K, "locker 44"),
        (P, "the combination for my cabinet at the climbing hall"),
    ),
    ev(
        "The code for the bike cellar door in our building is 3814#.",
        (P, "how do I get into the basement where bicycles are kept"),
    ),
    ev(
        "Parcel from Etsy for Tom's birthday: DHL tracking JJD000390007781.",
        (K, "JJD000390007781"),
        (P, "following the handmade present delivery"),
    ),
    ev(
        "Dr. Brandt the dermatologist checked the mole on my back: harmless, again in a year.",
        (K, "Dr. Brandt"),
        (P, "what did the skin specialist say"),
        (W, "when did I see the dermatologist"),
    ),
    ev(
        "Eye test at Fielmann: minus 1.75 left, minus 2.0 right. New glasses ready in ten days.",
        (K, "Fielmann"),
        (P, "what is my prescription for seeing far"),
    ),
    ev(
        "Physio with Herr Adeyemi for the knee: six sessions, exercises with the resistance band.",
        (K, "Adeyemi"),
        (P, "who treats my sore joint and how many appointments"),
    ),
    ev(
        "Got the flu shot at the pharmacy on Arkonaplatz, no side effects except a sore arm.",
        (P, "did I get vaccinated against influenza this season"),
        day="10-22",
    ),
    ev(
        "Blood test results: vitamin D low at 18 ng/ml, GP says take 2000 IU daily in winter.",
        (K, "vitamin D"),
        (P, "which supplement should I swallow in the cold months"),
    ),
    ev(
        "Booked the ICE 1005 to Munich for the 14th, car 7 seat 65, booking 4PQ9KX.",
        (K, "4PQ9KX"),
        (K, "ICE 1005"),
        (P, "which rail journey south did I reserve"),
    ),
    ev(
        "Flight EW 8042 to Porto booked for Anna's birthday weekend, seat 3C, code LMV2QA.",
        (K, "LMV2QA"),
        (P, "what reference is the plane trip to visit my sister"),
    ),
    ev(
        "Hotel Casa do Conto in Porto booked for two nights, confirmation 71-0045-883.",
        (K, "Casa do Conto"),
        (P, "where do we sleep on the Portugal weekend"),
    ),
    ev(
        "Rented a cabin in Müritz via Wellenreiter Ferien, 4 nights in August, deposit 200 EUR.",
        (K, "Wellenreiter"),
        (P, "holiday house by the lakes up north, how much was paid upfront"),
    ),
    ev(
        "Tom and I decided to skip Christmas presents and give to Ärzte ohne Grenzen instead.",
        (P, "what did we agree about gifts for the holidays"),
        (W, "when did we decide about Christmas presents"),
    ),
    ev(
        "Decided to keep the Škoda another year rather than buying an e-car now.",
        (P, "did we choose to replace the vehicle"),
    ),
    ev(
        "We agreed that Tom does the cooking on weekdays and I do Saturdays and Sundays.",
        (P, "how did we split preparing meals"),
    ),
    ev(
        "Decided not to renew the Netflix subscription; we keep only Disney+ for now.",
        (Q, "did I cancel Netflix"),
        (P, "which streaming service did we drop"),
    ),
    ev(
        "Gift idea for Mum: a pottery class at Töpferei Lehmkuhl, she mentioned it twice.",
        (K, "Lehmkuhl"),
        (P, "present for my mother, something with clay"),
    ),
    ev(
        "Gift idea for Marco: the Patagonia Nano Puff jacket in green, size L.",
        (K, "Nano Puff"),
        (P, "what could I buy my friend to wear"),
    ),
    ev(
        "Gift idea for Leo: the LEGO Technic crane 42146, he keeps talking about cranes.",
        (K, "42146"),
        (P, "toy for my nephew who loves construction machines"),
    ),
    ev(
        "The plumber from Haustechnik Yilmaz fixed the dripping kitchen tap, invoice 145 EUR.",
        (K, "Yilmaz"),
        (P, "who repaired the leaking faucet and the bill"),
    ),
    ev(
        "Electrician replaced the broken bathroom socket; Hausverwaltung pays, ticket HV-2231.",
        (K, "HV-2231"),
        (P, "the repair of the outlet near the shower"),
    ),
    ev(
        "The washing machine (Bosch Serie 4) shows error E18; the filter was clogged with a sock.",
        (K, "E18"),
        (P, "what was wrong with the laundry appliance"),
    ),
    ev(
        "Chimney sweep comes on the 3rd at 8:00, must clear the hallway to the boiler.",
        (P, "when is the flue cleaning man coming"),
    ),
    ev(
        "Spanish lesson with Lucía: preterite vs imperfect, homework exercise 12 on page 88.",
        (K, "page 88"),
        (P, "what language assignment is due"),
    ),
    ev(
        "Signed up for the pottery evening course at the Volkshochschule Pankow, Wednesdays 18:30.",
        (K, "Volkshochschule"),
        (P, "what weekly class did I enrol in"),
    ),
    ev(
        "Tickets for Bonobo at Tempodrom, row 12 seats 21 and 22; Tom is coming.",
        (K, "Bonobo"),
        (P, "which electronic music show are we going to and where do we sit"),
    ),
    ev(
        "Tickets for the Berliner Philharmoniker, Mahler 5, block C, for Mum's visit.",
        (K, "Mahler"),
        (P, "classical orchestra evening with my mother"),
    ),
    ev(
        "Went to the Hamburger Bahnhof exhibition of Anselm Kiefer with Kenji; huge paintings.",
        (K, "Kiefer"),
        (P, "which artist's show did I see with my friend from Tokyo"),
    ),
    ev(
        "Lena is leaving Nordlicht for Zalando at the end of the quarter; farewell drinks TBD.",
        (P, "which coworker quits and where is she going"),
        (W, "when did Lena say she was leaving"),
    ),
    ev(
        "Performance review with Priya: 'exceeds expectations', raise of 6 % from April.",
        (P, "how did my yearly evaluation go and the salary increase"),
        day="02-20",
    ),
    ev(
        "Incident INC-5512: the export job ran out of memory on the big tenant; added paging.",
        (K, "INC-5512"),
        (P, "why did the data dump crash"),
    ),
    ev(
        "Conference talk accepted at FOSDEM-like 'SyncConf' in Ghent, slot Saturday 11:00.",
        (K, "SyncConf"),
        (P, "where will I present at a tech event"),
    ),
    ev(
        "The team offsite is at Gut Boltenhof, two days, bus leaves at 9 from the office.",
        (K, "Boltenhof"),
        (P, "where is the retreat with colleagues"),
    ),
    ev(
        "Biscuit's vet Dr. Neumann: teeth cleaning needed, booked for a Tuesday morning, 380 EUR.",
        (K, "Dr. Neumann"),
        (P, "dental treatment for the dog and its price"),
    ),
    ev(
        "Biscuit got a new microchip registration at Tasso, number 276098106543210.",
        (K, "Tasso"),
        (P, "where is the pet's identification registered"),
    ),
    ev(
        "Found a dog sitter for Biscuit: Emre from the third floor, 15 EUR a walk.",
        (K, "Emre"),
        (P, "who looks after the pet when we're out and what it costs"),
    ),
    ev(
        "Tom's blood pressure is a bit high; his doctor wants him to cut salt and walk more.",
        (P, "what health advice did my partner get"),
    ),
    ev(
        "Mum's new hip operation is scheduled at the Charité, she'll stay five days.",
        (P, "when and where is my mother's surgery"),
        (W, "when did we hear about Mum's operation"),
    ),
    ev(
        "Anna's Leo lost his first tooth; the tooth fairy brought him a two-euro coin.",
        (P, "which milestone did my nephew reach"),
    ),
    ev(
        "Kenji is getting married in Kyoto next spring, invitation arrives by post.",
        (P, "which friend has a wedding in Japan"),
    ),
    ev(
        "Marco and Jana broke up after four years; he's staying at his brother's for now.",
        (P, "whose relationship ended"),
    ),
    ev(
        "Sofia from the book club lent me 'Klara and the Sun'; give it back at the next meeting.",
        (P, "whose Ishiguro copy do I have"),
    ),
    ev(
        "Book club picked 'Tomorrow, and Tomorrow, and Tomorrow' for the next month.",
        (K, "Tomorrow, and Tomorrow"),
        (P, "what is the reading circle's upcoming title"),
    ),
    ev(
        "Paid the Rundfunkbeitrag for the year, 220.32 EUR, reference 448 912 337.",
        (K, "Rundfunkbeitrag"),
        (P, "the public broadcasting fee, how much"),
    ),
    ev(
        "Tax refund from the Finanzamt: 1,134 EUR arrived on the account.",
        (K, "Finanzamt"),
        (P, "how much money came back from the government this year"),
    ),
    ev(
        "Opened a savings account at DKB, IBAN ending 4417, for the holiday fund.",
        (K, "DKB"),
        (P, "which bank holds the vacation money"),
    ),
    ev(
        "Cancelled the Vodafone landline; final bill 23.90 EUR, router must go back by post.",
        (K, "Vodafone"),
        (P, "what do I need to return after ending the home phone contract"),
    ),
    ev(
        "Switched electricity to Ostrom, 29.8 cents per kWh, starts next month.",
        (K, "Ostrom"),
        (P, "who supplies our power now and at what price"),
    ),
    ev(
        "Renewed the ADAC membership, Plus tier, member number 112 778 430.",
        (K, "ADAC"),
        (P, "roadside assistance club identifier"),
    ),
    ev(
        "Passport renewal appointment at Bürgeramt Pankow on the 14th at 08:40, bring photo.",
        (K, "Bürgeramt"),
        (P, "when is my slot at the citizens' office for the travel document"),
    ),
    ev(
        "Donated blood at the DRK centre, 500 ml; next donation possible in 12 weeks.",
        (K, "DRK"),
        (P, "when can I give plasma or similar again"),
    ),
    ev(
        "Climbing with Marco: finally sent the orange 6b+ overhang at Berta Block.",
        (P, "which bouldering route did I complete"),
    ),
    ev(
        "Ran the Müggelsee half marathon in 1:58:41; knee held up fine.",
        (K, "Müggelsee"),
        (P, "my time in the 21 km race"),
    ),
    ev(
        "Swimming at Stadtbad Neukölln, 1.5 km; the Roman-style hall is beautiful.",
        (K, "Stadtbad Neukölln"),
        (P, "historic pool where I did laps"),
    ),
    ev(
        "Tom's school trip to Weimar means I'm alone with Biscuit from Monday to Thursday.",
        (P, "when is my partner away with his pupils"),
    ),
    ev(
        "Anna sent the kids' school photos; Mila wore the dress Mum knitted.",
        (P, "what did my niece wear in her picture"),
    ),
    ev(
        "Kenji's studio released its game 'Lantern Drift' on Steam; bought it to support him.",
        (K, "Lantern Drift"),
        (P, "what did my friend in Tokyo's company publish"),
    ),
    ev(
        "Took the car to ATU for new winter tyres, Continental WinterContact, 480 EUR fitted.",
        (K, "WinterContact"),
        (P, "what did the cold-season wheels cost"),
        day="10-30",
    ),
    ev(
        "Parking fine of 35 EUR for the Kastanienallee loading zone; paid online, ref BV-77213.",
        (K, "BV-77213"),
        (P, "the ticket for leaving the vehicle where I shouldn't"),
    ),
    ev(
        "The car's TÜV inspection passed with minor notes on the rear brake discs.",
        (K, "TÜV"),
        (P, "result of the roadworthiness check"),
    ),
    ev(
        "Repotted the monstera and the olive tree on the balcony; used the peat-free soil.",
        (P, "which houseplants got bigger containers"),
    ),
    ev(
        "Bought a Weber kettle grill for the allotment, 189 EUR at Hornbach.",
        (K, "Hornbach"),
        (P, "what barbecue did I get for the garden plot"),
    ),
    ev(
        "New router password for the guest network: 'Lindenblatt-2026', SSID Corvid-Guest.",
        (K, "Lindenblatt"),
        (P, "how can visitors get online at our place"),
    ),
    ev(
        "Our building's caretaker is Herr Petrović, phone 0176 5520 1187, mornings only.",
        (K, "Petrović"),
        (P, "who maintains the house and how do I reach him"),
    ),
    ev(
        "Tom's grandmother Ilse turned 90; big lunch in Potsdam with the whole family.",
        (P, "which relative had a milestone birthday"),
    ),
    ev(
        "Marco's new flat is in Friedrichshain, Boxhagener Straße 71, fourth floor, no lift.",
        (K, "Boxhagener"),
        (P, "where does my climbing buddy live now"),
    ),
    ev(
        "Learned that Priya has twins due in the summer; she'll take eight months off.",
        (P, "why will my boss be on leave"),
    ),
    ev(
        "Kenji's address for postcards: 3-14-2 Kichijoji Honcho, Musashino, Tokyo.",
        (K, "Kichijoji"),
        (P, "where should I mail something to my Japanese friend"),
    ),
    ev(
        "Sofia's birthday is on the 19th of June; she likes orchids and dark chocolate.",
        (P, "which flowers does the book club friend enjoy"),
    ),
    ev(
        "Watched 'The Zone of Interest' at the Babylon cinema; nobody talked afterwards.",
        (K, "Zone of Interest"),
        (P, "the film that left everyone silent"),
    ),
    ev(
        "Our wedding anniversary dinner is booked at Nobelhart & Schmutzig, 19:30, prepaid.",
        (K, "Nobelhart"),
        (P, "where are we celebrating being married"),
    ),
    ev(
        "Tom wants to learn the cello; found a teacher, Frau Lindgren, 40 EUR an hour.",
        (K, "Lindgren"),
        (P, "what instrument will my partner study and with whom"),
    ),
    ev(
        "Anna's friend in Porto recommended the bakery Castro for pastéis de nata.",
        (K, "Castro"),
        (P, "where to buy Portuguese custard tarts"),
    ),
    ev(
        "I'm allergic to walnuts too, discovered at Sofia's dinner: itchy throat within minutes.",
        (P, "which tree nut gives me a reaction"),
        (W, "when did I find out about the walnut reaction"),
    ),
    ev(
        "My blood type is A negative, confirmed on the donor card.",
        (K, "A negative"),
        (P, "what is my haemotype group"),
    ),
    ev(
        "Passport number C4X7R2K91, valid until 2031.",
        (K, "C4X7R2K91"),
        (P, "my travel identity document details"),
    ),
    ev(
        "Tom's shoe size is 44 and he prefers merino socks, no cotton.",
        (P, "what foot measurement does my partner have"),
    ),
    ev(
        "Our landlord Herr Schulz agreed we may put a washing line on the balcony.",
        (P, "are we allowed to dry clothes outside on the terrace"),
    ),
    ev(
        "Health insurance TK confirmed the physio reimbursement, case number 2026-88-1190.",
        (K, "2026-88-1190"),
        (P, "did my insurer agree to pay for the therapy sessions"),
    ),
    ev(
        "The allotment association fee is 310 EUR a year, due by the end of March.",
        (P, "what does our garden club membership cost"),
    ),
    ev(
        "Met Jana's new partner Rafael at the flea market on Mauerpark; he restores old radios.",
        (K, "Rafael"),
        (P, "what does my friend's boyfriend do as a hobby"),
    ),
    ev(
        "The bathroom mould came back; bought an anti-mould paint by Alpina, wall behind the tub.",
        (K, "Alpina"),
        (P, "what did I do about the fungus near the shower"),
    ),
    ev(
        "Tom's parents gave us their old piano; moving company Piano Express charges 350 EUR.",
        (K, "Piano Express"),
        (P, "how much to transport the instrument from my in-laws"),
    ),
    ev(
        "Cat sitting for Lena's cat Mochi while she's in Lisbon; feed twice a day, no milk.",
        (K, "Mochi"),
        (P, "whose pet am I minding and what are the rules"),
    ),
    ev(
        "Learned to make shakshuka from Sofia; the trick is cumin and a lid on the pan.",
        (P, "what's the secret for the egg and tomato dish"),
    ),
    ev(
        "Emergency: water leak from the flat above into our kitchen; insurance claim S-4410-22.",
        (K, "S-4410-22"),
        (P, "what happened when the upstairs neighbour flooded us"),
    ),
    ev(
        "The new phone is a Pixel 8a, bought refurbished at Back Market for 329 EUR.",
        (K, "Pixel 8a"),
        (P, "which mobile did I buy and from where"),
    ),
    ev(
        "Printer ink for the Brother HL-L3270 is TN-247; ordered four cartridges.",
        (K, "TN-247"),
        (P, "which toner does our printing device need"),
    ),
    ev(
        "Our internet provider 1&1 raised the price to 44.99 EUR a month from next quarter.",
        (P, "how much does the broadband cost now"),
    ),
    ev(
        "Went to the Christmas market at Gendarmenmarkt with Tom; the mulled wine was 5 EUR.",
        (P, "how much was a cup of hot spiced drink at the festive fair"),
        day="12-14",
    ),
    ev(
        "New Year's Eve at Marco's place, fireworks from his roof; came home at 3.",
        (P, "where did we celebrate the start of January"),
        day="12-31",
    ),
    ev(
        "Easter with Tom's parents in Potsdam; egg hunt in the garden for the cousins.",
        (P, "where did we spend the spring holiday with bunnies"),
        day="04-05",
    ),
    ev(
        "Tom's birthday: we went to the Spreewald and paddled for three hours.",
        (P, "what did we do for my partner's special day"),
        day="07-11",
    ),
    ev(
        "My birthday: Tom organised a surprise picnic at Tempelhofer Feld with everyone.",
        (P, "how did I celebrate turning a year older"),
        (W, "when was my birthday picnic"),
        day="05-23",
    ),
    ev(
        "Summer holiday booked: Sardinia, Agriturismo Sa Mandra, 10 nights from 3 August.",
        (K, "Sa Mandra"),
        (P, "where will we stay on the Italian island"),
    ),
    ev(
        "Anna's kids stayed with us for a week; Leo learned to ride a bike at Mauerpark.",
        (P, "when did my nephew master cycling and where"),
    ),
    ev(
        "Signed the lease extension: the flat is ours until 2029, rent fixed for two years.",
        (P, "how long may we stay in our apartment"),
    ),
    ev(
        "Sold the old IKEA sofa on Kleinanzeigen for 120 EUR; the buyer picked it up Sunday.",
        (P, "what did I get for the couch I got rid of"),
    ),
    ev(
        "The Falcon release 2.0 went out on time; Priya brought cake for the team.",
        (K, "Falcon 2.0"),
        (P, "was the big product launch delivered on schedule"),
    ),
    ev(
        "Company laptop swapped for a new ThinkPad X1 Carbon, asset tag NL-01420.",
        (K, "NL-01420"),
        (P, "the identifier of my work computer"),
    ),
    ev(
        "VPN certificate expires on the 30th; renew through the IT portal, ticket IT-9034.",
        (K, "IT-9034"),
        (P, "what do I need to do before remote access stops working"),
    ),
    ev(
        "Lunch with the new designer Amara, she came from Spotify and loves bouldering.",
        (K, "Amara"),
        (P, "what do I know about the newly hired UX person"),
    ),
    ev(
        "Mentoring the intern Felix on the sync protocol; weekly check-ins on Wednesdays.",
        (K, "Felix"),
        (P, "which student do I guide at work and how often"),
    ),
    ev(
        "Moved my dentist cleaning appointment at Dr. Weber's because of the offsite.",
        (P, "why did I reschedule the teeth visit"),
    ),
    ev(
        "Hearing test: slight loss at high frequencies in the left ear, check again in two years.",
        (P, "what did the audiology exam find"),
    ),
    ev(
        "Marco's band 'Kiezfunk' plays at Lido on the 9th; promised to come.",
        (K, "Kiezfunk"),
        (P, "which group is my friend in and when is the gig"),
    ),
    ev(
        "Bought a used piano bench at Kleinanzeigen in Pankow for 45 EUR.",
        (P, "what did the seat for the keyboard instrument cost"),
    ),
    ev(
        "Volunteered at the Tafel food bank on Saturday morning, sorting vegetables.",
        (K, "Tafel"),
        (P, "where did I help out handing out groceries to people in need"),
    ),
    ev(
        "The bakery Zeit für Brot now opens at 7; the cinnamon rolls sell out by 10.",
        (K, "Zeit für Brot"),
        (P, "when do the sweet buns run out"),
    ),
    ev(
        "Jana's daughter Ronja was born, 3,240 g, both are well.",
        (K, "Ronja"),
        (P, "my friend's baby, how heavy"),
    ),
]

# More questions of when something happened, by the start of their note.
WHEN = {
    "Bought a used Fujifilm": "when did I buy the camera",
    "Tickets for Bonobo": "when did I get the concert tickets for Bonobo",
    "Eye test at Fielmann": "when was my eye test",
    "Physio with Herr Adeyemi": "when did I start physio for the knee",
    "Blood test results": "when did I get the blood test results",
    "Booked the ICE 1005": "when did I book the train to Munich",
    "Rented a cabin in Müritz": "when did I rent the cabin",
    "The plumber from Haustechnik": "when was the kitchen tap fixed",
    "Signed up for the pottery": "when did I sign up for pottery",
    "Biscuit's vet Dr. Neumann": "when did the vet say Biscuit needs his teeth cleaned",
    "Mum's new hip operation": "when is Mum's hip operation scheduled",
    "Jana's daughter Ronja": "when was Ronja born",
    "Kenji is getting married": "when did Kenji tell me about his wedding",
    "Ran the Müggelsee half": "when did I run the half marathon",
    "Took the car to ATU": "when did the car get winter tyres",
    "Signed the lease extension": "when did we sign the lease extension",
    "Sold the old IKEA sofa": "when did I sell the sofa",
    "The Falcon release 2.0": "when did Falcon 2.0 ship",
    "Emergency: water leak": "when was the water leak in the kitchen",
    "Donated blood at the DRK": "when did I last donate blood",
    "Marco's new flat": "when did Marco move to Friedrichshain",
    "Switched electricity to Ostrom": "when did we switch the electricity provider",
}

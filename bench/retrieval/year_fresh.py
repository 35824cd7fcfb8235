"""Twenty more facts from the year that change, each with its dated versions and questions."""

from __future__ import annotations

from bench.retrieval.year_events import P, Q
from bench.retrieval.year_series import Changed, changed

FRESH: list[Changed] = [
    changed(
        "door-code",
        ("2025-12-04", "Front door code for the building is 2580#, in case a courier asks."),
        ("2026-05-14", "Downstairs keypad is 7194 + bell key since the Hausverwaltung swapped it."),
        qs=(
            (Q, "what is the code for the front door"),
            (P, "digits to get into our apartment block"),
        ),
    ),
    changed(
        "hairdresser",
        ("2025-12-18", "Haircut with Selin at Salon Kamm on Kastanienallee, 38 EUR."),
        (
            "2026-03-26",
            "Selin's moved to Hamburg. Tried Marek at Barbiere Rosso on Oderberger Str., "
            "booking him every six weeks from now on.",
        ),
        qs=((Q, "who cuts my hair"), (P, "which stylist do I visit these days")),
    ),
    changed(
        "mila-piano",
        ("2026-01-09", "Anna says Mila's piano teacher is Frau Lindqvist, Tuesdays after school."),
        (
            "2026-09-15",
            "Mila has lessons with a student from the conservatoire now, Jakob Reimer; "
            "Frau Lindqvist stayed behind in Porto.",
        ),
        qs=((Q, "who is Mila's piano teacher"), (P, "who teaches my niece the keyboard")),
    ),
    changed(
        "neighbour-upstairs",
        (
            "2025-12-07",
            "Upstairs neighbour Herr Dietrich took in our parcel again; brought him cookies.",
        ),
        (
            "2026-06-11",
            "Herr Dietrich moved out. A couple with a baby, Ines and Karim, live above us now.",
        ),
        qs=((Q, "who lives upstairs from us"), (P, "the folks one storey higher in our house")),
    ),
    changed(
        "spanish-class",
        (
            "2026-01-12",
            "Signed up for the Spanish A2 course at the Volkshochschule Pankow, "
            "Wednesday evenings.",
        ),
        ("2026-04-20", "Moved my Spanish to Thursdays at 19:00, the Wednesday group was too full."),
        (
            "2026-10-05",
            "Dropped the VHS class; now doing Spanish with a tutor on italki, "
            "Sunday mornings at 10.",
        ),
        qs=(
            (Q, "when is my Spanish lesson"),
            (P, "what time each week do I study the language of Madrid"),
        ),
    ),
    changed(
        "vet",
        ("2025-12-16", "Biscuit's vet is Tierarztpraxis Jansen on Bernauer Str., jabs due in May."),
        (
            "2026-07-08",
            "Found someone closer for Biscuit: Dr. Okafor at the Kleintierpraxis Mauerpark.",
        ),
        qs=((Q, "who is Biscuit's vet"), (P, "which animal doctor do we take the pup to")),
    ),
    changed(
        "dog-walker",
        (
            "2026-02-03",
            "Lukas from next door walks Biscuit at lunch on office days, 10 EUR a walk.",
        ),
        (
            "2026-08-27",
            "Lukas started his apprenticeship, so the Hundetagesstätte Pfotenglück picks "
            "Biscuit up on Tuesdays and Thursdays.",
        ),
        qs=(
            (Q, "who walks Biscuit when I'm at the office"),
            (P, "who minds the dog while I commute"),
        ),
    ),
    changed(
        "electricity",
        ("2025-12-22", "Electricity is with Vattenfall, customer number 8830 1127 45."),
        (
            "2026-03-05",
            "Switched power to Ostrom, green tariff at 29 ct/kWh, customer no. OS-55129.",
        ),
        qs=((Q, "who is our electricity provider"), (P, "which energy supplier does the flat use")),
    ),
    changed(
        "book-club",
        ("2026-01-20", "Book club meets the first Thursday of the month at Café Lehmann."),
        ("2026-06-04", "Book club moved to Julia's place, still first Thursdays."),
        (
            "2026-11-05",
            "From now on we meet at the Thalia café in the Schönhauser Arcaden, "
            "every other Tuesday.",
        ),
        qs=((Q, "where does the book club meet"), (P, "location of our reading circle gatherings")),
    ),
    changed(
        "streaming",
        ("2025-12-09", "We pay for Netflix Standard, 13.99 a month, on Tom's card."),
        ("2026-02-16", "Cancelled Netflix, got Disney+ instead for when the kids visit."),
        ("2026-08-30", "Dropped Disney+ too, we only have MUBI now, 12.99."),
        qs=(
            (Q, "which streaming service do we pay for"),
            (P, "what film platform subscription is ours"),
        ),
    ),
    changed(
        "office",
        (
            "2025-12-02",
            "Nordlicht office is at Rosenthaler Str. 40, 4th floor; "
            "I take the U8 to Weinmeisterstr.",
        ),
        (
            "2026-09-28",
            "First day in the new building at the Spreespeicher in Friedrichshain, "
            "the whole company moved over the weekend.",
        ),
        qs=((Q, "where is the Nordlicht office"), (P, "the address of my workplace")),
    ),
    changed(
        "hay-fever",
        ("2026-03-10", "Hay fever started early this year; taking cetirizine every morning."),
        (
            "2026-05-25",
            "Cetirizine makes me drowsy, switched to Bilastin in the evening, works better.",
        ),
        qs=((Q, "which hay fever tablet am I taking"), (P, "my antihistamine for pollen allergy")),
    ),
    changed(
        "groceries",
        ("2026-01-25", "Weekly grocery order from REWE delivery, Saturday 8-10 slot."),
        ("2026-07-19", "Knuspr it is from now on, Thursday evenings between 6 and 8, cheaper too."),
        qs=(
            (Q, "where do we order groceries from"),
            (P, "which supermarket brings our weekly food"),
        ),
    ),
    changed(
        "leo-sport",
        ("2025-12-13", "Leo plays football with FC Foz in Porto, training Tuesdays and Fridays."),
        ("2026-04-30", "Leo quit football, he's doing judo now at a dojo in Boavista."),
        qs=((Q, "what sport does Leo do"), (P, "my nephew's after-school activity")),
    ),
    changed(
        "cleaner",
        ("2026-02-07", "Our cleaner Magda comes every second Friday, 60 EUR cash."),
        (
            "2026-10-22",
            "Magda retired. Helpling sends someone called Daria now, "
            "Wednesdays, paid through the app.",
        ),
        qs=((Q, "who is our cleaner"), (P, "who tidies the apartment for us")),
    ),
    changed(
        "caretaker",
        (
            "2025-12-11",
            "Hausmeister is Herr Brandt, 0170 5522 310, for anything broken in the building.",
        ),
        (
            "2026-04-08",
            "Herr Brandt's company lost the contract; Frau Yilmaz looks after the house now, "
            "reachable on 0157 3301 8842.",
        ),
        qs=((Q, "who is the Hausmeister"), (P, "who fixes things in our block when they break")),
    ),
    changed(
        "tom-diet",
        ("2026-01-02", "Tom is doing Veganuary, no animal products all month."),
        ("2026-03-15", "Tom is back to vegetarian, eggs and cheese again, still no meat."),
        (
            "2026-11-12",
            "Tom eats fish again since the holiday in Portugal, pescatarian now, he says.",
        ),
        qs=((Q, "what does Tom eat these days"), (P, "my partner's diet")),
    ),
    changed(
        "spare-key",
        ("2026-02-22", "Spare key is with Frau Albrecht on the ground floor."),
        (
            "2026-08-09",
            "Gave our spare set to Ines and Karim upstairs, since Frau Albrecht is moving "
            "to her daughter's.",
        ),
        qs=((Q, "who has our spare key"), (P, "if we are locked out who can let us in")),
    ),
    changed(
        "health-insurance",
        ("2025-12-19", "Health insurance: TK, member number T 449 102 338."),
        (
            "2026-06-29",
            "Moving to the Barmer from July, their Zusatzbeitrag is lower; card arrives next week.",
        ),
        qs=((Q, "which health insurance am I with"), (P, "which Krankenkasse covers me")),
    ),
    changed(
        "takeaway",
        ("2025-12-14", "Friday takeaway tradition: pizza from Due Forni."),
        ("2026-05-02", "Friday nights we now order from Saigon Kitchen, the pho is amazing."),
        (
            "2026-10-30",
            "New favourite for Friday nights: the Georgian place, Mzivane, "
            "khachapuri for both of us.",
        ),
        qs=(
            (Q, "where do we get takeaway on Fridays"),
            (P, "usual end-of-week delivery dinner spot"),
        ),
    ),
]

"""What a model would search its owner's older notes for, given only a newer version of a
changed fact (``bench/marks_bench.py --judge blind``): written for each newer version by a
model that saw the new note alone (with the ``earlier_notes`` tool's description), not the
older notes, the questions or any result. Keyed by (changed fact, version).
"""

SEARCHED: dict[tuple[str, int], tuple[str, ...]] = {
    ("5k", 1): ("5k personal best",),
    ("5k", 2): ("5k personal best",),
    ("anna-city", 1): ("Anna's address where she lives",),
    ("bike-lock", 1): ("bike lock code",),
    ("book-club", 1): ("book club location",),
    ("book-club", 2): (
        "where we meet every other Tuesday",
        "regular meetup café",
    ),
    ("car", 1): ("car Škoda licence plate",),
    ("caretaker", 1): (
        "house caretaker Hausmeister",
        "Herr Brandt contact",
    ),
    ("cleaner", 1): ("cleaner Magda",),
    ("coffee", 1): ("coffee order oat milk",),
    ("dentist", 1): ("dentist check-up",),
    ("dog-food", 1): ("Biscuit's dog food",),
    ("dog-walker", 1): (
        "who walks Biscuit dog sitter",
        "Lukas dog walking",
    ),
    ("door-code", 1): ("front door keypad code",),
    ("electricity", 1): ("electricity provider",),
    ("gp", 1): ("family doctor GP",),
    ("groceries", 1): ("grocery delivery service",),
    ("gym", 1): ("gym membership",),
    ("hairdresser", 1): ("barber haircut Selin",),
    ("hay-fever", 1): ("allergy medication",),
    ("health-insurance", 1): ("health insurance Krankenkasse",),
    ("home-office", 1): ("home office days",),
    ("leo-sport", 1): ("Leo's sport football",),
    ("manager", 1): ("my manager",),
    ("mila-piano", 1): (
        "Mila's music teacher",
        "Frau Lindqvist lessons",
    ),
    ("mum-home", 1): ("Mum's address",),
    ("neighbour-upstairs", 1): ("upstairs neighbours",),
    ("office", 1): ("office location address",),
    ("phone", 1): ("my phone number",),
    ("project", 1): (
        "my project at work",
        "Project Falcon role",
    ),
    ("rent", 1): ("monthly rent",),
    ("spanish-class", 1): ("Spanish class day and time",),
    ("spanish-class", 2): ("Spanish class",),
    ("spare-key", 1): (
        "who has our spare key",
        "Frau Albrecht spare key",
    ),
    ("streaming", 1): ("streaming subscription Netflix",),
    ("streaming", 2): ("streaming subscriptions",),
    ("takeaway", 1): ("Friday night takeaway",),
    ("takeaway", 2): ("Friday night takeaway",),
    ("tom-diet", 1): ("Tom's diet",),
    ("tom-diet", 2): ("Tom's diet vegetarian",),
    ("tom-school", 1): ("Tom's school",),
    ("vet", 1): ("Biscuit's vet",),
    ("wifi", 1): ("wifi password",),
    ("wifi", 2): ("wifi password",),
}

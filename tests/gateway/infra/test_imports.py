"""An import without the optional packages a library would load for what Corvid never uses:
refused in the importing thread only, the finder placed once and never taken off the import
path (taken off while another thread walks it, it made that thread skip the path finder)."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.process import probe

PROBE = """
import json, sys, threading
sys.path.insert(0, sys.argv[1])
from gateway.infra.imports import import_httpx, without
seen = {}
inside, done = threading.Event(), threading.Event()

def other():
    inside.wait(30)
    import optional_b  # another thread meanwhile: imported as usual
    seen["other"] = optional_b.NAME
    done.set()

asker = threading.Thread(target=other)
asker.start()
with without({"optional_a": "a test", "optional_b": "a test", "optional_c": "a test"}):
    try:
        import optional_a
        seen["refused"] = None
    except ImportError as exc:
        seen["refused"] = str(exc)
    inside.set()
    done.wait(30)
    with without({"optional_a": "a test"}):
        pass  # nested: the outer refusals still hold after it
    try:
        import optional_c
        seen["still"] = "imported"
    except ImportError:
        seen["still"] = "refused"
asker.join(30)
import optional_a  # afterwards, as usual
seen["after"] = optional_a.NAME
finders = [f for f in sys.meta_path if type(f).__name__ == "_NotUsed"]
with without({}):
    pass
seen["finders"] = [len(finders), len([f for f in sys.meta_path if type(f).__name__ == "_NotUsed"])]
import_httpx()
seen["cli"] = [m for m in ("click", "pygments", "rich") if m in sys.modules]
print(json.dumps(seen))
"""


def test_refused_in_the_importing_thread_only_and_the_finder_placed_once(tmp_path: Path):
    for name in ("optional_a", "optional_b", "optional_c"):
        (tmp_path / f"{name}.py").write_text(f"NAME = {name!r}\n")
    seen = probe(PROBE, str(tmp_path))
    assert seen["refused"] == "not imported: used only for a test"
    assert seen["other"] == "optional_b"
    assert seen["still"] == "refused"
    assert seen["after"] == "optional_a"
    assert seen["finders"] == [1, 1]
    # httpx, imported through it, comes without its command-line client
    assert seen["cli"] == []

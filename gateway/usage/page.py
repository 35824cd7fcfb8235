"""The control page's Usage page: daily cost by purpose as an SVG drawn here, and the tables."""

from __future__ import annotations

from datetime import date, timedelta

from aiohttp import web

from agent.model.charge import Purpose
from agent.usage.ledger import Period, UsageLedger
from gateway.services.naming import names
from gateway.usage.report import FIGURES, figures, money
from gateway.web.html import esc, page, table
from gateway.web.respond import BACKEND, GUARD, html_response

DAYS = 30
# One colour per purpose, in the order the legend lists them.
COLOURS = dict(
    zip(
        list(Purpose),
        (
            "#2f6fb0", "#8a5cc2", "#c2782f", "#4f9d69", "#c24f6a", "#2fa3a3",
            "#9a9a2f", "#6b6b6b", "#b05c2f", "#5c7ab0", "#a34fa3",
        ),
        strict=True,
    )
)  # fmt: skip
WIDTH, HEIGHT, LEFT, BOTTOM = 720, 220, 48, 24


def routes(app: web.Application) -> None:
    app.router.add_get("/usage", usage_page)


async def usage_page(request: web.Request) -> web.StreamResponse:
    backend, csrf = request.app[BACKEND], request.app[GUARD].csrf
    config = backend.config
    today = Period.of(backend.clock.now(), config.tz)
    since = (date.fromisoformat(today.day) - timedelta(days=DAYS - 1)).isoformat()
    if not config.layout.usage.exists():
        body = '<p class="empty">No model calls yet.</p>'
        return html_response(page("Usage", body, active="/usage", csrf=csrf))
    ledger = UsageLedger(config.layout.usage, config.tz)
    try:
        daily = list(ledger.daily_by_purpose(since))
        month = ledger.summary(today.month)
        day = ledger.summary(today.day)
        by = {k: ledger.totals(k, since) for k in ("purpose", "chat", "job", "model")}
    finally:
        ledger.close()
    head = (
        f"<p>Today <strong>{money(day['cost'])}</strong> in {day['calls']} calls; this month "
        f"<strong>{money(month['cost'])}</strong> in {month['calls']} calls.</p>"
    )
    body = head + f"<h2>Daily cost, last {DAYS} days</h2>" + chart(daily, since, DAYS)
    titles = {"purpose": "By purpose", "chat": "By chat", "job": "By job", "model": "By model"}
    named = names(config)
    for key, rows in by.items():
        if key == "job":
            rows = [r for r in rows if r["key"] is not None]
        label = named.of_audience if key == "chat" else str
        body += f"<h2>{titles[key]}</h2>" + table(
            ("", *FIGURES),
            ((esc(label(str(r["key"]))), *figures(r)) for r in rows),
            f"No model calls in the last {DAYS} days.",
        )
    return html_response(page("Usage", body, active="/usage", csrf=csrf))


def chart(daily: list[tuple[str, str, float]], since: str, days: int) -> str:
    """Bars of each day's cost, stacked by purpose, with a legend; all in one ``<svg>``."""
    first = date.fromisoformat(since)
    columns = [(first + timedelta(days=i)).isoformat() for i in range(days)]
    stacks: dict[str, dict[str, float]] = {d: {} for d in columns}
    for day, purpose, cost in daily:
        if day in stacks:
            stacks[day][purpose] = stacks[day].get(purpose, 0.0) + cost
    top = max((sum(s.values()) for s in stacks.values()), default=0.0) or 1.0
    plot_h = HEIGHT - BOTTOM - 8
    step = (WIDTH - LEFT) / days
    parts = [
        f'<svg class="usage-chart" viewBox="0 0 {WIDTH} {HEIGHT + 40}" role="img" '
        f'aria-label="Daily cost by purpose, {esc(columns[0])} to {esc(columns[-1])}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<line x1="{LEFT}" y1="{8 + plot_h}" x2="{WIDTH}" y2="{8 + plot_h}" stroke="#999"/>',
        f'<text x="{LEFT - 4}" y="14" text-anchor="end" font-size="11">{money(top)}</text>',
        f'<text x="{LEFT - 4}" y="{8 + plot_h}" text-anchor="end" font-size="11">0</text>',
    ]
    for i, day in enumerate(columns):
        x, base = LEFT + i * step + 1, 8.0 + plot_h
        for purpose in Purpose:
            cost = stacks[day].get(purpose, 0.0)
            if cost <= 0:
                continue
            h = cost / top * plot_h
            base -= h
            parts.append(
                f'<rect x="{x:.1f}" y="{base:.1f}" width="{max(step - 2, 1):.1f}" '
                f'height="{h:.1f}" fill="{COLOURS[purpose]}">'
                f"<title>{esc(day)} {esc(purpose)}: {money(cost)}</title></rect>"
            )
        if i % 7 == 0:
            parts.append(f'<text x="{x:.1f}" y="{HEIGHT - 6}" font-size="11">{esc(day[5:])}</text>')
    seen = sorted({p for _, p, _ in daily}, key=lambda p: list(Purpose).index(Purpose(p)))
    for j, purpose in enumerate(seen):
        x = LEFT + j * 110
        parts.append(
            f'<rect x="{x}" y="{HEIGHT + 16}" width="10" height="10" '
            f'fill="{COLOURS[Purpose(purpose)]}"/>'
            f'<text x="{x + 14}" y="{HEIGHT + 25}" font-size="11">{esc(purpose)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)

"""``corvid setup``'s chat platforms: a Telegram bot and a Discord application."""

from __future__ import annotations

from gateway.contract.events import discord_dm, telegram_private
from gateway.ops import setup_checks as checks
from gateway.ops.setup_ask import Ask, Plan, checked


def telegram(ask: Ask, plan: Plan, wait: float) -> None:
    ask.say("\n2. Telegram (Enter with no token leaves it off)")
    ask.say("   In Telegram, open @BotFather and send /newbot: pick a name and a username")
    ask.say("   ending in 'bot'; BotFather answers with the bot's token (123456:ABC...).")
    var, current = plan.secret("channels.telegram.token", "TELEGRAM_BOT_TOKEN")
    base = plan.expanded("channels.telegram.base_url", "https://api.telegram.org/bot")
    got = checked(ask, "Bot token", current, lambda token: checks.telegram_bot(base, token))
    if got is None:
        return
    token, bot = got
    ask.say(f"   ok: the bot is @{bot.username} ({bot.name})")
    plan.secrets[var] = token
    plan.set("channels.telegram.enabled", True)
    owners = [str(o) for o in plan.get("channels.telegram.allow_from", [])]
    if owners and token == current:
        ask.say(f"   you are {owners[0]} (kept)")
    else:
        owners = _telegram_owner(ask, base, token, bot, owners, wait)
    if owners:
        plan.set("channels.telegram.allow_from", [int(o) for o in owners])
        plan.owner_chat = plan.owner_chat or str(telegram_private(owners[0]))
    _telegram_groups(ask, plan, base, token, bot, wait)


def _telegram_owner(
    ask: Ask, base: str, token: str, bot: checks.TelegramBot, owners: list[str], wait: float
) -> list[str]:
    ask.say(f"   Now send any message to @{bot.username} from your own Telegram account")
    ask.say(f"   (https://t.me/{bot.username}); waiting up to {wait:g} s...")
    try:
        user = checks.first_private_message(base, token, wait)
    except checks.Refused as exc:
        ask.say(f"   could not read it: {exc}")
        return owners
    if user is None:
        ask.say("   no message came; run corvid setup again to try once more")
        return owners
    handle = f", @{user.username}" if user.username else ""
    if not ask.yes(f"   That was {user.name}{handle} (id {user.id}). Is that you?"):
        return owners
    try:  # taken off the bot's queue, so answered here: it is not left without a word
        checks.telegram_say(base, token, user.id, OWNER_HELLO)
    except checks.Refused as exc:
        ask.say(f"   (could not answer it: {exc})")
    return [str(user.id), *(o for o in owners if o != str(user.id))]


OWNER_HELLO = (
    "Hello! Corvid's setup knows you now: you are the one it answers here. It answers for "
    "real once `corvid run` is started."
)


def _telegram_groups(
    ask: Ask, plan: Plan, base: str, token: str, bot: checks.TelegramBot, wait: float
) -> None:
    """The groups the bot answers in (when mentioned or replied to): any kept, and one more
    found when the bot is added to it, if the owner wants one."""
    groups = [str(g) for g in plan.get("channels.telegram.groups", [])]
    if groups:
        ask.say(f"   it answers in the group(s) {', '.join(groups)} (kept)")
    more = " another" if groups else " a"
    if not ask.yes(f"   Should it answer in{more} Telegram group?", default=False):
        return
    ask.say(f"   Add @{bot.username} to the group (if it is there already, send")
    ask.say(f"   /start@{bot.username} in it); waiting up to {wait:g} s...")
    try:
        group = checks.first_group(base, token, wait)
    except checks.Refused as exc:
        ask.say(f"   could not read it: {exc}")
        return
    if group is None:
        ask.say("   nothing came from a group; run corvid setup again to try once more")
        return
    if ask.yes(f"   That was the group “{group.title}” (id {group.id}). Answer there?"):
        plan.set("channels.telegram.groups", [int(g) for g in [*groups, str(group.id)]])


def discord(ask: Ask, plan: Plan) -> None:
    ask.say("\n3. Discord (Enter with no token leaves it off)")
    ask.say("   https://discord.com/developers/applications: New Application, then Bot: Reset")
    ask.say("   Token, and turn on Message Content Intent under Privileged Gateway Intents.")
    var, current = plan.secret("channels.discord.token", "DISCORD_BOT_TOKEN")
    base = plan.expanded("channels.discord.api_base_url", "https://discord.com/api/v10")
    got = checked(ask, "Bot token", current, lambda token: checks.discord_app(base, token))
    if got is None:
        return
    token, app = got
    ask.say(f"   ok: the application is {app.name} ({app.id})")
    if not app.message_content:
        ask.say("   Message Content Intent is off: turn it on (Bot → Privileged Gateway")
        ask.say("   Intents), or Discord closes Corvid's connection.")
    ask.say(f"   Invite it to your server with: {app.invite_url()}")
    plan.secrets[var] = token
    plan.set("channels.discord.enabled", True)
    owners = [str(o) for o in plan.get("channels.discord.allow_from", [])]
    question = f"   The application's owner is {app.owner_name} (id {app.owner_id}). You?"
    if app.owner_id and app.owner_id not in owners and ask.yes(question):
        owners = [app.owner_id, *owners]
    if owners:
        plan.set("channels.discord.allow_from", [int(o) for o in owners])
        plan.owner_chat = plan.owner_chat or str(discord_dm(owners[0]))
    _discord_servers(ask, plan, base, token)


def _discord_servers(ask: Ask, plan: Plan, base: str, token: str) -> None:
    """The servers the bot answers in (all their channels), picked from those it is in."""
    servers = [str(g) for g in plan.get("channels.discord.groups", [])]
    answer = ask.line("   Once it is in your server, Enter picks where it answers (or: skip)", "")
    if answer.lower().startswith("s"):
        return
    try:
        found = checks.discord_servers(base, token)
    except checks.Refused as exc:
        ask.say(f"   could not list its servers: {exc}")
        return
    if not found:
        ask.say("   it is in no server yet: invite it with the link above and run corvid setup")
        ask.say("   again (or put the server's id in channels.discord.groups)")
        return
    for server in found:
        if server.id in servers:
            ask.say(f"   it answers in {server.name} ({server.id}) (kept)")
        elif ask.yes(f"   Should it answer in the server {server.name} ({server.id})?"):
            servers.append(server.id)
    plan.set("channels.discord.groups", [int(g) for g in servers])

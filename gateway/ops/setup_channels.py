"""``corvid setup``'s chat platforms: a Telegram bot (its token, the owner's id from their
first message, which is answered, and the groups it may answer in) and a Discord application
(its token, the invite, the owner, and the servers it may answer in)."""

from __future__ import annotations

from gateway.contract.events import discord_dm, telegram_private
from gateway.ops import setup_checks as checks
from gateway.ops.setup_ask import Ask, Plan, checked


def telegram(ask: Ask, plan: Plan, wait: float) -> None:
    ask.say("\n2. Telegram (Enter with no token leaves it off)")
    ask.say("   In Telegram, open @BotFather and send /newbot: pick a name and a username")
    ask.say("   ending in 'bot'; BotFather answers with the bot's token (123456:ABC...).")
    var, current = plan.secret("channels.telegram.token", "TELEGRAM_BOT_TOKEN")
    base = str(plan.get("channels.telegram.base_url", "https://api.telegram.org/bot"))
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
    return [str(user.id), *(o for o in owners if o != str(user.id))]


def discord(ask: Ask, plan: Plan) -> None:
    ask.say("\n3. Discord (Enter with no token leaves it off)")
    ask.say("   https://discord.com/developers/applications: New Application, then Bot: Reset")
    ask.say("   Token, and turn on Message Content Intent under Privileged Gateway Intents.")
    var, current = plan.secret("channels.discord.token", "DISCORD_BOT_TOKEN")
    base = str(plan.get("channels.discord.api_base_url", "https://discord.com/api/v10"))
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

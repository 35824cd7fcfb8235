"""An inbound message as the journal keeps it until it is answered, as JSON."""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

from gateway.contract.events import Attachment, InboundMessage, SessionKey, parse_command


def dump_inbound(msg: InboundMessage) -> dict[str, Any]:
    return {
        "key": str(msg.key),
        "text": msg.text,
        "sender_id": msg.sender_id,
        "sender_name": msg.sender_name,
        "message_id": msg.message_id,
        "received_at": msg.received_at.isoformat(),
        "attachments": [
            {
                "kind": a.kind,
                "mime_type": a.mime_type,
                "name": a.name,
                "data": base64.b64encode(a.data).decode() if a.data is not None else None,
                "path": a.path,
            }
            for a in msg.attachments
        ],
        "context": list(msg.context),
    }


def load_inbound(d: dict[str, Any]) -> InboundMessage:
    return InboundMessage(
        SessionKey.parse(d["key"]),
        d["text"],
        sender_id=d["sender_id"],
        sender_name=d["sender_name"],
        message_id=d["message_id"],
        received_at=datetime.fromisoformat(d["received_at"]),
        attachments=tuple(
            Attachment(
                a["kind"],
                a["mime_type"],
                a["name"],
                base64.b64decode(a["data"]) if a["data"] is not None else None,
                a["path"],
            )
            for a in d["attachments"]
        ),
        context=tuple(d["context"]),
        command=parse_command(d["text"]),
    )

"""Acting only with the owner's yes: a policy per tool, the gate every call passes, the trail."""

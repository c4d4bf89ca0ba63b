"""Which config and environment values look secret: they never land in a file a run writes."""

from __future__ import annotations

import re
from typing import Any

SECRET_NAME = re.compile(r"SECRET|TOKEN|PASSW|PASSPHRASE|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_?KEY|AUTH|COOKIE|SESSION")
REDACTED = "<redacted>"


FROM_ENVIRONMENT = "<passed through the environment>"
"""What a secret-looking env value becomes in every file a run writes (config.yaml, submitit's pickle)."""


def is_secret_name(name: str) -> bool:
    return SECRET_NAME.search(name.upper()) is not None


def withhold_secrets(config_plain: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The config with secret-looking env values replaced, and those values, which the launcher
    exports into the environment its ranks inherit instead of writing them anywhere."""
    env = dict(config_plain.get("env", {}))
    secrets = {name: value for name, value in env.items() if is_secret_name(name)}
    public = {
        **config_plain,
        "env": {name: FROM_ENVIRONMENT if name in secrets else value for name, value in env.items()},
    }
    return public, secrets

"""The providers' token formats: API keys and tokens whose whole text is the secret.

Pure data for ``core/redaction.py``, which replaces every match. The patterns follow the
``detect-secrets`` and ``gitleaks`` rules and the providers' documented token formats.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_END = r"(?![A-Za-z0-9_-])"  # a token ends where its alphabet does
_START = r"(?<![A-Za-z0-9_-])"


@dataclass(frozen=True, slots=True)
class TokenFormat:
    """A provider's token format: the whole match is the secret.

    ``hints`` are literal substrings every match contains: a text holding none of
    them skips the pattern, so the common case (no secret) costs a few substring
    searches, not a regex scan per provider.
    """

    kind: str
    hints: tuple[str, ...]
    pattern: re.Pattern[str]


def _token(kind: str, hints: tuple[str, ...], pattern: str) -> TokenFormat:
    return TokenFormat(kind, hints, re.compile(pattern))


_AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA")
_GITLAB_PREFIXES = (
    "glpat", "gldt", "glft", "glsoat", "glrt", "glcbt", "glimt", "glptt", "glagent", "gloas", "glffct",
)  # fmt: skip

# Most specific first: a later, looser pattern never sees a token an earlier one took.
TOKEN_FORMATS: tuple[TokenFormat, ...] = (
    _token("anthropic-key", ("sk-ant-",), rf"{_START}sk-ant-[a-z]{{2,8}}\d{{2}}-[A-Za-z0-9_-]{{20,}}{_END}"),
    _token("openai-key", ("sk-",), rf"{_START}sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{{20,}}{_END}"),
    _token("github-token", ("gh",), rf"{_START}gh[pousr]_[A-Za-z0-9]{{36,255}}{_END}"),
    _token("github-token", ("github_pat_",), rf"{_START}github_pat_[A-Za-z0-9_]{{22,255}}{_END}"),
    _token(
        "gitlab-token",
        ("gl",),
        rf"{_START}(?:{'|'.join(_GITLAB_PREFIXES)})-[A-Za-z0-9_-]{{20,1024}}{_END}",
    ),
    _token("gitlab-token", ("GR1348941",), rf"{_START}GR1348941[A-Za-z0-9_-]{{20,50}}{_END}"),
    _token("aws-access-key", _AWS_PREFIXES, rf"{_START}(?:{'|'.join(_AWS_PREFIXES)})[A-Z0-9]{{16}}{_END}"),
    _token("docker-token", ("dckr_",), rf"{_START}dckr_(?:pat|oat)_[A-Za-z0-9_-]{{20,}}{_END}"),
    _token("slack-token", ("xox",), rf"{_START}xox[abprseo]-[A-Za-z0-9-]{{10,}}{_END}"),
    _token(
        "slack-token", ("xapp-",), rf"{_START}xapp-\d-[A-Za-z0-9]{{6,}}-\d{{6,}}-[A-Za-z0-9]{{20,}}{_END}"
    ),
    _token(
        "slack-webhook",
        ("hooks.slack.com",),
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Za-z0-9_]+/[A-Za-z0-9_/]+",
    ),
    _token(
        "discord-webhook",
        ("discord",),
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{30,}",
    ),
    _token(
        "discord-token",
        ("M", "N", "O"),
        rf"{_START}[MNO][A-Za-z0-9_-]{{23,27}}\.[A-Za-z0-9_-]{{6}}\.[A-Za-z0-9_-]{{27,40}}{_END}",
    ),
    _token("stripe-key", ("_live_", "_test_"), rf"{_START}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{16,}}{_END}"),
    _token("stripe-key", ("whsec_",), rf"{_START}whsec_[A-Za-z0-9+/=]{{24,}}{_END}"),
    _token("google-api-key", ("AIza",), rf"{_START}AIza[0-9A-Za-z_-]{{35}}{_END}"),
    _token("google-oauth", ("GOCSPX-",), rf"{_START}GOCSPX-[A-Za-z0-9_-]{{24,}}{_END}"),
    _token("google-oauth", ("ya29.",), rf"{_START}ya29\.[A-Za-z0-9_-]{{20,}}{_END}"),
    _token(
        "azure-key",
        ("Q~",),
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~-])",
    ),
    _token("npm-token", ("npm_",), rf"{_START}npm_[A-Za-z0-9]{{36}}{_END}"),
    _token("pypi-token", ("pypi-AgE",), rf"{_START}pypi-AgE[A-Za-z0-9_-]{{50,}}{_END}"),
    _token("huggingface-token", ("hf_",), rf"{_START}hf_[A-Za-z0-9]{{34,}}{_END}"),
    _token("huggingface-token", ("api_org_",), rf"{_START}api_org_[A-Za-z0-9]{{34}}{_END}"),
    _token("sendgrid-key", ("SG.",), rf"{_START}SG\.[A-Za-z0-9_-]{{22}}\.[A-Za-z0-9_-]{{43}}{_END}"),
    _token("mailgun-key", ("key-",), rf"{_START}key-[0-9a-f]{{32}}{_END}"),
    _token("mailchimp-key", ("-us",), rf"{_START}[0-9a-f]{{32}}-us\d{{1,2}}{_END}"),
    _token("twilio-key", ("SK",), rf"{_START}SK[0-9a-fA-F]{{32}}{_END}"),
    _token("telegram-token", (":AA",), r"(?<![\w:])\d{8,10}:AA[A-Za-z0-9_-]{30,40}(?![A-Za-z0-9_-])"),
    _token("shopify-token", ("shp",), rf"{_START}shp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}{_END}"),
    _token("digitalocean-token", ("_v1_",), rf"{_START}do[opr]_v1_[a-f0-9]{{64}}{_END}"),
    _token("sentry-token", ("sntry",), rf"{_START}sntry[su]_[A-Za-z0-9+/=_]{{40,}}"),
    _token("atlassian-token", ("ATATT",), rf"{_START}ATATT3[A-Za-z0-9_=-]{{50,}}{_END}"),
    _token("linear-key", ("lin_api_",), rf"{_START}lin_api_[A-Za-z0-9]{{40}}{_END}"),
    _token("databricks-token", ("dapi",), rf"{_START}dapi[a-f0-9]{{32}}(?:-\d)?{_END}"),
    _token("vault-token", ("hvs.", "hvb."), rf"{_START}hv[sb]\.[A-Za-z0-9_-]{{24,}}{_END}"),
    _token("postman-key", ("PMAK-",), rf"{_START}PMAK-[a-f0-9]{{24}}-[a-f0-9]{{34}}{_END}"),
    _token("grafana-token", ("glc_",), rf"{_START}glc_[A-Za-z0-9+/]{{32,}}={{0,2}}"),
    _token("groq-key", ("gsk_",), rf"{_START}gsk_[A-Za-z0-9]{{48,}}{_END}"),
    _token("age-secret-key", ("AGE-SECRET-KEY-1",), rf"{_START}AGE-SECRET-KEY-1[0-9A-Z]{{58}}{_END}"),
    _token("newrelic-key", ("NRAK-",), rf"{_START}NRAK-[A-Z0-9]{{27}}{_END}"),
    _token(
        "jwt",
        ("eyJ",),
        rf"{_START}eyJ[A-Za-z0-9_-]{{8,}}\.eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]{{16,}}{_END}",
    ),
)

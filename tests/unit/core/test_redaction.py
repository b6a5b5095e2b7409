"""Secret redaction on the corpus in samples/secrets/: every secret goes, every look-alike stays."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.core.redaction import placeholder, redact

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "secrets"
_MARKED = re.compile("⟦(.*?)⟧", re.DOTALL)


def _cases(name: str) -> list[str]:
    lines = (SAMPLES / name).read_text("utf-8").splitlines()
    return [line.replace("\\n", "\n") for line in lines if line.strip() and not line.startswith("#")]


SECRET_CASES = _cases("secrets.txt")
LOOKALIKES = _cases("lookalikes.txt")


def test_the_corpus_is_big_enough_to_mean_something() -> None:
    assert len(SECRET_CASES) >= 120
    assert len(LOOKALIKES) >= 120
    assert all(_MARKED.search(case) for case in SECRET_CASES)


@pytest.mark.parametrize("case", SECRET_CASES, ids=lambda c: c[:40])
def test_every_secret_in_the_corpus_is_redacted(case: str) -> None:
    secrets = _MARKED.findall(case)
    result = redact(case.replace("⟦", "").replace("⟧", ""))
    assert result.count >= 1
    assert "[REDACTED:" in result.text
    for secret in secrets:
        assert secret not in result.text


@pytest.mark.parametrize("line", LOOKALIKES, ids=lambda c: c[:40])
def test_every_lookalike_survives_verbatim(line: str) -> None:
    result = redact(line)
    assert result.text == line
    assert result.count == 0


# The six kinds that used to pass: (text, the secret, the kind it is redacted as). Fake values.
_TWILIO = "SK" + "5bbc06823caf04375fe0e542fc169188"
_AZURE = "Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXhxdXV4cXV1eHF1dXhxdXV4cXV1eA=="
_TELEGRAM = "123456789:" + "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0"
_DOCKER = "dckr_pat_" + "2b3e36beeb386dfdaacb9b46004"
_HEX = "23a1cb8f9d0e4b7c8a2f6e5d4c3b2a19"
_CONN = "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={};EndpointSuffix=core.windows.net"
FORMERLY_MISSED = [
    (f"docker login -u acme -p {_DOCKER}", _DOCKER, "docker-token"),
    (f"TWILIO_API_KEY={_TWILIO}", _TWILIO, "twilio-key"),
    (f"twilio key {_TWILIO} for the SMS worker", _TWILIO, "twilio-key"),
    (_CONN.format(_AZURE), _AZURE, "azure-key"),
    ("mysql -u root -pS3cretPw42 shop", "S3cretPw42", "password"),
    ("mysqldump -u backup --password=S3cretPw42 --all-databases", "S3cretPw42", "password"),
    (f"alerts bot {_TELEGRAM}", _TELEGRAM, "telegram-token"),
    (f"the API key is {_HEX}, keep it safe", _HEX, "api-key"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "secret", "kind"), FORMERLY_MISSED, ids=lambda v: str(v)[:30])
def test_the_kinds_that_used_to_pass_are_redacted(text: str, secret: str, kind: str) -> None:
    result = redact(text)
    assert secret not in result.text
    assert kind in result.kinds
    assert placeholder(kind) in result.text


# Shapes that carry a secret with no token format and no NAME= before it. Fake values.
_SID = "AC" + "3b9f0e2c7d1a4856b0c9e8f7a6d5c4b3"
_AUTH = "8e4f1c2b9a7d6e5f0a1b2c3d4e5f6a7b"
_GEOCODER = "c0ffee42" * 8
NEW_SHAPES = [
    ("my password for the staging admin is hunter2-Example", "hunter2-Example", "password"),
    ("the password for the staging db: Xk9#mq2LpW, rotate it monthly", "Xk9#mq2LpW", "password"),
    ("db.internal:5432:shop:app:S3cr3tPgPass", "S3cr3tPgPass", "password"),
    ("~/.pgpass holds *:*:*:replicator:rep1\\:Pass", "rep1\\:Pass", "password"),
    ("machine api.acme.dev login deploy password Zq8vN2xLk4", "Zq8vN2xLk4", "password"),
    ("machine gitlab.acme.dev\n  login ci\n  password 'wQ7-pass-word'", "wQ7-pass-word", "password"),
    (f"Twilio: {_SID} / {_AUTH}", _AUTH, "twilio-auth-token"),
    (f"sid {_SID}\ntoken {_AUTH}", _AUTH, "twilio-auth-token"),
    (f"our api key for the geocoder is {_GEOCODER}", _GEOCODER, "api-key"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "secret", "kind"), NEW_SHAPES, ids=lambda v: str(v)[:30])
def test_secrets_in_prose_and_credential_files_are_redacted(text: str, secret: str, kind: str) -> None:
    result = redact(text)
    assert secret not in result.text
    assert kind in result.kinds


def test_a_twilio_account_sid_stays_beside_its_redacted_token() -> None:
    result = redact(f"{_SID}:{_AUTH}")
    assert result.text == f"{_SID}:{placeholder('twilio-auth-token')}"


def test_a_password_named_in_prose_keeps_the_punctuation_after_it() -> None:
    result = redact("the password for the staging db: Xk9#mq2LpW, rotate it monthly")
    assert result.text == "the password for the staging db: [REDACTED:password], rotate it monthly"


def test_a_pgpass_line_keeps_host_database_and_user() -> None:
    result = redact("db.internal:5432:shop:app:S3cr3tPgPass")
    assert result.text == "db.internal:5432:shop:app:[REDACTED:password]"


# A password in a sentence with no "is", ":" or "=" after "password", or after a short name. Fake values.
LOOSE_PASSWORDS = [
    "From now on, use my password hunter2 for the staging admin.",
    "log in with password hunter2",
    "the admin password hunter2 works",
    "set the password to hunter2",
    "my pass is hunter2",
    "pw is hunter2",
    "Passwd hunter2 for the old box",
]


@pytest.mark.parametrize("text", LOOSE_PASSWORDS)
def test_a_password_after_the_bare_word_is_redacted(text: str) -> None:
    result = redact(text)
    assert "hunter2" not in result.text
    assert result.kinds == ("password",)
    assert result.text == text.replace("hunter2", placeholder("password"))


# A passphrase of lower-case words joined by dashes after a password cue goes whole, dashes
# included. Fake values.
_PASSPHRASE = "correct-horse-battery-staple"
PASSPHRASES = [
    f"my password is {_PASSPHRASE}",
    f"use the passphrase {_PASSPHRASE}",
    f"the passphrase is {_PASSPHRASE}.",
    f"log in with password {_PASSPHRASE} please",
    f"set the password to {_PASSPHRASE}",
    f"pw is {_PASSPHRASE}",
    f"my password for the staging admin is {_PASSPHRASE}, rotate it monthly",
    "the passphrase is shrub_quartz_ramble",
]


@pytest.mark.parametrize("text", PASSPHRASES)
def test_a_passphrase_of_dashed_words_after_a_password_cue_is_redacted_whole(text: str) -> None:
    secret = _PASSPHRASE if _PASSPHRASE in text else "shrub_quartz_ramble"
    result = redact(text)
    assert result.kinds == ("password",)
    assert result.text == text.replace(secret, placeholder("password"))


# Words joined by dashes that prose writes after "password": a word prose joins with, fewer
# than four words after "password" (three after "passphrase"), or no space after the cue.
PROSE_WITH_DASHED_WORDS = [
    "the password-reset flow mails a link",
    "password rotation is handled by vault",
    "the passphrase is stored-in-the-vault",
    "the password is easy-to-remember",
    "the password is self-service-reset",
    "the password one-time-use policy",
    "the passphrase is write-only",
    "the password-reset-flow-docs are in docs/ops.md",
    "the passphrase is your-own-secret-words",
]


@pytest.mark.parametrize("line", PROSE_WITH_DASHED_WORDS)
def test_prose_with_dashed_words_after_a_password_cue_survives_verbatim(line: str) -> None:
    result = redact(line)
    assert result.text == line
    assert result.count == 0


# Prose about secrets and look-alikes of the shapes above: none is a secret.
PROSE_ABOUT_SECRETS = [
    "the password field is required",
    "the password for the staging admin is in the vault",
    "my password for root is your-password-1",
    "the password for prod: see the vault entry",
    "the password is stored-in-vault",
    "the password for the db: https://vault.corp/shop/db",
    "pwd: /home/dev/shop-2",
    "api key rotation is documented in docs/ops.md",
    "the api key for the geocoder is documented in docs/ops.md",
    "the token for CI is in the CI variables",
    "machine learning password manager",
    "the default password policy is 12 characters",
    "fixed in 3f2a9c1d4e5b6a7980c1d2e3f4a5b6c7d8e9f0a1",
    "2024-05-01 INFO request 550e8400-e29b-41d4-a716-446655440000 done",
    f"{_SID} is the account SID, the token is in the vault",
    f"{_SID} and commit 3f2a9c1d4e5b6a7980c1d2e3f4a5b6c7d8e9f0a1",
    "2001:db8:85a3:8d3:1319:8a2e:370:7348",
    "00:1a:2b:3c:4d:5e",
    "meeting at 10:30:45",
    "reset your password to continue",
    "use a password manager",
    "password reset emails are slow",
    "store the password SHA-256 hashed",
    "the password argon2id hash is slow on CI",
    "bump the password v2.1 policy",
    "my pass is in the vault",
    "pw is required",
]


@pytest.mark.parametrize("line", PROSE_ABOUT_SECRETS, ids=lambda c: c[:40])
def test_prose_about_secrets_survives_verbatim(line: str) -> None:
    assert redact(line).text == line


def test_prose_around_a_redacted_key_keeps_its_punctuation() -> None:
    result = redact("the API key is 23a1cb8f9d0e4b7c8a2f6e5d4c3b2a19.")
    assert result.text == "the API key is [REDACTED:api-key]."


def test_a_rejected_name_does_not_hide_the_secret_after_it() -> None:
    result = redact('key: "private_key_id": "aa0f6e12b2e768035c1ccf8c1cac3aaed408b487"')
    assert "aa0f6e12b2e768035c1ccf8c1cac3aaed408b487" not in result.text


def test_settings_about_a_secret_are_not_secrets() -> None:
    for line in (
        "password_min_length: 12",
        "token_url=https://auth.acme.dev/token",
        "SECRET_FILE=/run/secrets/db",
    ):
        assert redact(line).text == line


def test_the_placeholder_names_the_kind_and_keeps_the_text_around_it() -> None:
    token = "glpat-" + "Ab3dE6gH9jK2mN5pQ8sT"
    result = redact(f"export GITLAB_TOKEN={token} # for the mirror")
    assert result.text == f"export GITLAB_TOKEN={placeholder('gitlab-token')} # for the mirror"
    assert result.kinds == ("gitlab-token",)


def test_a_url_keeps_its_user_and_host_and_loses_only_the_password() -> None:
    result = redact("postgres://shop:wX9vQ2pL7k@db.internal:5432/shop")
    assert result.text == "postgres://shop:[REDACTED:password]@db.internal:5432/shop"


def test_count_and_kinds_cover_several_secrets_in_one_text() -> None:
    text = "password=hunter2 and AKIA" + "Q3ZT7XW2MBN4KP6R" + " in one line"
    result = redact(text)
    assert result.count == 2
    assert result.kinds == ("aws-access-key", "password")


def test_an_unterminated_private_key_is_redacted_to_the_end() -> None:
    result = redact("here:\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBk3Zq9\nMore")
    assert result.text == "here:\n[REDACTED:private-key]"


def test_redacting_twice_changes_nothing_more_on_the_corpus() -> None:
    for case in SECRET_CASES:
        once = redact(case.replace("⟦", "").replace("⟧", ""))
        twice = redact(once.text)
        assert twice.text == once.text
        assert twice.count == 0


def test_empty_text_is_returned_as_is() -> None:
    assert redact("").text == ""
    assert redact("").count == 0


_SECRETISH = st.sampled_from(
    [
        "password=",
        "token: ",
        "sk-",
        "ghp_",
        "glpat-",
        "AKIA",
        "Bearer ",
        "://u:",
        "@",
        "-----BEGIN ",
        "\n",
        "=",
    ]
)


@settings(max_examples=3 * settings().max_examples, deadline=None)  # 300 in the full profile
@given(st.lists(st.one_of(st.text(max_size=30), _SECRETISH), max_size=12).map("".join))
def test_redact_never_raises_and_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once.text).text == once.text
    assert once.count >= 0


@pytest.mark.timeout(60)  # searched from each command name to the end of the line: minutes
def test_a_line_of_command_names_without_their_flag_is_read_in_linear_time() -> None:
    line = "curl " * 40_000
    assert redact(line).text == line


@pytest.mark.parametrize(
    "command",
    [
        "curl " + "--verbose " * 80 + "-u bob:S3cretPw42",
        "mysql " + "--verbose " * 80 + "-pS3cretPw42 shop",
        "docker login " + "--verbose " * 80 + "-p S3cretPw42",
    ],
    ids=["curl", "mysql", "docker-login"],
)
def test_a_password_flag_far_along_its_command_line_is_still_found(command: str) -> None:
    assert "S3cretPw42" not in redact(command).text


# A quoted secret loses its value, never the quote that closes it: a redacted JSON or .env line
# still parses, and a memory still reads. Fake values.
QUOTED_SECRETS = [
    (
        'Local dev config: DB_PASSWORD="hunter2xyz" in .env.local',
        'Local dev config: DB_PASSWORD="[REDACTED:password]" in .env.local',
    ),
    ("password: 'hunter2xyz'", "password: '[REDACTED:password]'"),
    ('{"password": "hunter2xyz", "user": "app"}', '{"password": "[REDACTED:password]", "user": "app"}'),
    ("mysql -u root -p'S3cretPw42' shop", "mysql -u root -p'[REDACTED:password]' shop"),
    ('deploy --password "hunter2xyz" now', 'deploy --password "[REDACTED:password]" now'),
]


@pytest.mark.parametrize(("text", "redacted"), QUOTED_SECRETS, ids=lambda v: v[:30])
def test_a_quoted_secret_keeps_its_quotes(text: str, redacted: str) -> None:
    assert redact(text).text == redacted


def test_a_json_document_with_a_secret_still_parses_once_redacted() -> None:
    document = {"db": {"password": "hunter2xyz", "api_key": "23a1cb8f9d0e4b7c8a2f6e5d4c3b2a19"}}

    redacted = json.loads(redact(json.dumps(document)).text)

    assert redacted == {"db": {"password": placeholder("password"), "api_key": placeholder("api-key")}}


# What a dependency table maps a package named like a secret to: its version range, a dist-tag,
# a protocol, a path or a git URL. None is a secret; redacted, the manifest no longer parsed.
DEPENDENCIES = [
    '"pbkdf2-password": "1.2.1",',
    '"generate-password": "^1.7.1",',
    '"pass": "0.1.0"',
    '"password": "~2"',
    '"secret-handshake": ">= 18"',
    '"csrf-token": ">=1.2.3 <2.0.0 || 3.x"',
    '"secret-token": "1.0.0-rc.1"',
    '"api-token": "latest"',
    '"password-store": "workspace:*"',
    '"token-bucket": "npm:other-bucket@^1.2.3"',
    '"auth-token": "file:../auth-token"',
    '"my-secret": "git+https://github.com/acme/my-secret.git#v1.2.0"',
    '"secret-sauce": "git+ssh://git@github.com:acme/secret-sauce.git"',
    '"passport-token": "github:acme/passport-token#semver:^1.0"',
    'passlib-password = "^1.7.4"',
    'secret-token = ">=1.4,<2"',
    "generate-password: ^1.7.1",
]


@pytest.mark.parametrize("line", DEPENDENCIES)
def test_a_dependency_named_like_a_secret_keeps_its_version(line: str) -> None:
    assert redact(line).text == line


def test_a_package_json_with_dependencies_named_like_secrets_still_parses_once_redacted() -> None:
    dependencies = {"generate-password": "^1.7.1", "pass": "0.1.0", "mocha": "^11"}
    manifest = json.dumps({"devDependencies": dependencies})
    assert json.loads(redact(manifest).text) == json.loads(manifest)


# Values near a version's shape after a password's name are still passwords. Fake values.
NEAR_VERSIONS = [
    ("DB_PASSWORD=12345678", "12345678"),
    ('password = "1.0.0-Hunter2"', "1.0.0-Hunter2"),
    ('"password": "^hunter2xyz"', "^hunter2xyz"),
    ('"token": "git+https://bot:Xk9mq2LpW7@github.com/acme/shop.git"', "Xk9mq2LpW7"),
    ('"token": "https://a1b2c3d4e5f6a7b8c9d0@github.com/acme/shop.git"', "a1b2c3d4e5f6a7b8c9d0"),
]


@pytest.mark.parametrize(("text", "secret"), NEAR_VERSIONS, ids=lambda v: v[:30])
def test_a_password_near_a_versions_shape_is_still_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text).text

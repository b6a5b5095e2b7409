"""One scripted session for the prompt-cache tests of every client: a convention the user set,
and turns that alternate questions about the project (each with the fact recall should bring to
it) and small talk (nothing should be recalled for it)."""

from __future__ import annotations

BOOT_DIRECTIVE = "Always run ruff format before committing any Python change."
# (what the turn asks, the fact recall should bring to it or None)
TURNS: tuple[tuple[str, str | None], ...] = (
    (
        "Which port does the staging database listen on?",
        "The staging database listens on port 5433 behind the bastion host.",
    ),
    ("Write a haiku about autumn leaves.", None),
    (
        "How are invoice PDFs rendered?",
        "Invoice PDFs are rendered with WeasyPrint from Jinja templates in billing/templates.",
    ),
    ("Tell me a joke about penguins.", None),
    (
        "Where do the CI runners cache pip wheels?",
        "The CI runners cache pip wheels in /var/cache/ci-wheels between jobs.",
    ),
    ("Thanks, that is all for today.", None),
)
FACTS = tuple(fact for _, fact in TURNS if fact)

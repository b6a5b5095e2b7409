"""Commands that find memories for a question or a target: recall, context, boot."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

from graphmem.cli import present
from graphmem.cli.options import F, categories_option, json_option, since_option
from graphmem.cli.state import CliState, pass_state
from graphmem.core.recall_limit import MAX_RECALL_LIMIT, MIN_RECALL_LIMIT, recall_limit_problem

if TYPE_CHECKING:
    from graphmem.core.bundle import ContextBundle


def max_tokens_option(func: F) -> F:
    """``--max-tokens``: the token budget of a context bundle."""
    return click.option(
        "--max-tokens",
        type=click.IntRange(50, 32000),
        default=None,
        help="Token budget of the bundle (default: [recall] context_max_tokens, 1500).",
    )(func)


class RecallLimit(click.IntRange):
    """``--limit``: the recall's bound (``core/recall_limit.py``), refused with the message the
    service and the ``recall`` tool give."""

    def __init__(self) -> None:
        super().__init__(MIN_RECALL_LIMIT, MAX_RECALL_LIMIT)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.INT.convert(value, param, ctx)
        problem = recall_limit_problem(number)
        if problem is not None:
            self.fail(problem, param, ctx)
        return number


class PlanChoice(click.Choice[str]):
    """``--plan``: one of the recall plans (``graphmem.core.fusion.PLANS``), read when click
    needs them (the help, a value to check), so a call that names no plan does not load them."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        from graphmem.core.fusion import PLANS

        return tuple(PLANS)

    @choices.setter
    def choices(self, given: tuple[str, ...]) -> None:
        """``click.Choice`` sets what it was given (nothing): the plans stay the choices."""


def present_bundle(bundle: ContextBundle, *, as_json: bool) -> None:
    """A context bundle as Markdown, or as JSON."""
    if as_json:
        present.echo_json(bundle.to_dict())
    else:
        click.echo(bundle.markdown)


@click.command()
@click.argument("query")
@click.option(
    "-n",
    "--limit",
    type=RecallLimit(),
    default=None,
    help="Most hits to show (default: [recall] limit, 10).",
)
@categories_option("Only this category (repeatable).")
@since_option
@click.option("--history", is_flag=True, help="Include superseded and archived memories.")
@click.option(
    "--plan",
    type=PlanChoice(),
    default=None,
    help="Recall plan (default: [recall] plan in the config, hybrid).",
)
@click.option(
    "--branch",
    default=None,
    metavar="NAME",
    help="See the memories of branch NAME as if checked out on it (default: the checkout's branch).",
)
@click.option("--all-branches", is_flag=True, help="Include every branch's memories, each marked.")
@json_option
@pass_state
def recall(
    state: CliState,
    query: str,
    limit: int | None,
    categories: tuple[str, ...],
    since: datetime | None,
    history: bool,
    plan: str | None,
    branch: str | None,
    all_branches: bool,
    as_json: bool,
) -> None:
    """The memories most relevant to QUERY, best first, and why each was found.

    When no memory is relevant enough it says so and exits 0. Memories written on a
    branch are seen on that branch only (marked "on branch NAME"), unless --all-branches.

    \b
    Example:
        $ graphmem recall "why do payments retry"
        1. [decision] Payments retry 3 times with backoff, see !123
           mem_3f9a1c0b7d2e4a51 · project · 3 days ago · from the user · score 0.82 · why: lexical #1
        $ graphmem recall "refund fees" --all-branches
    """
    if plan != "lexical":  # the model loads while the store opens and searches
        state.warm_model()
        state.service.warm_up()
    result = state.service.recall(
        query,
        project=state.project,
        limit=limit,
        categories=categories or None,
        since=since,
        history=history,
        plan=plan,
        branch=branch if branch is not None else state.branch,
        all_branches=all_branches,
    )
    present.dated(result, as_json=as_json, text=present.hits, view=present.recall_json)


@click.command()
@click.argument("target")
@max_tokens_option
@json_option
@pass_state
def context(state: CliState, target: str, max_tokens: int | None, as_json: bool) -> None:
    """What is known about TARGET: a file, lines of a file (src/x.py:40-52), a symbol, an MR
    (!123), an issue (#4) or a topic.

    Prints a Markdown bundle of the relevant decisions, blockers and facts.

    \b
    Example:
        $ graphmem context src/payments/retry.py
        ## Context for src/payments/retry.py
        - [decision] Payments retry 3 times with backoff, see !123 (3 days ago)
    """
    state.warm_model()
    state.service.warm_up()
    bundle = state.service.get_context(
        target, project=state.project, max_tokens=max_tokens, branch=state.branch
    )
    present_bundle(bundle, as_json=as_json)


@click.command()
@max_tokens_option
@json_option
@pass_state
def boot(state: CliState, max_tokens: int | None, as_json: bool) -> None:
    """What an agent should know at the start of a session (the MCP tool get_boot_context).

    The project's and global directives and preferences, open blockers and recent
    decisions, as a Markdown bundle under a token budget.

    \b
    Example:
        $ graphmem boot
        ## Memory: start of a session
        ### Directives
        - Run the linters before every commit — 2 days ago, `mem_1ec687eb29894501`
    """
    bundle = state.service.boot_context(project=state.project, max_tokens=max_tokens, branch=state.branch)
    present_bundle(bundle, as_json=as_json)


COMMANDS = (recall, context, boot)

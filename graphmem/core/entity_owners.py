"""What a write may change of a stored entity, on a store that keeps owners: decided once.

An entity is one row per key, whoever names it (docs/team.md, "Entities"). On a team's
PostgreSQL store a row has an owner: the person whose own global memory (or ``enrich`` request)
first stored it, or None once it is the team's. A person's write (a memory, an edit of one, an
import, a ref they ask to enrich) names entities; what it does to each row depends on whether
the write is ``shared``: it comes from a memory others see (a project memory, a team-wide
global one). A private global memory, an edit or import of one, and an ``enrich`` request are
not: what a person keeps to themselves never changes what the team is shown.

- absent: it is created as the write gives it, the writer's (a shared write then makes it the
  team's, below);
- the writer's own: it takes the write's name and project, and its title when the write gives
  one (an empty title keeps the stored one);
- the team's: it changes only with a shared write, as above; a private write links its memory
  to it and leaves it as it is;
- another person's private row: a private write leaves it as it is, name, project, title and
  owner (seen through a memory of the writer's own or not); the memory is linked to it all the
  same (nothing of the writer's is lost) and learns nothing of it. A shared write publishes it:
  it becomes the team's, for good, holding what that memory says of it (its name and project;
  its title when it gives one). Publishing is the one way a private row changes hands.

So a shared write changes every row it names, a private one only the writer's own
(``changes``). The GitLab answers' own rules (what an answer finds is owned like what it was
asked about; a daemon writes only on the team's rows and its person's own) are
``core/gitlab_edits.py``'s; a code scan makes the checkout's code the team's
(``adapters/postgres_code.py``).

Kùzu and the fake hold one person's graph: every row is the writer's, so every write changes it
(``changes`` of an owner equal to the writer), which is the same contract seen from one person.
Pure; no I/O. The PostgreSQL store applies it in the statements that write entities
(``adapters/postgres_graph.py``: ``write_entities`` for every write, the writer's own rows;
``link_about`` for a shared memory's, the team's rows and the ones it publishes).
"""

from __future__ import annotations


def changes(owner: str | None, writer: str, *, shared: bool) -> bool:
    """Whether ``writer``'s write changes a stored entity owned by ``owner`` (None: the team's);
    ``shared``: the write comes from a memory others see. A shared write changes (and makes the
    team's) every row it names; a private one only the writer's own, never the team's row nor
    another person's private one."""
    return shared or owner == writer

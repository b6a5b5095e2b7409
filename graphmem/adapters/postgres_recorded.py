"""A team's role's change of a memory's count is in its history (schema 23, docs/team.md, "What psql
can and cannot do"), written by the database.

Schema 20's trigger ``graphmem_change_recorded`` (``postgres_functions.py``) refuses, at the
commit, a team role's change to what a memory says or its standing, or its removal, with no event
of that memory written in the same transaction by the same role: only the role can say what such a
change was. It left out the count of repeats (``reinforced``), which graphmem records since each
repeat became a ``reinforce`` event: a writer's ``UPDATE memories SET reinforced = 1000`` left no
trace. What a change of the count was, the database knows to the letter (the count before and
after), so this version records it rather than refuse it. At the commit, each change of the count
that no ``reinforce`` or ``undo`` event of the transaction by the same role records (its ``after``
holds the count the row now has: graphmem's repeat and its undo write theirs) gets a ``reinforce``
event of its own, written as the role, row-level security and all: the role its ``person``
(``graphmem_person_set``), ``user`` its actor (a person's change, which no agent undoes),
``RECORDED_REASON`` its reason. Two changes of the count in one transaction are two events. An
event of another kind does not count (one graphmem does not know is left out of every read), nor
does one the database wrote: those never stand for the role's record of another change either, so
a change to what the memory says with the count still needs the role's own event. The rest is
schema 20's, an administrator (whom row-level security does not hold) held by none of it.

The migration replaces the function and its two triggers (the count among the columns the update
trigger watches), dropping them first if they are there: applied again it leaves one of each. It
indexes the events by transaction (``memory_events_xact``), which the check reads. Rolled back,
schema 20's are restored and the index dropped; the events written meanwhile stay.
"""

from __future__ import annotations

from graphmem.adapters.postgres_functions import CHANGE_RECORDED_20

# What the database writes as the ``reason`` of an event it records: how a reader, and the check
# of the other changes, tell it from an event a role or graphmem wrote.
RECORDED_REASON = "changed by hand in the database, recorded by graphmem_change_recorded"

_DROP_CHANGE_RECORDED = """
DROP TRIGGER IF EXISTS graphmem_removal_recorded ON memories;
DROP TRIGGER IF EXISTS graphmem_change_recorded ON memories;
DROP FUNCTION IF EXISTS graphmem_change_recorded();
"""

# Every repeat now runs the check at its commit: the index finds the transaction's own events
# (without it, the check of a memory with 5,000 events read all of them: 1.3 ms, with it 0.02).
_XACT_INDEX = "memory_events_xact"

# Schema 23: schema 20's check of the columns it holds, then the record of the count. The event's
# ``owner`` is the memory's, as graphmem writes it (``postgres_events.py``): a global memory's
# history is its owner's alone. Its id is graphmem's form (``evt_`` and 16 hex digits).
COUNT_RECORDED_23 = (
    _DROP_CHANGE_RECORDED
    + f"""CREATE INDEX IF NOT EXISTS {_XACT_INDEX} ON memory_events (xact);
CREATE FUNCTION graphmem_change_recorded() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    recorded boolean;
BEGIN
    IF NOT row_security_active(TG_RELID) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' OR (OLD.text, OLD.category, OLD.status, OLD.trust, OLD.source, OLD.origin,
        OLD.session, OLD.created_at, OLD.valid_from, OLD.valid_to, OLD.expires_at, OLD.branch)
        IS DISTINCT FROM (NEW.text, NEW.category, NEW.status, NEW.trust, NEW.source, NEW.origin,
        NEW.session, NEW.created_at, NEW.valid_from, NEW.valid_to, NEW.expires_at, NEW.branch) THEN
        EXECUTE format('SELECT EXISTS (SELECT FROM %I.memory_events e WHERE e.memory_id = $1 '
            'AND e.xact = pg_current_xact_id() AND e.person = current_user::text AND e.reason <> $2)',
            TG_TABLE_SCHEMA) INTO recorded USING OLD.id, '{RECORDED_REASON}';
        IF NOT recorded THEN
            RAISE EXCEPTION
                'memory % was % with no event in its history: nothing of the transaction was kept', OLD.id,
                CASE TG_OP WHEN 'DELETE' THEN 'deleted' ELSE 'changed' END
                USING ERRCODE = 'insufficient_privilege',
                HINT = 'Change memories with graphmem (edit, confirm, archive, restore, delete), which '
                    'records who did what; by hand, insert the change''s event into memory_events in the '
                    'same transaction (docs/team.md).';
        END IF;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.reinforced IS DISTINCT FROM NEW.reinforced THEN
        EXECUTE format('SELECT EXISTS (SELECT FROM %I.memory_events e WHERE e.memory_id = $1 '
            'AND e.xact = pg_current_xact_id() AND e.person = current_user::text '
            'AND e.kind IN (''reinforce'', ''undo'') AND e.reason <> $3 '
            'AND e.after -> ''reinforced'' = to_jsonb($2))', TG_TABLE_SCHEMA)
            INTO recorded USING OLD.id, NEW.reinforced, '{RECORDED_REASON}';
        IF NOT recorded THEN
            EXECUTE format('INSERT INTO %I.memory_events (id, memory_id, at, kind, actor, reason, '
                'before, after, owner) VALUES ($1, $2, now(), ''reinforce'', ''user'', $3, $4, $5, $6)',
                TG_TABLE_SCHEMA)
                USING 'evt_' || left(md5(gen_random_uuid()::text), 16), OLD.id, '{RECORDED_REASON}',
                jsonb_build_object('reinforced', OLD.reinforced),
                jsonb_build_object('reinforced', NEW.reinforced),
                CASE WHEN NEW.scope = 'global' THEN NEW.owner END;
        END IF;
    END IF;
    RETURN NULL;
END $f$;
CREATE CONSTRAINT TRIGGER graphmem_change_recorded AFTER UPDATE OF text, category, status, trust,
    source, origin, session, created_at, valid_from, valid_to, expires_at, branch, reinforced ON memories
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.text IS DISTINCT FROM NEW.text OR OLD.category IS DISTINCT FROM NEW.category
        OR OLD.status IS DISTINCT FROM NEW.status OR OLD.trust IS DISTINCT FROM NEW.trust
        OR OLD.source IS DISTINCT FROM NEW.source OR OLD.origin IS DISTINCT FROM NEW.origin
        OR OLD.session IS DISTINCT FROM NEW.session OR OLD.created_at IS DISTINCT FROM NEW.created_at
        OR OLD.valid_from IS DISTINCT FROM NEW.valid_from OR OLD.valid_to IS DISTINCT FROM NEW.valid_to
        OR OLD.expires_at IS DISTINCT FROM NEW.expires_at OR OLD.branch IS DISTINCT FROM NEW.branch
        OR OLD.reinforced IS DISTINCT FROM NEW.reinforced)
    EXECUTE FUNCTION graphmem_change_recorded();
CREATE CONSTRAINT TRIGGER graphmem_removal_recorded AFTER DELETE ON memories
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION graphmem_change_recorded();
"""
)
UNDO_COUNT_RECORDED_23 = f"\nDROP INDEX IF EXISTS {_XACT_INDEX};" + _DROP_CHANGE_RECORDED + CHANGE_RECORDED_20

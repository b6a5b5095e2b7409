"""The functions, triggers and row-level security policies graphmem's PostgreSQL schema creates,
as each migration's SQL, and what each may reveal to whom (docs/team.md, "Scopes").

Row-level security (schema 6) hides another person's global memories from the writer and reader
roles. Three ``SECURITY DEFINER`` functions run as the schema's owner, past it, because a role
cannot do its job from what it sees alone; each answers only what the caller may know:

- ``graphmem_term_stats()``: how common words are, for BM25. Since schema 10 the statistics of
  the *shared* memories only (project ones and team-wide global ones, which every role sees):
  an extended statistics object (``memories_shared_terms``) keeps them beside ``terms``' own;
  the caller adds its own global memories' words itself (``postgres_text.py``).
- ``graphmem_remembered(keys)``: which of the given files, symbols or external modules any
  memory is about (a scan keeps them); since schema 10 nothing of other entities (an MR, an
  issue a hidden memory names).
- ``graphmem_move_about(from_key, to_key, entity_kind)``: every link to a moved file, symbol or
  external module follows it; since schema 10 it counts only the links the login may see.

And a trigger (schema 10): only an administrator's role (one row-level security does not apply
to) may change a memory's ``owner`` or ``scope``; the policies' ``USING`` is also their ``WITH
CHECK``, which let a writer make his global memory team-wide (``owner = NULL``). Two more of
schema 13 and 16: the database names the person of each event, session and override
(``graphmem_person_set``), and only an administrator changes or removes an event or an override
(``graphmem_append_only``): the history is append-only for the team's roles. Schema 17's policies
hold the team's roles to graphmem's rules on agent sessions and claims (``SESSIONS_HELD_17``), with
three triggers for the facts they read: a claim's person is its session's
(``graphmem_claim_person``), an override names the transaction that recorded it
(``graphmem_override_xact``), and no team role truncates either table (``graphmem_not_truncated``).
Schema 20's: a team role's change to what a memory says or how much it counts, or its removal,
commits only with an event of that memory written in the same transaction by the same role
(``graphmem_change_recorded``, deferred to the commit; an event names its transaction,
``graphmem_event_xact``), so no row becomes a rule with no trace of who made it; schema 23
replaces it (``postgres_recorded.py``): the database records a change of a memory's count itself.
Schema 21's names who confirmed a memory (``graphmem_confirmed_by``), as ``graphmem_person_set``
names a person.
Schema 22's policy (``graphmem_scoped``) and trigger (``graphmem_project_kept``) let a team's role
write only graphmem's scopes, a project's memory with its project.

Each function's text is frozen in the migration that creates it: a later version replaces it
(``CREATE OR REPLACE``) and rolling that version back restores the one before, so the SQL of
every version is kept here. What versions share to the letter (a function's declaration, the
move of links, its check that only code's links move, its count of those the login sees) is one
constant that no later version edits: a new version writes its own text
(``tests/unit/adapters/test_postgres_functions.py`` holds every version's SQL to its hash). The
schema's name is written in at creation (``current_schema()``) since a ``SECURITY DEFINER``
function's ``search_path`` is pinned.
"""

from __future__ import annotations

# Schema 7: the most common words of every memory, from pg_stats.
TERM_STATS_7 = """
DO $migration$ BEGIN
EXECUTE format(
    'CREATE OR REPLACE FUNCTION %1$I.graphmem_term_stats() '
    'RETURNS TABLE (words text[], shares real[], memories real) LANGUAGE sql STABLE SECURITY DEFINER '
    'SET search_path = pg_catalog, pg_temp AS $f$ '
    'SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples '
    'FROM pg_class c LEFT JOIN pg_stats s ON s.schemaname = %2$L AND s.tablename = %3$L '
    'AND s.attname = %4$L WHERE c.oid = %5$L::regclass $f$',
    current_schema(), current_schema(), 'memories', 'terms', quote_ident(current_schema()) || '.memories');
END $migration$;
"""

# graphmem_remembered as every version declares it: which of the given keys, each once, a memory
# is about (the WHERE that follows says which memories and entities count).
_REMEMBERED_HEAD = """
DO $migration$ BEGIN
EXECUTE format(
    'CREATE OR REPLACE FUNCTION %1$I.graphmem_remembered(keys text[]) '
    'RETURNS SETOF text LANGUAGE sql STABLE SECURITY DEFINER '
    'SET search_path = pg_catalog, pg_temp SET row_security = off AS $f$ '
    'SELECT DISTINCT k FROM unnest(keys) AS k '
"""

# Schema 8: which of the keys any memory is about.
REMEMBERED_8 = (
    _REMEMBERED_HEAD
    + """\
    'WHERE EXISTS (SELECT FROM %1$I.about a WHERE a.entity_key = k) $f$',
    current_schema());
EXECUTE format('GRANT EXECUTE ON FUNCTION %1$I.graphmem_remembered(text[]) TO PUBLIC', current_schema());
END $migration$;
"""
)

# graphmem_move_about as every version declares it, up to the check a SECURITY DEFINER function
# needs: the login itself may insert and delete links (row-level security aside).
_MOVE_ABOUT_HEAD = """
DO $migration$ BEGIN
EXECUTE format(
    'CREATE OR REPLACE FUNCTION %1$I.graphmem_move_about(from_key text, to_key text, entity_kind text) '
    'RETURNS integer LANGUAGE plpgsql VOLATILE SECURITY DEFINER '
    'SET search_path = pg_catalog, pg_temp SET row_security = off AS $f$ '
    'DECLARE moved integer; BEGIN '
    'IF NOT (has_table_privilege(session_user, %2$L::regclass, ''INSERT'') '
    'AND has_table_privilege(session_user, %2$L::regclass, ''DELETE'')) THEN '
    'RAISE EXCEPTION ''permission denied for table about'' USING ERRCODE = ''insufficient_privilege''; '
    'END IF; '
"""

# The move itself, in every version: each link of from_key goes to to_key, kinds alike.
_MOVE_LINKS = """\
    'WITH gone AS (DELETE FROM %1$I.about a USING %1$I.entities o, %1$I.entities n '
    'WHERE a.entity_key = from_key AND o.key = from_key AND o.kind = entity_kind AND n.key = to_key '
    'AND n.kind = entity_kind AND from_key <> to_key RETURNING a.memory_id), '
    'added AS (INSERT INTO %1$I.about (memory_id, entity_key) SELECT g.memory_id, to_key FROM gone g '
    'ON CONFLICT DO NOTHING RETURNING 1) '
"""

# Schema 9: every link moves; the answer counted them all.
MOVE_ABOUT_9 = (
    _MOVE_ABOUT_HEAD
    + _MOVE_LINKS
    + """\
    'SELECT count(*) INTO moved FROM gone; '
    'RETURN moved; END $f$',
    current_schema(), quote_ident(current_schema()) || '.about');
EXECUTE format('GRANT EXECUTE ON FUNCTION %1$I.graphmem_move_about(text, text, text) TO PUBLIC',
    current_schema());
END $migration$;
"""
)

# Schema 10. The memories every role sees: ``SEEN`` (postgres_schema.py) but a role's own. The
# statistics object keeps ``terms``' statistics over these rows only (NULL for the others).
SHARED = "scope <> 'global' OR owner IS NULL"
SHARED_TERMS = "memories_shared_terms"

# The one change a policy cannot see (a policy sees the new row, never the old): who a memory
# belongs to and whether it is global. The trigger's WHEN is resolved at creation, and the
# function's search_path pinned: a caller's search_path cannot stand in for either.
OWNER_KEPT_10 = """
DO $migration$ BEGIN
EXECUTE format(
    'CREATE FUNCTION %1$I.graphmem_owner_kept() RETURNS trigger LANGUAGE plpgsql '
    'SET search_path = pg_catalog, pg_temp AS $f$ BEGIN '
    'IF row_security_active(TG_RELID) THEN '
    'RAISE EXCEPTION ''only an administrator may change the owner or scope of memory %%'', OLD.id '
    'USING ERRCODE = ''insufficient_privilege'', '
    'HINT = ''Write a new memory instead; an administrator hands memories over (docs/team.md).''; '
    'END IF; RETURN NEW; END $f$',
    current_schema());
END $migration$;
CREATE TRIGGER graphmem_owner_kept BEFORE UPDATE OF owner, scope ON memories FOR EACH ROW
    WHEN (OLD.owner IS DISTINCT FROM NEW.owner OR OLD.scope IS DISTINCT FROM NEW.scope)
    EXECUTE FUNCTION graphmem_owner_kept();
"""

# Shares are of the shared memories (pg_stats_ext_exprs' frequencies are of its non-NULL rows),
# ``memories`` how many they are: nothing of a global memory with an owner, whoever asks.
TERM_STATS_10 = f"""
CREATE STATISTICS {SHARED_TERMS} ON (CASE WHEN {SHARED} THEN terms END) FROM memories;
ANALYZE memories;
DO $migration$ BEGIN
EXECUTE format(
    'CREATE OR REPLACE FUNCTION %1$I.graphmem_term_stats() '
    'RETURNS TABLE (words text[], shares real[], memories real) LANGUAGE plpgsql STABLE SECURITY DEFINER '
    'SET search_path = pg_catalog, pg_temp AS $f$ BEGIN '
    'IF NOT has_table_privilege(session_user, %2$L::regclass, ''SELECT'') THEN '
    'RAISE EXCEPTION ''permission denied for table memories'' USING ERRCODE = ''insufficient_privilege''; '
    'END IF; '
    'RETURN QUERY SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, '
    '(c.reltuples * (1 - coalesce(s.null_frac, 0)))::real '
    'FROM pg_class c LEFT JOIN pg_stats_ext_exprs s ON s.statistics_schemaname = %1$L '
    'AND s.statistics_name = %3$L WHERE c.oid = %2$L::regclass; END $f$',
    current_schema(), quote_ident(current_schema()) || '.memories', '{SHARED_TERMS}');
END $migration$;
"""

# Code only: what a scan keeps or moves. An MR or issue a hidden memory names stays unsaid.
REMEMBERED_10 = (
    _REMEMBERED_HEAD
    + """\
    'WHERE EXISTS (SELECT FROM %1$I.about a JOIN %1$I.entities e ON e.key = a.entity_key '
    'WHERE a.entity_key = k AND e.kind IN (''File'', ''Symbol'', ''ExternalModule'')) $f$',
    current_schema());
END $migration$;
"""
)

# graphmem_move_about's check in every version since schema 10: it moves links to code only...
_CODE_ONLY = """\
    'IF entity_kind IS NULL OR entity_kind NOT IN (''File'', ''Symbol'', ''ExternalModule'') THEN '
    'RAISE EXCEPTION ''graphmem_move_about moves links to code only (File, Symbol, ExternalModule), '
    'not %%'', entity_kind USING ERRCODE = ''invalid_parameter_value''; '
    'END IF; '
"""

# ...and its answer, to the function's end: how many of the links moved are of memories the login
# sees (the policy's SEEN, for session_user: current_user is the owner here).
_COUNT_SEEN = """\
    'SELECT count(*) INTO moved FROM gone g JOIN %1$I.memories m ON m.id = g.memory_id '
    'WHERE m.scope <> ''global'' OR m.owner IS NULL OR m.owner = session_user::text; '
    'RETURN moved; END $f$',
    current_schema(), quote_ident(current_schema()) || '.about');
END $migration$;
"""

# Every link still moves (another person's included: why the function exists); the answer
# counts only those the login sees.
MOVE_ABOUT_10 = _MOVE_ABOUT_HEAD + _CODE_ONLY + _MOVE_LINKS + _COUNT_SEEN

ANSWER_ONLY_WHAT_IS_SEEN_10 = OWNER_KEPT_10 + TERM_STATS_10 + REMEMBERED_10 + MOVE_ABOUT_10

UNDO_10 = (
    """
DROP TRIGGER graphmem_owner_kept ON memories;
DROP FUNCTION graphmem_owner_kept();
"""
    + TERM_STATS_7
    + f"DROP STATISTICS {SHARED_TERMS};\n"
    + REMEMBERED_8
    + MOVE_ABOUT_9
)

# Who made a row (schema 13): the role that wrote it, which the database sets at every insert
# and keeps at every update, whatever the statement says (a writer's psql session too); only an
# administrator (the tables' owner, a superuser, a BYPASSRLS role) writes another, as a data-only
# restore does. On each history event, agent session and forced override of one.
PERSON_SET_13 = """
CREATE FUNCTION graphmem_person_set() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF NEW.person IS NOT NULL AND (SELECT r.rolsuper OR r.rolbypassrls OR pg_has_role(c.relowner, 'USAGE')
        FROM pg_roles r, pg_class c WHERE r.rolname = current_user AND c.oid = TG_RELID) THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'INSERT' THEN
        NEW.person := current_user;
    ELSE
        NEW.person := OLD.person;
    END IF;
    RETURN NEW;
END $f$;
CREATE TRIGGER graphmem_person_set BEFORE INSERT OR UPDATE OF person ON memory_events
    FOR EACH ROW EXECUTE FUNCTION graphmem_person_set();
CREATE TRIGGER graphmem_person_set BEFORE INSERT OR UPDATE OF person ON agent_sessions
    FOR EACH ROW EXECUTE FUNCTION graphmem_person_set();
CREATE TRIGGER graphmem_person_set BEFORE INSERT OR UPDATE OF person ON agent_overrides
    FOR EACH ROW EXECUTE FUNCTION graphmem_person_set();
"""

# Schema 14: a link to a symbol records the body its memory was written against (``about.body_hash``,
# a column since schema 2 that nothing wrote); a moved link carries it, another person's too, and
# after a move that kept the body but for its name (the new symbol has the old one's
# ``body_changed_at``) one that recorded the old body of now records the new one's
# (``core.code_moves.moved_body``).
MOVE_ABOUT_14 = (
    _MOVE_ABOUT_HEAD
    + _CODE_ONLY
    + """\
    'WITH gone AS (DELETE FROM %1$I.about a USING %1$I.entities o, %1$I.entities n '
    'WHERE a.entity_key = from_key AND o.key = from_key AND o.kind = entity_kind AND n.key = to_key '
    'AND n.kind = entity_kind AND from_key <> to_key RETURNING a.memory_id, a.body_hash), '
    'added AS (INSERT INTO %1$I.about (memory_id, entity_key, body_hash) SELECT g.memory_id, to_key, '
    'CASE WHEN g.body_hash = o.body_hash AND n.body_hash IS NOT NULL '
    'AND o.body_changed_at IS NOT DISTINCT FROM n.body_changed_at THEN n.body_hash ELSE g.body_hash END '
    'FROM gone g LEFT JOIN %1$I.code_symbols o ON o.key = from_key '
    'LEFT JOIN %1$I.code_symbols n ON n.key = to_key ON CONFLICT DO NOTHING RETURNING 1) '
"""
    + _COUNT_SEEN
)

# The links the rule of before did not flag (the body unchanged since the memory was last
# written: ``body_changed_at`` not after its ``updated_at``) were written against the body of now;
# the flagged ones keep none, and that rule, until their memory is written again.
RECORDED_BODIES_14 = (
    """
UPDATE about a SET body_hash = s.body_hash FROM code_symbols s, memories m
    WHERE s.key = a.entity_key AND m.id = a.memory_id AND a.body_hash IS NULL
    AND (s.body_changed_at IS NULL OR s.body_changed_at <= m.updated_at);
"""
    + MOVE_ABOUT_14
)
# Rolled back, the graphmem of schema 13 neither writes nor reads the column: what it records is
# cleared, so that links written meanwhile cannot keep a body older than their memory's.
UNDO_14 = "UPDATE about SET body_hash = NULL WHERE body_hash IS NOT NULL;\n" + MOVE_ABOUT_10

# Schema 16: the history (``memory_events``) and the record of overrides (``agent_overrides``) are
# append-only for the team's roles: an UPDATE, DELETE or TRUNCATE by a role that is not an
# administrator (the test of PERSON_SET_13) is refused, whatever the role's grants; graphmem never
# removes an event (a deleted memory keeps its history). The one change graphmem makes to a row,
# an undo marking the event it reversed (``undone_by``, from NULL to the undo event that
# ``undoes`` it, of the same memory, written by the same person), goes through when nothing else
# of the row changes. Row triggers fire by name: this one before ``graphmem_person_set``, so it
# sees the ``person`` a statement asked for.
APPEND_ONLY_16 = """
CREATE FUNCTION graphmem_append_only() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    undone boolean := false;
BEGIN
    IF (SELECT r.rolsuper OR r.rolbypassrls OR pg_has_role(c.relowner, 'USAGE')
        FROM pg_roles r, pg_class c WHERE r.rolname = current_user AND c.oid = TG_RELID) THEN
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND TG_TABLE_NAME = 'memory_events' THEN
        IF OLD.undone_by IS NULL AND NEW.undone_by IS NOT NULL
            AND to_jsonb(NEW) - 'undone_by' = to_jsonb(OLD) - 'undone_by' THEN
            EXECUTE format('SELECT EXISTS (SELECT FROM %I.%I u WHERE u.id = $1 AND u.undoes = $2 '
                'AND u.memory_id = $3 AND u.person = current_user::text)', TG_TABLE_SCHEMA, TG_TABLE_NAME)
                INTO undone USING NEW.undone_by, OLD.id, OLD.memory_id;
        END IF;
        IF undone THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION '% is append-only: only an administrator may % its rows', TG_TABLE_NAME, lower(TG_OP)
        USING ERRCODE = 'insufficient_privilege',
        HINT = 'graphmem adds a row for every change (an edit, an undo, a forced end); docs/team.md '
            'says what each role may do.';
END $f$;
CREATE TRIGGER graphmem_append_only BEFORE UPDATE OR DELETE ON memory_events
    FOR EACH ROW EXECUTE FUNCTION graphmem_append_only();
CREATE TRIGGER graphmem_append_only_truncate BEFORE TRUNCATE ON memory_events
    FOR EACH STATEMENT EXECUTE FUNCTION graphmem_append_only();
CREATE TRIGGER graphmem_append_only BEFORE UPDATE OR DELETE ON agent_overrides
    FOR EACH ROW EXECUTE FUNCTION graphmem_append_only();
CREATE TRIGGER graphmem_append_only_truncate BEFORE TRUNCATE ON agent_overrides
    FOR EACH STATEMENT EXECUTE FUNCTION graphmem_append_only();
"""
UNDO_16 = """
DROP TRIGGER graphmem_append_only_truncate ON agent_overrides;
DROP TRIGGER graphmem_append_only ON agent_overrides;
DROP TRIGGER graphmem_append_only_truncate ON memory_events;
DROP TRIGGER graphmem_append_only ON memory_events;
DROP FUNCTION graphmem_append_only();
"""

# Schema 17's triggers: two facts the policies on agent sessions and claims (``SESSIONS_HELD_17``,
# below) read, which no team role's statement sets (an administrator's, which row-level security
# does not hold, writes what it says):
# - a claim's ``person`` is its session's (NULL for a session from before schema 13: anyone's),
#   set when it is claimed and kept by every update: a policy sees only the new row, and a claim
#   moved to another session, or made to expire, must still say whose it was;
# - an override's ``xact`` is the transaction that recorded it (``pg_current_xact_id()``, the top
#   one within a savepoint too): a forced end or release goes through in that transaction only, so
#   one recorded override frees one thing once.
# And a role that row-level security holds may not TRUNCATE either table (which row-level security
# does not hold), whatever its grants.
COORDINATION_SET_17 = """
CREATE FUNCTION graphmem_claim_person() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF NEW.person IS NOT NULL AND NOT row_security_active(TG_RELID) THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'INSERT' THEN
        EXECUTE format('SELECT s.person FROM %I.agent_sessions s WHERE s.id = $1', TG_TABLE_SCHEMA)
            INTO NEW.person USING NEW.session;
    ELSE
        NEW.person := OLD.person;
    END IF;
    RETURN NEW;
END $f$;
CREATE TRIGGER graphmem_claim_person BEFORE INSERT OR UPDATE OF person ON agent_claims
    FOR EACH ROW EXECUTE FUNCTION graphmem_claim_person();
CREATE FUNCTION graphmem_override_xact() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    NEW.xact := pg_current_xact_id();
    RETURN NEW;
END $f$;
CREATE TRIGGER graphmem_override_xact BEFORE INSERT ON agent_overrides
    FOR EACH ROW EXECUTE FUNCTION graphmem_override_xact();
CREATE FUNCTION graphmem_not_truncated() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF row_security_active(TG_RELID) THEN
        RAISE EXCEPTION 'only an administrator may truncate %', TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege',
            HINT = 'graphmem ends sessions and releases claims one at a time (graphmem session end, '
                'release); docs/team.md says what each role may do.';
    END IF;
    RETURN NULL;
END $f$;
CREATE TRIGGER graphmem_not_truncated BEFORE TRUNCATE ON agent_sessions
    FOR EACH STATEMENT EXECUTE FUNCTION graphmem_not_truncated();
CREATE TRIGGER graphmem_not_truncated BEFORE TRUNCATE ON agent_claims
    FOR EACH STATEMENT EXECUTE FUNCTION graphmem_not_truncated();
"""
UNDO_COORDINATION_SET_17 = """
DROP TRIGGER graphmem_not_truncated ON agent_claims;
DROP TRIGGER graphmem_not_truncated ON agent_sessions;
DROP FUNCTION graphmem_not_truncated();
DROP TRIGGER graphmem_override_xact ON agent_overrides;
DROP FUNCTION graphmem_override_xact();
DROP TRIGGER graphmem_claim_person ON agent_claims;
DROP FUNCTION graphmem_claim_person();
"""

# Schema 17: whose agent session or claim it is, held by the database for the team's roles
# (row-level security; an administrator's role is not held): graphmem's rules
# (core/coordination.py) for a hand-written psql session too. A role reads every row; inserts and
# changes only its own (a claim only in its own session; a session from before schema 13, and its
# claims, are anyone's, as graphmem has them); deletes its own, another's once expired by the
# server's clock (what every daemon removes), or another's that an override recorded in the same
# transaction names (a forced end of that session, a forced release of that item, naming whose it
# was). A DELETE skips what it may not delete, as a daemon's removal of the expired must; an
# UPDATE of another's row is an error. UPDATE's USING is true so that a locking read (FOR UPDATE)
# and INSERT ... ON CONFLICT see every row; its WITH CHECK reads the row as the triggers leave it,
# ``person`` kept (``COORDINATION_SET_17``), which says whose it was.
SESSIONS_HELD_17 = (
    """
ALTER TABLE agent_claims ADD COLUMN person text;
UPDATE agent_claims c SET person = s.person FROM agent_sessions s WHERE s.id = c.session;
ALTER TABLE agent_overrides ADD COLUMN xact xid8;
"""
    + COORDINATION_SET_17
    + """ALTER TABLE agent_sessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY graphmem_read ON agent_sessions FOR SELECT USING (true);
CREATE POLICY graphmem_started ON agent_sessions FOR INSERT WITH CHECK (person = current_user::text);
CREATE POLICY graphmem_kept ON agent_sessions FOR UPDATE USING (true)
    WITH CHECK (person IS NULL OR person = current_user::text);
CREATE POLICY graphmem_ended ON agent_sessions FOR DELETE USING (
    person IS NULL OR person = current_user::text OR expires_at <= now()
    OR EXISTS (SELECT FROM agent_overrides o WHERE o.xact = pg_current_xact_id_if_assigned()
        AND o.person = current_user::text AND o.act = 'end' AND o.session = agent_sessions.id
        AND o.holder IS NOT DISTINCT FROM agent_sessions.person));
ALTER TABLE agent_claims ENABLE ROW LEVEL SECURITY;
CREATE POLICY graphmem_read ON agent_claims FOR SELECT USING (true);
CREATE POLICY graphmem_claimed ON agent_claims FOR INSERT
    WITH CHECK (person IS NULL OR person = current_user::text);
CREATE POLICY graphmem_kept ON agent_claims FOR UPDATE USING (true)
    WITH CHECK ((person IS NULL OR person = current_user::text)
        AND person IS NOT DISTINCT FROM
            (SELECT s.person FROM agent_sessions s WHERE s.id = agent_claims.session));
CREATE POLICY graphmem_released ON agent_claims FOR DELETE USING (
    person IS NULL OR person = current_user::text OR expires_at <= now()
    OR EXISTS (SELECT FROM agent_overrides o WHERE o.xact = pg_current_xact_id_if_assigned()
        AND o.person = current_user::text AND o.act = 'release' AND o.session = agent_claims.session
        AND o.item = agent_claims.item AND o.holder IS NOT DISTINCT FROM agent_claims.person));
"""
)
# Rolled back, the rows stay, with what schema 16 has of them: the columns the policies read go.
UNDO_SESSIONS_HELD_17 = (
    """
DROP POLICY graphmem_released ON agent_claims;
DROP POLICY graphmem_kept ON agent_claims;
DROP POLICY graphmem_claimed ON agent_claims;
DROP POLICY graphmem_read ON agent_claims;
ALTER TABLE agent_claims DISABLE ROW LEVEL SECURITY;
DROP POLICY graphmem_ended ON agent_sessions;
DROP POLICY graphmem_kept ON agent_sessions;
DROP POLICY graphmem_started ON agent_sessions;
DROP POLICY graphmem_read ON agent_sessions;
ALTER TABLE agent_sessions DISABLE ROW LEVEL SECURITY;
"""
    + UNDO_COORDINATION_SET_17
    + """ALTER TABLE agent_overrides DROP COLUMN xact;
ALTER TABLE agent_claims DROP COLUMN person;
"""
)

# Schema 20: a change to what a memory says or how much it counts is in its history, for the team's
# roles. graphmem writes each such change and its event in one transaction (service/writer.py); a
# writer's psql session must too: at its commit, a transaction that changed one of those columns of
# a memory, or deleted one, and wrote no event of that memory as the same role, is refused. The
# columns are those recall, the injected block and ``show`` read as what the memory says and its
# standing: its text, category, status, trust, source, origin and session, its times of validity
# and expiry, its branch. An event names its transaction (``xact``, written by the database at its
# insert, as an override's is). What is not held: what the event says (a role's own before and
# after, named as its own, as any event it writes), a memory's project (graphmem moves a checkout's
# memories to the repository's name with no event), its links, its vector.
_EVENT_XACT_20 = """
ALTER TABLE memory_events ADD COLUMN xact xid8;
CREATE FUNCTION graphmem_event_xact() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    NEW.xact := pg_current_xact_id();
    RETURN NEW;
END $f$;
CREATE TRIGGER graphmem_event_xact BEFORE INSERT ON memory_events
    FOR EACH ROW EXECUTE FUNCTION graphmem_event_xact();
"""
# The check itself: schema 23 replaces it (postgres_recorded.py), and its rollback restores it.
CHANGE_RECORDED_20 = """CREATE FUNCTION graphmem_change_recorded() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    recorded boolean;
BEGIN
    IF NOT row_security_active(TG_RELID) THEN
        RETURN NULL;
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT FROM %I.memory_events e WHERE e.memory_id = $1 '
        'AND e.xact = pg_current_xact_id() AND e.person = current_user::text)', TG_TABLE_SCHEMA)
        INTO recorded USING OLD.id;
    IF NOT recorded THEN
        RAISE EXCEPTION 'memory % was % with no event in its history: nothing of the transaction was kept',
            OLD.id, CASE TG_OP WHEN 'DELETE' THEN 'deleted' ELSE 'changed' END
            USING ERRCODE = 'insufficient_privilege',
            HINT = 'Change memories with graphmem (edit, confirm, archive, restore, delete), which '
                'records who did what; by hand, insert the change''s event into memory_events in the '
                'same transaction (docs/team.md).';
    END IF;
    RETURN NULL;
END $f$;
CREATE CONSTRAINT TRIGGER graphmem_change_recorded AFTER UPDATE OF text, category, status, trust,
    source, origin, session, created_at, valid_from, valid_to, expires_at, branch ON memories
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.text IS DISTINCT FROM NEW.text OR OLD.category IS DISTINCT FROM NEW.category
        OR OLD.status IS DISTINCT FROM NEW.status OR OLD.trust IS DISTINCT FROM NEW.trust
        OR OLD.source IS DISTINCT FROM NEW.source OR OLD.origin IS DISTINCT FROM NEW.origin
        OR OLD.session IS DISTINCT FROM NEW.session OR OLD.created_at IS DISTINCT FROM NEW.created_at
        OR OLD.valid_from IS DISTINCT FROM NEW.valid_from OR OLD.valid_to IS DISTINCT FROM NEW.valid_to
        OR OLD.expires_at IS DISTINCT FROM NEW.expires_at OR OLD.branch IS DISTINCT FROM NEW.branch)
    EXECUTE FUNCTION graphmem_change_recorded();
CREATE CONSTRAINT TRIGGER graphmem_removal_recorded AFTER DELETE ON memories
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION graphmem_change_recorded();
"""
RECORDED_CHANGES_20 = _EVENT_XACT_20 + CHANGE_RECORDED_20
UNDO_RECORDED_CHANGES_20 = """
DROP TRIGGER graphmem_removal_recorded ON memories;
DROP TRIGGER graphmem_change_recorded ON memories;
DROP FUNCTION graphmem_change_recorded();
DROP TRIGGER graphmem_event_xact ON memory_events;
DROP FUNCTION graphmem_event_xact();
ALTER TABLE memory_events DROP COLUMN xact;
"""

# Who confirmed a memory (schema 21): the role whose transaction made its trust ``confirmed``,
# which the database sets as it sets an event's ``person`` (a writer's psql session too) and
# keeps while it stays confirmed; a memory not confirmed names no one. An administrator may write
# another, as a data-only restore does. The label then says "confirmed by teammate alice"
# (``core/provenance.py``), not "by a person". A memory confirmed before is given the person of
# the newest event that confirmed it, when one names them.
CONFIRMED_BY_21 = """
ALTER TABLE memories ADD COLUMN confirmed_by text;
UPDATE memories m SET confirmed_by = e.person
    FROM (SELECT DISTINCT ON (memory_id) memory_id, person FROM memory_events
          WHERE after ->> 'trust' = 'confirmed' ORDER BY memory_id, seq DESC) e
    WHERE e.memory_id = m.id AND m.trust = 'confirmed';
CREATE FUNCTION graphmem_confirmed_by() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF NEW.trust IS DISTINCT FROM 'confirmed' THEN
        NEW.confirmed_by := NULL;
    ELSIF NEW.confirmed_by IS NOT NULL
        AND (TG_OP = 'INSERT' OR NEW.confirmed_by IS DISTINCT FROM OLD.confirmed_by)
        AND (SELECT r.rolsuper OR r.rolbypassrls OR pg_has_role(c.relowner, 'USAGE')
             FROM pg_roles r, pg_class c WHERE r.rolname = current_user AND c.oid = TG_RELID) THEN
        NULL;  -- an administrator's own value
    ELSIF TG_OP = 'INSERT' OR OLD.trust IS DISTINCT FROM 'confirmed' THEN
        NEW.confirmed_by := current_user;
    ELSE
        NEW.confirmed_by := OLD.confirmed_by;
    END IF;
    RETURN NEW;
END $f$;
CREATE TRIGGER graphmem_confirmed_by BEFORE INSERT OR UPDATE OF trust, confirmed_by ON memories
    FOR EACH ROW EXECUTE FUNCTION graphmem_confirmed_by();
"""
UNDO_CONFIRMED_BY_21 = """
DROP TRIGGER graphmem_confirmed_by ON memories;
DROP FUNCTION graphmem_confirmed_by();
ALTER TABLE memories DROP COLUMN confirmed_by;
"""

# Schema 22: a memory's scope is one of graphmem's, and a project's memory has its project, when
# a team's role writes it. Row-level security shows everyone a memory whose scope is not 'global'
# (schema 6), and graphmem reads a scope it does not know as its project says: a writer's psql
# INSERT of his memory with the scope 'team' and no project, or of a 'project' one with no
# project (or an UPDATE that takes its project away), was in everyone's recall in every project,
# which only an administrator's global memories are. Changing a scope is an administrator's
# already (schema 10), and so is now taking a project's memory's project away.
SCOPES_HELD_22 = """
CREATE POLICY graphmem_scoped ON memories AS RESTRICTIVE FOR INSERT
    WITH CHECK (scope = 'global' OR scope = 'project' AND project IS NOT NULL);
CREATE FUNCTION graphmem_project_kept() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $f$
BEGIN
    IF row_security_active(TG_RELID) THEN
        RAISE EXCEPTION 'memory % is of a project: only an administrator takes its project away', OLD.id
            USING ERRCODE = 'insufficient_privilege',
            HINT = 'Move it to another project instead, or write a new memory (docs/team.md).';
    END IF;
    RETURN NEW;
END $f$;
CREATE TRIGGER graphmem_project_kept BEFORE UPDATE OF project ON memories FOR EACH ROW
    WHEN (NEW.project IS NULL AND OLD.project IS NOT NULL AND NEW.scope <> 'global')
    EXECUTE FUNCTION graphmem_project_kept();
"""
UNDO_SCOPES_HELD_22 = """
DROP TRIGGER graphmem_project_kept ON memories;
DROP FUNCTION graphmem_project_kept();
DROP POLICY graphmem_scoped ON memories;
"""

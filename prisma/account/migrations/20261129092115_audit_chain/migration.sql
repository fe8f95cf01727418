-- AlterTable
ALTER TABLE "audit_events" ADD COLUMN     "hash" TEXT,
ADD COLUMN     "prev_hash" TEXT,
ADD COLUMN     "seq" INTEGER;

-- CreateTable
CREATE TABLE "audit_chain_head" (
    "id" INTEGER NOT NULL,
    "seq" INTEGER NOT NULL,
    "hash" TEXT NOT NULL,
    "unchained" INTEGER NOT NULL,

    CONSTRAINT "audit_chain_head_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "audit_events_seq_key" ON "audit_events"("seq");

-- The audit log's hash chain (docs/security.md, "The audit log's hash chain"). Every row inserted,
-- by any statement, gets the next `seq`, the `hash` of the row before as `prev_hash`, and its own
-- `hash`: SHA-256 over `prev_hash` and the row's fields, each written as N (null) or
-- S<byte length>:<text>, the timestamp as ISO 8601 in UTC and the JSON columns as PostgreSQL's
-- text of the jsonb. `npm run admin -- audit verify` recomputes it outside the database
-- (server/account/events/audit-chain.ts), so a replaced function here cannot vouch for a row.
-- The trigger's UPDATE of the head row locks it until the transaction ends: concurrent writers
-- take their turn and the chain has no fork. Rows already written stay unchained (the head counts them).
-- (Bodies spell their semicolons \073: the pg adapter runs a migration split at every semicolon.)
INSERT INTO "audit_chain_head" ("id", "seq", "hash", "unchained") SELECT 1, 0, repeat('0', 64), count(*) FROM "audit_events";

CREATE FUNCTION "audit_field"(value text) RETURNS text LANGUAGE sql IMMUTABLE
    AS E'SELECT CASE WHEN value IS NULL THEN ''N'' ELSE ''S'' || octet_length(value) || '':'' || value END';

CREATE FUNCTION "audit_events_chain"() RETURNS trigger LANGUAGE plpgsql AS E'
DECLARE
    head_seq integer\073
    head_hash text\073
BEGIN
    UPDATE "audit_chain_head" SET "seq" = "seq" + 1 WHERE "id" = 1 RETURNING "seq", "hash" INTO head_seq, head_hash\073
    IF NOT FOUND THEN RAISE EXCEPTION ''audit_chain_head has no row: the audit chain cannot go on''\073 END IF\073
    NEW."seq" := head_seq\073
    NEW."prev_hash" := head_hash\073
    NEW."hash" := encode(sha256(convert_to(head_hash
        || audit_field(NEW."seq"::text) || audit_field(NEW."id"::text)
        || audit_field(to_char(NEW."at", ''YYYY-MM-DD"T"HH24:MI:SS.MS"Z"''))
        || audit_field(NEW."actor_type") || audit_field(NEW."actor_id") || audit_field(NEW."actor_label")
        || audit_field(NEW."action") || audit_field(NEW."target_type") || audit_field(NEW."target_id")
        || audit_field(NEW."ip") || audit_field(NEW."before"::text) || audit_field(NEW."after"::text), ''UTF8'')), ''hex'')\073
    UPDATE "audit_chain_head" SET "hash" = NEW."hash" WHERE "id" = 1\073
    RETURN NEW\073
END\073';

CREATE TRIGGER "audit_events_chain" BEFORE INSERT ON "audit_events"
    FOR EACH ROW EXECUTE FUNCTION "audit_events_chain"();

-- No TRUNCATE either: the append-only trigger (migration admin_access) stops UPDATE and DELETE only.
CREATE TRIGGER "audit_events_no_truncate" BEFORE TRUNCATE ON "audit_events"
    FOR EACH STATEMENT EXECUTE FUNCTION "audit_events_append_only"();

-- The head changes only inside the chain trigger (one trigger deep), and is never removed.
CREATE FUNCTION "audit_chain_head_guard"() RETURNS trigger LANGUAGE plpgsql
    AS E'BEGIN IF TG_OP = ''UPDATE'' AND pg_trigger_depth() > 1 THEN RETURN NEW\073 END IF\073 RAISE EXCEPTION ''audit_chain_head changes only with a new audit row''\073 END\073';
CREATE TRIGGER "audit_chain_head_guard" BEFORE UPDATE OR DELETE ON "audit_chain_head"
    FOR EACH ROW EXECUTE FUNCTION "audit_chain_head_guard"();
CREATE TRIGGER "audit_chain_head_no_truncate" BEFORE TRUNCATE ON "audit_chain_head"
    FOR EACH STATEMENT EXECUTE FUNCTION "audit_chain_head_guard"();

-- The webhook workers claim from a queue of the pending deliveries only. Until now they read
-- partial indexes (WHERE state = 'pending') on event_deliveries. A delivery that ended left its
-- entries there, dead, until a VACUUM of its whole week's partition, which runs only once a
-- fifth of the partition's rows are dead (a 2.8 million row partition took 1.9 s to vacuum).
-- Every claim walks those indexes from their oldest entry, so it crossed every delivery sent
-- since that VACUUM: a claim read 6,392 index pages instead of 106 with 500,000 of them, and a
-- 30-minute soak's claims grew from 1 ms to a mean of 6.7 ms, the database's largest consumer.
--
-- The queue holds a row per pending delivery and loses it when the delivery ends, so it is as
-- small as the backlog and a VACUUM of it takes milliseconds: the job webhook-queue-vacuum runs
-- one every few seconds, and autovacuum (where it is on) is told to vacuum it at 1,000 dead
-- rows, not at a fifth of it. The lease and the attempt in flight live in the queue only, so a
-- claim writes a queue row and no longer a row of event_deliveries; a fillfactor of 70 leaves
-- room on each page for those updates to stay HOT (no column they change is indexed). No
-- VACUUM truncates it (vacuum_truncate): giving back its empty last pages takes an ACCESS
-- EXCLUSIVE lock, which every transaction that writes an event would queue behind, every few
-- seconds; the pages are soon filled again anyway.
CREATE TABLE "event_delivery_queue" (
	"id" uuid PRIMARY KEY NOT NULL,
	"event_id" uuid NOT NULL,
	"client_id" uuid NOT NULL,
	"webhook_id" uuid NOT NULL,
	"attempt_count" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone NOT NULL,
	"lease_until" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
) WITH (fillfactor = 70, vacuum_truncate = false, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 5000);
--> statement-breakpoint
-- No delivery is written while the pending ones are copied (the migration's transaction holds
-- this until it commits). Processes of the version before this one must be stopped before it
-- runs: they would go on writing deliveries without their rows in the queue, which no worker
-- claims (docs/operations.md, Processes and listeners).
LOCK TABLE "event_deliveries" IN SHARE ROW EXCLUSIVE MODE;
--> statement-breakpoint
INSERT INTO "event_delivery_queue" ("id", "event_id", "client_id", "webhook_id", "attempt_count", "next_attempt_at", "lease_until", "created_at")
  SELECT "id", "event_id", "client_id", "webhook_id", "attempt_count", "next_attempt_at", "lease_until", "created_at"
  FROM "event_deliveries" WHERE "state" = 'pending';
--> statement-breakpoint
CREATE INDEX "event_delivery_queue_due_idx" ON "event_delivery_queue" USING btree ("next_attempt_at");--> statement-breakpoint
CREATE INDEX "event_delivery_queue_client_due_idx" ON "event_delivery_queue" USING btree ("client_id","next_attempt_at");--> statement-breakpoint
CREATE INDEX "event_delivery_queue_webhook_idx" ON "event_delivery_queue" USING btree ("webhook_id");--> statement-breakpoint
DROP INDEX "event_deliveries_due_idx";--> statement-breakpoint
DROP INDEX "event_deliveries_client_due_idx";--> statement-breakpoint
DROP INDEX "event_deliveries_webhook_idx";--> statement-breakpoint
-- An attempt in flight counted in event_deliveries until now: from here on it counts there once
-- recorded, and the queue's count includes it.
ALTER TABLE "event_deliveries" DROP COLUMN "lease_until";
--> statement-breakpoint
-- As in migrations 0013, 0020 and 0026, over the queue: every row of it is pending.
DROP FUNCTION "due_event_deliveries_per_client"(timestamptz, uuid[], jsonb, integer);
--> statement-breakpoint
CREATE FUNCTION "due_event_deliveries_per_client"("p_now" timestamptz, "p_skip" uuid[], "p_busy" jsonb, "p_cap" integer)
  RETURNS TABLE ("id" uuid, "event_id" uuid, "client_id" uuid, "webhook_id" uuid, "next_attempt_at" timestamptz)
  LANGUAGE sql STABLE
  SET enable_bitmapscan = off
  SET jit = off
  AS $$
    WITH RECURSIVE merchants(client_id) AS (
      SELECT (SELECT q.client_id FROM event_delivery_queue q ORDER BY q.client_id LIMIT 1)
      WHERE (
        SELECT q.next_attempt_at FROM event_delivery_queue q
        WHERE q.lease_until IS NULL OR q.lease_until <= p_now
        ORDER BY q.next_attempt_at LIMIT 1) <= p_now
      UNION ALL
      SELECT (SELECT q.client_id FROM event_delivery_queue q WHERE q.client_id > m.client_id ORDER BY q.client_id LIMIT 1)
      FROM merchants m WHERE m.client_id IS NOT NULL
    )
    SELECT due.id, due.event_id, due.client_id, due.webhook_id, due.next_attempt_at
    FROM merchants m
    CROSS JOIN LATERAL (SELECT p_cap - coalesce((p_busy ->> m.client_id::text)::int, 0) AS room) r
    CROSS JOIN LATERAL (
      SELECT q.id, q.event_id, q.client_id, q.webhook_id, q.next_attempt_at FROM event_delivery_queue q
      WHERE q.client_id >= m.client_id AND (q.client_id, q.next_attempt_at) <= (m.client_id, p_now)
        AND (q.lease_until IS NULL OR q.lease_until <= p_now)
        AND NOT (q.webhook_id = ANY (p_skip))
      ORDER BY q.client_id, q.next_attempt_at
      LIMIT r.room
    ) due
    WHERE m.client_id IS NOT NULL AND r.room > 0
  $$;
--> statement-breakpoint
-- Dropping a week (migrations 0020 and 0021) keeps the events with a delivery still pending:
-- found in the queue by the week's bounds, no longer in the week's partition, whose pending
-- index is gone (without it, the whole partition would be read while the three tables are locked).
-- Found before the partitions are detached, once the week's partitions are locked: no delivery
-- of the week's events can be added then (a replay locks its event first). Otherwise as in 0021.
CREATE OR REPLACE FUNCTION "drop_event_partitions"("p_week" date) RETURNS integer
  LANGUAGE plpgsql
  AS $$
  DECLARE
    suffix text := '_p' || to_char(p_week, 'YYYYMMDD');
    lo uuid := event_partition_bound(p_week::timestamp AT TIME ZONE 'UTC');
    hi uuid := event_partition_bound((p_week + 7)::timestamp AT TIME ZONE 'UTC');
    kept integer;
  BEGIN
    IF to_regclass('events' || suffix) IS NULL THEN RETURN 0; END IF;
    EXECUTE format('LOCK TABLE %I, %I, %I IN ACCESS EXCLUSIVE MODE', 'events' || suffix, 'event_deliveries' || suffix, 'delivery_attempts' || suffix);
    CREATE TEMP TABLE "kept_events" ON COMMIT DROP AS
      SELECT DISTINCT q.event_id AS id FROM event_delivery_queue q WHERE q.event_id >= lo AND q.event_id < hi;
    EXECUTE format('ALTER TABLE "delivery_attempts" DETACH PARTITION %I', 'delivery_attempts' || suffix);
    EXECUTE format('ALTER TABLE "event_deliveries" DETACH PARTITION %I', 'event_deliveries' || suffix);
    EXECUTE format('ALTER TABLE "events" DETACH PARTITION %I', 'events' || suffix);
    -- The week's events leave the list totals (no delete trigger fires for a detached partition);
    -- the kept ones, inserted again below, come back through the insert trigger.
    EXECUTE format('INSERT INTO list_count_deltas (client_id, list, key, n) SELECT client_id, ''events'', jsonb_build_object(''topic'', topic)::text, -count(*) FROM %I GROUP BY 1, 3', 'events' || suffix);
    EXECUTE format('INSERT INTO "events" SELECT e.* FROM %I e WHERE e.id IN (SELECT id FROM kept_events)', 'events' || suffix);
    GET DIAGNOSTICS kept = ROW_COUNT;
    IF kept > 0 THEN
      EXECUTE format('INSERT INTO "event_deliveries" SELECT d.* FROM %I d WHERE d.event_id IN (SELECT id FROM kept_events)', 'event_deliveries' || suffix);
      EXECUTE format('INSERT INTO "delivery_attempts" SELECT a.* FROM %I a WHERE a.event_id IN (SELECT id FROM kept_events)', 'delivery_attempts' || suffix);
    END IF;
    DROP TABLE "kept_events";
    EXECUTE format('DROP TABLE %I, %I, %I', 'delivery_attempts' || suffix, 'event_deliveries' || suffix, 'events' || suffix);
    RETURN kept;
  END $$;

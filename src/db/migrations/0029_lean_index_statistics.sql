-- The request log's index on the status class, (client_id, (status / 100), created_at, id), has
-- statistics of its own for its expression, at PostgreSQL's default target of 100; and ANALYZE
-- takes its sample for the largest target of a table's columns and of its indexes'
-- expressions, so the request log was still analyzed from 30,000 rows after migration 0028 set
-- its columns to 10: 209 to 347 ms for a week of 46,000 requests, against 45 to 66 ms at 10
-- (two-core host). The expression takes the columns' target of 10, on the parent's index and on
-- each partition's; a week made later copies it from the parent's index
-- (copy_index_statistics_targets), as its columns copy theirs (copy_statistics_targets).
CREATE FUNCTION "copy_index_statistics_targets"("p_from" regclass, "p_to" regclass) RETURNS void
  LANGUAGE plpgsql
  AS $$
  DECLARE
    c record;
  BEGIN
    -- p_to's indexes attached to p_from's, and the targets set on the parents' columns (only an
    -- expression can have one). attstattarget: -1 (PostgreSQL 15, 16) or null (17) by default.
    FOR c IN SELECT child.indexrelid AS idx, a.attnum, a.attstattarget
        FROM pg_inherits i
        JOIN pg_index parent ON parent.indexrelid = i.inhparent AND parent.indrelid = p_from
        JOIN pg_index child ON child.indexrelid = i.inhrelid AND child.indrelid = p_to
        JOIN pg_attribute a ON a.attrelid = i.inhparent AND a.attnum > 0 AND a.attstattarget >= 0 LOOP
      EXECUTE format('ALTER INDEX %s ALTER COLUMN %s SET STATISTICS %s', c.idx::regclass, c.attnum, c.attstattarget);
    END LOOP;
  END $$;
--> statement-breakpoint
ALTER INDEX "request_log_client_class_idx" ALTER COLUMN 2 SET STATISTICS 10;
--> statement-breakpoint
-- Each partition's, whether or not the parent's reached it.
DO $$
  DECLARE
    p regclass;
  BEGIN
    FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'request_log'::regclass LOOP
      PERFORM copy_index_statistics_targets('request_log'::regclass, p);
    END LOOP;
  END $$;
--> statement-breakpoint
-- Migration 0028's function, which now also copies the index's target to each new week.
CREATE OR REPLACE FUNCTION "create_request_log_partition"("p_week" date) RETURNS boolean
  LANGUAGE plpgsql
  AS $$
  DECLARE
    lo uuid := event_partition_bound(p_week::timestamp AT TIME ZONE 'UTC');
    hi uuid := event_partition_bound((p_week + 7)::timestamp AT TIME ZONE 'UTC');
    part text := 'request_log_p' || to_char(p_week, 'YYYYMMDD');
  BEGIN
    IF extract(isodow FROM p_week) <> 1 THEN RAISE EXCEPTION 'request log partitions start on a Monday, not %', p_week; END IF;
    IF to_regclass(part) IS NOT NULL THEN RETURN false; END IF;
    -- A week that has begun may have a flush in flight routed to the default partition before
    -- the week existed: such a week (only when no worker ran for two weeks) waits for the
    -- inserts to end and holds new ones until it commits. A week ahead has none to wait for.
    IF lo <= event_partition_bound(now()) THEN
      LOCK TABLE "request_log" IN SHARE ROW EXCLUSIVE MODE;
    END IF;
    -- No row may reach the default partition between the move and the attach.
    LOCK TABLE "request_log_default" IN ACCESS EXCLUSIVE MODE;
    IF to_regclass(part) IS NOT NULL THEN RETURN false; END IF; -- made while this waited
    EXECUTE format('CREATE TABLE %I (LIKE "request_log" INCLUDING DEFAULTS)', part);
    PERFORM copy_statistics_targets('request_log'::regclass, part::regclass);
    EXECUTE format('WITH moved AS (DELETE FROM "request_log_default" WHERE id >= $1 AND id < $2 RETURNING *) INSERT INTO %I SELECT * FROM moved', part) USING lo, hi;
    EXECUTE format('ALTER TABLE "request_log" ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', part, lo, hi);
    -- The attach made the partition's indexes (or took ones that matched).
    PERFORM copy_index_statistics_targets('request_log'::regclass, part::regclass);
    RETURN true;
  END $$;

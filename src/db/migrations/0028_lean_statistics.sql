-- The append-only logs are analyzed from a tenth of the sample: a statistics target of 10 on
-- every column of events, event_deliveries, delivery_attempts, request_log and
-- idempotency_keys, against PostgreSQL's default of 100. ANALYZE reads 300 rows per unit of the
-- largest target of a table's columns, so 3,000 rows instead of 30,000 and as many pages at most:
-- a 228 MB week of events (175,000 events of 1.2 KB) was analyzed in 24 ms instead of 300 to 580
-- (two-core host). These tables grow all day and are analyzed again at each tenth of growth
-- (autovacuum's threshold, and the table-maintenance job's where autovacuum is off), so the full
-- sample's cost grew with them: in a 30-minute soak the job's time went from 5.7 to 7.3 seconds
-- a minute. Their statements find rows by key (ids, a merchant's newest first, a key's
-- fingerprint), which a small sample estimates as well. The tables the API lists filter (users,
-- wallets, transactions, payment intents, payments) and the ledger keep the default.
--
-- A partition made later does not take its parent's targets (CREATE TABLE … LIKE copies
-- none), so the functions that make the weeks copy them (copy_statistics_targets).
CREATE FUNCTION "copy_statistics_targets"("p_from" regclass, "p_to" regclass) RETURNS void
  LANGUAGE plpgsql
  AS $$
  DECLARE
    c record;
  BEGIN
    -- attstattarget: -1 (PostgreSQL 15, 16) or null (17) for the default.
    FOR c IN SELECT attname, attstattarget FROM pg_attribute
        WHERE attrelid = p_from AND attnum > 0 AND NOT attisdropped AND attstattarget >= 0 LOOP
      EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET STATISTICS %s', p_to, c.attname, c.attstattarget);
    END LOOP;
  END $$;
--> statement-breakpoint
-- Every column of the five tables; on a partitioned table this reaches its partitions too.
DO $$
  DECLARE
    t text;
    c name;
  BEGIN
    FOREACH t IN ARRAY ARRAY['events', 'event_deliveries', 'delivery_attempts', 'request_log', 'idempotency_keys'] LOOP
      FOR c IN SELECT attname FROM pg_attribute WHERE attrelid = t::regclass AND attnum > 0 AND NOT attisdropped LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET STATISTICS 10', t, c);
      END LOOP;
    END LOOP;
  END $$;
--> statement-breakpoint
-- Migration 0020's function, which now copies the targets to each new week's partitions.
CREATE OR REPLACE FUNCTION "create_event_partitions"("p_week" date) RETURNS boolean
  LANGUAGE plpgsql
  AS $$
  DECLARE
    lo uuid := event_partition_bound(p_week::timestamp AT TIME ZONE 'UTC');
    hi uuid := event_partition_bound((p_week + 7)::timestamp AT TIME ZONE 'UTC');
    suffix text := '_p' || to_char(p_week, 'YYYYMMDD');
    t text;
    k text;
  BEGIN
    IF extract(isodow FROM p_week) <> 1 THEN RAISE EXCEPTION 'event partitions start on a Monday, not %', p_week; END IF;
    IF to_regclass('events' || suffix) IS NOT NULL THEN RETURN false; END IF;
    -- A week that has begun may have inserts in flight that were routed to the default
    -- partition before it existed: one that reached the default partition after the attach would
    -- fail its partition constraint. Such a week (only when no worker ran for two weeks) waits
    -- for every insert into the three tables to end and holds new ones until it commits, when
    -- they are routed to it; a week ahead has no insert of its own to wait for.
    IF lo <= event_partition_bound(now()) THEN
      LOCK TABLE "events", "event_deliveries", "delivery_attempts" IN SHARE ROW EXCLUSIVE MODE;
    END IF;
    -- No row may reach a default partition between the move and the attach (which would then
    -- fail); inserts into the weeks that exist do not touch the default partitions.
    LOCK TABLE "events_default", "event_deliveries_default", "delivery_attempts_default" IN ACCESS EXCLUSIVE MODE;
    IF to_regclass('events' || suffix) IS NOT NULL THEN RETURN false; END IF; -- made while this waited
    FOREACH t IN ARRAY ARRAY['events', 'event_deliveries', 'delivery_attempts'] LOOP
      k := CASE t WHEN 'events' THEN 'id' ELSE 'event_id' END;
      EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS)', t || suffix, t);
      PERFORM copy_statistics_targets(t::regclass, (t || suffix)::regclass);
      EXECUTE format('WITH moved AS (DELETE FROM %I WHERE %I >= $1 AND %I < $2 RETURNING *) INSERT INTO %I SELECT * FROM moved',
        t || '_default', k, k, t || suffix) USING lo, hi;
      EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', t, t || suffix, lo, hi);
    END LOOP;
    RETURN true;
  END $$;
--> statement-breakpoint
-- Migration 0025's function, which now copies the targets to each new week's partition.
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
    RETURN true;
  END $$;

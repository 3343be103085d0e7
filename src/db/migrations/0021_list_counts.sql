CREATE TABLE "list_count_deltas" (
	"client_id" uuid NOT NULL,
	"list" text NOT NULL,
	"key" text NOT NULL,
	"n" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "list_counts" (
	"client_id" uuid NOT NULL,
	"list" text NOT NULL,
	"key" text NOT NULL,
	"n" bigint NOT NULL,
	CONSTRAINT "list_counts_client_id_list_key_pk" PRIMARY KEY("client_id","list","key")
);
--> statement-breakpoint
CREATE INDEX "list_count_deltas_key_idx" ON "list_count_deltas" USING btree ("client_id","list","key");--> statement-breakpoint
-- ======================================================================================
-- Hand-written: the exact totals of the API's lists (docs/internals.md#counters).
-- Each counted table gets statement-level AFTER triggers with transition tables that append
-- one grouped row per (merchant, list, key) a statement changed to list_count_deltas; an update
-- appends only for rows whose counted columns changed (old and new joined by id). Tables whose
-- counted columns never change (users, wallets, transactions: client and wallet; events) have
-- no update trigger. A payment with a channel counts twice: in 'payments' and in
-- 'payments/channel=<channel>' (so a channel's total reads its own rows, however many channels
-- a merchant uses). The list-count-fold job folds the deltas into list_counts.
-- ======================================================================================
--> statement-breakpoint
CREATE FUNCTION "list_count_delta_users"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO list_count_deltas (client_id, list, key, n)
    SELECT r.client_id, k.list, k.key, count(*) FROM list_count_new r CROSS JOIN LATERAL (VALUES ('users', '{}')) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;
  ELSE
    INSERT INTO list_count_deltas (client_id, list, key, n)
    SELECT r.client_id, k.list, k.key, -count(*) FROM list_count_old r CROSS JOIN LATERAL (VALUES ('users', '{}')) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "list_count_insert" AFTER INSERT ON "users"
  REFERENCING NEW TABLE AS list_count_new
  FOR EACH STATEMENT EXECUTE FUNCTION "list_count_delta_users"();--> statement-breakpoint
CREATE TRIGGER "list_count_delete" AFTER DELETE ON "users"
  REFERENCING OLD TABLE AS list_count_old
  FOR EACH STATEMENT EXECUTE FUNCTION "list_count_delta_users"();--> statement-breakpoint
-- The users there are already, counted the way the trigger counts them (the triggers' lock, held
-- until the migrations commit, keeps other writes out until then, so each row counts once).
INSERT INTO list_counts (client_id, list, key, n)
SELECT r.client_id, k.list, k.key, count(*) FROM "users" r CROSS JOIN LATERAL (VALUES ('users', '{}')) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;--> statement-breakpoint
CREATE FUNCTION "list_count_delta_wallets"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO list_count_deltas (client_id, list, key, n)
    SELECT r.client_id, k.list, k.key, count(*) FROM list_count_new r CROSS JOIN LATERAL (VALUES ('wallets', '{}')) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;
  ELSE
    INSERT INTO list_count_deltas (client_id, list, key, n)
    SELECT r.client_id, k.list, k.key, -count(*) FROM list_count_old r CROSS JOIN LATERAL (VALUES ('wallets', '{}')) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "list_count_insert" AFTER INSERT ON "wallets"
  REFERENCING NEW TABLE AS list_count_new
  FOR EACH STATEMENT EXECUTE FUNCTION "list_count_delta_wallets"();--> statement-breakpoint
CREATE TRIGGER "list_count_delete" AFTER DELETE ON "wallets"
  REFERENCING OLD TABLE AS list_count_old
  FOR EACH STATEMENT EXECUTE FUNCTION "list_count_delta_wallets"();--> statement-breakpoint
-- The wallets there are already, counted the way the trigger counts them (the triggers' lock, held
-- until the migrations commit, keeps other writes out until then, so each row counts once).
INSERT INTO list_counts (client_id, list, key, n)
SELECT r.client_id, k.list, k.key, count(*) FROM "wallets" r CROSS JOIN LATERAL (VALUES ('wallets', '{}')) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;--> statement-breakpoint
CREATE FUNCTION "list_count_delta_transactions"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO list_count_deltas (client_id, list, key, n)
    SELECT r.client_id, k.list, k.key, count(*) FROM list_count_new r CROSS JOIN LATERAL (VALUES ('transactions', jsonb_build_object('walletId', r.wallet_id)::text)) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;
  ELSE
    INSERT INTO list_count_deltas (client_id, list, key, n)
    SELECT r.client_id, k.list, k.key, -count(*) FROM list_count_old r CROSS JOIN LATERAL (VALUES ('transactions', jsonb_build_object('walletId', r.wallet_id)::text)) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "list_count_insert" AFTER INSERT ON "transactions"
  REFERENCING NEW TABLE AS list_count_new
  FOR EACH STATEMENT EXECUTE FUNCTION "list_count_delta_transactions"();--> statement-breakpoint
CREATE TRIGGER "list_count_delete" AFTER DELETE ON "transactions"
  REFERENCING OLD TABLE AS list_count_old
  FOR EACH STATEMENT EXECUTE FUNCTION "list_count_delta_transactions"();--> statement-breakpoint
-- The transactions there are already, counted the way the trigger counts them (the triggers' lock, held
-- until the migrations commit, keeps other writes out until then, so each row counts once).
INSERT INTO list_counts (client_id, list, key, n)
SELECT r.client_id, k.list, k.key, count(*) FROM "transactions" r CROSS JOIN LATERAL (VALUES ('transactions', jsonb_build_object('walletId', r.wallet_id)::text)) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;--> statement-breakpoint
CREATE FUNCTION "list_count_delta_payment_intents"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO list_count_deltas (client_id, list, key, n)
    SELECT r.client_id, k.list, k.key, count(*) FROM list_count_new r CROSS JOIN LATERAL (VALUES ('payment_intents', jsonb_build_object('status', r.status, 'initiator', r.initiator, 'paymentMethod', r.payment_method)::text)) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO list_count_deltas (client_id, list, key, n)
    SELECT r.client_id, k.list, k.key, sum(r.n) FROM (
      SELECT o.client_id, o.status, o.initiator, o.payment_method, -1 AS n FROM list_count_old o JOIN list_count_new x ON x.id = o.id WHERE (o.client_id, o.status, o.initiator, o.payment_method) IS DISTINCT FROM (x.client_id, x.status, x.initiator, x.payment_method)
      UNION ALL
      SELECT x.client_id, x.status, x.initiator, x.payment_method, 1 FROM list_count_old o JOIN list_count_new x ON x.id = o.id WHERE (o.client_id, o.status, o.initiator, o.payment_method) IS DISTINCT FROM (x.client_id, x.status, x.initiator, x.payment_method)
    ) r CROSS JOIN LATERAL (VALUES ('payment_intents', jsonb_build_object('status', r.status, 'initiator', r.initiator, 'paymentMethod', r.payment_method)::text)) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3 HAVING sum(r.n) <> 0;
  ELSE
    INSERT INTO list_count_deltas (client_id, list, key, n)
    SELECT r.client_id, k.list, k.key, -count(*) FROM list_count_old r CROSS JOIN LATERAL (VALUES ('payment_intents', jsonb_build_object('status', r.status, 'initiator', r.initiator, 'paymentMethod', r.payment_method)::text)) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "list_count_insert" AFTER INSERT ON "payment_intents"
  REFERENCING NEW TABLE AS list_count_new
  FOR EACH STATEMENT EXECUTE FUNCTION "list_count_delta_payment_intents"();--> statement-breakpoint
CREATE TRIGGER "list_count_update" AFTER UPDATE ON "payment_intents"
  REFERENCING OLD TABLE AS list_count_old NEW TABLE AS list_count_new
  FOR EACH STATEMENT EXECUTE FUNCTION "list_count_delta_payment_intents"();--> statement-breakpoint
CREATE TRIGGER "list_count_delete" AFTER DELETE ON "payment_intents"
  REFERENCING OLD TABLE AS list_count_old
  FOR EACH STATEMENT EXECUTE FUNCTION "list_count_delta_payment_intents"();--> statement-breakpoint
-- The payment_intents there are already, counted the way the trigger counts them (the triggers' lock, held
-- until the migrations commit, keeps other writes out until then, so each row counts once).
INSERT INTO list_counts (client_id, list, key, n)
SELECT r.client_id, k.list, k.key, count(*) FROM "payment_intents" r CROSS JOIN LATERAL (VALUES ('payment_intents', jsonb_build_object('status', r.status, 'initiator', r.initiator, 'paymentMethod', r.payment_method)::text)) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;--> statement-breakpoint
CREATE FUNCTION "list_count_delta_payments"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO list_count_deltas (client_id, list, key, n)
    SELECT r.client_id, k.list, k.key, count(*) FROM list_count_new r CROSS JOIN LATERAL (VALUES ('payments', jsonb_build_object('status', r.status)::text), ('payments/channel=' || r.channel, jsonb_build_object('status', r.status)::text)) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO list_count_deltas (client_id, list, key, n)
    SELECT r.client_id, k.list, k.key, sum(r.n) FROM (
      SELECT o.client_id, o.status, o.channel, -1 AS n FROM list_count_old o JOIN list_count_new x ON x.id = o.id WHERE (o.client_id, o.status, o.channel) IS DISTINCT FROM (x.client_id, x.status, x.channel)
      UNION ALL
      SELECT x.client_id, x.status, x.channel, 1 FROM list_count_old o JOIN list_count_new x ON x.id = o.id WHERE (o.client_id, o.status, o.channel) IS DISTINCT FROM (x.client_id, x.status, x.channel)
    ) r CROSS JOIN LATERAL (VALUES ('payments', jsonb_build_object('status', r.status)::text), ('payments/channel=' || r.channel, jsonb_build_object('status', r.status)::text)) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3 HAVING sum(r.n) <> 0;
  ELSE
    INSERT INTO list_count_deltas (client_id, list, key, n)
    SELECT r.client_id, k.list, k.key, -count(*) FROM list_count_old r CROSS JOIN LATERAL (VALUES ('payments', jsonb_build_object('status', r.status)::text), ('payments/channel=' || r.channel, jsonb_build_object('status', r.status)::text)) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "list_count_insert" AFTER INSERT ON "payments"
  REFERENCING NEW TABLE AS list_count_new
  FOR EACH STATEMENT EXECUTE FUNCTION "list_count_delta_payments"();--> statement-breakpoint
CREATE TRIGGER "list_count_update" AFTER UPDATE ON "payments"
  REFERENCING OLD TABLE AS list_count_old NEW TABLE AS list_count_new
  FOR EACH STATEMENT EXECUTE FUNCTION "list_count_delta_payments"();--> statement-breakpoint
CREATE TRIGGER "list_count_delete" AFTER DELETE ON "payments"
  REFERENCING OLD TABLE AS list_count_old
  FOR EACH STATEMENT EXECUTE FUNCTION "list_count_delta_payments"();--> statement-breakpoint
-- The payments there are already, counted the way the trigger counts them (the triggers' lock, held
-- until the migrations commit, keeps other writes out until then, so each row counts once).
INSERT INTO list_counts (client_id, list, key, n)
SELECT r.client_id, k.list, k.key, count(*) FROM "payments" r CROSS JOIN LATERAL (VALUES ('payments', jsonb_build_object('status', r.status)::text), ('payments/channel=' || r.channel, jsonb_build_object('status', r.status)::text)) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;--> statement-breakpoint
CREATE FUNCTION "list_count_delta_events"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO list_count_deltas (client_id, list, key, n)
    SELECT r.client_id, k.list, k.key, count(*) FROM list_count_new r CROSS JOIN LATERAL (VALUES ('events', jsonb_build_object('topic', r.topic)::text)) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;
  ELSE
    INSERT INTO list_count_deltas (client_id, list, key, n)
    SELECT r.client_id, k.list, k.key, -count(*) FROM list_count_old r CROSS JOIN LATERAL (VALUES ('events', jsonb_build_object('topic', r.topic)::text)) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "list_count_insert" AFTER INSERT ON "events"
  REFERENCING NEW TABLE AS list_count_new
  FOR EACH STATEMENT EXECUTE FUNCTION "list_count_delta_events"();--> statement-breakpoint
CREATE TRIGGER "list_count_delete" AFTER DELETE ON "events"
  REFERENCING OLD TABLE AS list_count_old
  FOR EACH STATEMENT EXECUTE FUNCTION "list_count_delta_events"();--> statement-breakpoint
-- The events there are already, counted the way the trigger counts them (the triggers' lock, held
-- until the migrations commit, keeps other writes out until then, so each row counts once).
INSERT INTO list_counts (client_id, list, key, n)
SELECT r.client_id, k.list, k.key, count(*) FROM "events" r CROSS JOIN LATERAL (VALUES ('events', jsonb_build_object('topic', r.topic)::text)) k(list, key) WHERE k.list IS NOT NULL GROUP BY 1, 2, 3;--> statement-breakpoint
-- Dropping a week of events (migration 0020's drop_event_partitions) subtracts its events from
-- the totals in the same transaction, counted the way the events trigger counts them.
CREATE OR REPLACE FUNCTION "drop_event_partitions"("p_week" date) RETURNS integer
  LANGUAGE plpgsql
  AS $$
  DECLARE
    suffix text := '_p' || to_char(p_week, 'YYYYMMDD');
    kept integer;
  BEGIN
    IF to_regclass('events' || suffix) IS NULL THEN RETURN 0; END IF;
    EXECUTE format('LOCK TABLE %I, %I, %I IN ACCESS EXCLUSIVE MODE', 'events' || suffix, 'event_deliveries' || suffix, 'delivery_attempts' || suffix);
    EXECUTE format('ALTER TABLE "delivery_attempts" DETACH PARTITION %I', 'delivery_attempts' || suffix);
    EXECUTE format('ALTER TABLE "event_deliveries" DETACH PARTITION %I', 'event_deliveries' || suffix);
    EXECUTE format('ALTER TABLE "events" DETACH PARTITION %I', 'events' || suffix);
    -- The week's events leave the list totals (no delete trigger fires for a detached partition);
    -- the kept ones, inserted again below, come back through the insert trigger.
    EXECUTE format('INSERT INTO list_count_deltas (client_id, list, key, n) SELECT client_id, ''events'', jsonb_build_object(''topic'', topic)::text, -count(*) FROM %I GROUP BY 1, 3', 'events' || suffix);
    EXECUTE format('CREATE TEMP TABLE "kept_events" ON COMMIT DROP AS SELECT DISTINCT event_id AS id FROM %I WHERE state = ''pending''', 'event_deliveries' || suffix);
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
